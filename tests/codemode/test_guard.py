"""The runtime guard (``toolscript/codemode/guard.py``) as the child runs it: its watchdog and what reaches it."""

import pkgutil
import subprocess
import sys
import time

import pytest

from conftest import Output
from toolscript.codemode import sandbox


@pytest.mark.timeout(60)
def test_the_guard_ends_the_script_at_its_deadline_without_any_parent(tmp_path):
    """The guard's watchdog: the wall-clock limit that holds when exec is gone (and on macOS)."""
    lib, work = tmp_path / "lib", tmp_path / "work"
    lib.mkdir()
    work.mkdir()
    guard = lib / sandbox.GUARD_NAME
    guard.write_bytes(pkgutil.get_data("toolscript.codemode", "guard.py"))
    code = lib / sandbox.CODE_NAME
    code.write_text("import time, signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('started', flush=True)\ntime.sleep(60)\n")
    limits = "30,0,0,0,0,1000"  # cpu, memory, fsize, nofile, nproc, wall-clock ms
    argv = [sys.executable, "-I", "-S", "-B", "-u", str(guard), str(lib), str(work), str(code), "<exec>", "", "", limits]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=str(work), env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    elapsed = time.monotonic() - started
    assert proc.returncode == 124 and proc.stdout == "started\n"
    assert "ran past its wall-clock limit (1 s)" in proc.stderr
    assert elapsed < 15  # 1 s expected: proves the watchdog fired, not the 60 s sleep


def test_scripts_cannot_reach_the_watchdogs_frame():
    for what in ["_current_frames", "_current_exceptions"]:
        if not hasattr(sys, what):
            continue  # sys._current_exceptions is new in 3.12
        out, err = Output(), Output()
        result = sandbox.run(f"import sys\nsys.{what}()", stdout=out, stderr=err, namespaces=False)
        assert result.exit_code == 1 and "toolscript sandbox:" in err.text and "watchdog" in err.text, what
