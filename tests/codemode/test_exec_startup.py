"""What ``exec`` skips to start fast, and that skipping it loses nothing.

- the kernel probe is kept per boot in the state dir (no ctypes in exec's own process);
- under Landlock ABI >= 6 no namespaces are probed or created (Landlock scopes signals itself);
- started directly, the child sets its own parent-death signal (``confine.apply``'s ``parentPid``),
  so exec starts it without a ``preexec_fn``.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, Output
from toolscript.codemode import process, sandbox

CODEMODE = os.path.join(REPO_ROOT, "toolscript", "codemode")
PR_GET_PDEATHSIG = 2
LINUX = sys.platform.startswith("linux")


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "state").mkdir(mode=0o700)
    return tmp_path / "state"


@pytest.mark.skipif(not LINUX, reason="the probe cache is keyed by Linux's boot id")
def test_the_kernel_probe_is_kept_for_this_boot_and_read_back(state_dir):
    first = process._probe_this_boot()
    cache = state_dir / process.PROBE_CACHE
    key, abi, seccomp = cache.read_text().splitlines()
    assert key == process._boot_key() and int(abi) == first["landlockAbi"] and seccomp == str(int(first["seccomp"]))
    # What is read back is the cache (a value no kernel reports proves it), not a new probe.
    cache.write_text(f"{key}\n99\n1\n")
    assert process._probe_this_boot() == {"landlockAbi": 99, "seccomp": True, "arch": os.uname().machine}


@pytest.mark.skipif(not LINUX, reason="the probe cache is keyed by Linux's boot id")
@pytest.mark.parametrize("content", ["another-boot 1.0 x86_64\n99\n1\n", "garbage", "", "\x00\xff" * 300])
def test_a_cache_from_another_boot_or_a_broken_one_is_probed_again(state_dir, content):
    real = process._probe_kernel()
    (state_dir / process.PROBE_CACHE).write_bytes(content.encode("utf-8", "surrogateescape"))
    assert process._probe_this_boot() == real
    assert (state_dir / process.PROBE_CACHE).read_text().splitlines()[0] == process._boot_key()


def test_the_probe_does_not_create_the_state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tmp_path / "absent"))
    assert process._probe_this_boot() == process._probe_kernel()
    assert not (tmp_path / "absent").exists()  # doctor probes too, and doctor only looks


def test_an_unwritable_state_dir_still_probes(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(blocker / "state"))
    assert process._probe_this_boot() == process._probe_kernel()


def scoped() -> bool:
    probe = process.kernel_probe()
    return bool(probe["seccomp"]) and int(probe["landlockAbi"]) >= sandbox.SCOPE_ABI


@pytest.mark.skipif(not LINUX, reason="Landlock is Linux's")
def test_under_scoped_landlock_no_namespace_is_probed_or_used(monkeypatch):
    if not scoped():
        pytest.skip(f"this kernel's Landlock ABI is below {sandbox.SCOPE_ABI}: the namespaces are still used")
    monkeypatch.delenv(sandbox.LAYER_ENV, raising=False)
    monkeypatch.setattr(sandbox, "_NAMESPACE_PREFIXES", {})
    out, err = Output(), Output()
    result = sandbox.run("import os; print(os.getpid() > 2)", stdout=out, stderr=err)
    assert (result.exit_code, out.text) == (0, "True\n"), err.text  # a host PID: no PID namespace
    assert "namespace" not in result.mode and result.mode.startswith("landlock(")
    assert sandbox._NAMESPACE_PREFIXES == {}  # unshare was never run to probe
    # Asked for explicitly, they still run (and are probed then).
    assert "namespace(user,mount,pid" in sandbox.run("pass", stdout=Output(), stderr=Output(), namespaces=True).mode


def confine_child(policy, code):
    child = (
        "import json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import confine\n"
        "report = confine.apply(json.loads(sys.argv[2]))\n"
        "print(json.dumps(report), flush=True)\n"
        "exec(sys.argv[3])\n"
    )
    argv = [sys.executable, "-I", "-S", "-c", child, CODEMODE, json.dumps(policy), code]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})


READ_PDEATHSIG = (
    "import ctypes\n"
    "value = ctypes.c_int()\n"
    f"ctypes.CDLL(None).prctl({PR_GET_PDEATHSIG}, ctypes.byref(value), 0, 0, 0)\n"
    "print(value.value)\n"
)


@pytest.mark.skipif(not LINUX, reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_sets_its_own_parent_death_signal():
    policy = {"landlock": False, "seccomp": False, "dropCapabilities": False, "parentPid": os.getpid()}
    proc = confine_child(policy, READ_PDEATHSIG)
    first, _, rest = proc.stdout.partition("\n")
    assert json.loads(first)["parentDeath"] is True, proc.stderr
    assert rest.strip() == str(int(signal.SIGKILL))
    # Without parentPid nothing is set: the caller's preexec_fn does it then.
    proc = confine_child({"landlock": False, "seccomp": False, "dropCapabilities": False}, READ_PDEATHSIG)
    assert proc.stdout.splitlines()[-1] == "0"


@pytest.mark.skipif(not LINUX, reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_whose_parent_is_already_gone_kills_itself():
    """The race the check closes: the parent died before the prctl (here: a parentPid that is not the parent)."""
    policy = {"landlock": False, "seccomp": False, "dropCapabilities": False, "parentPid": os.getpid() + 1_000_000}
    proc = confine_child(policy, "print('ran')")
    assert proc.returncode == -signal.SIGKILL and "ran" not in proc.stdout


@pytest.mark.skipif(not LINUX, reason="the vfork start is Linux's kernel layer")
def test_exec_starts_a_kernel_confined_child_without_a_preexec_fn(monkeypatch):
    if not (process.kernel_probe()["landlockAbi"] and process.kernel_probe()["seccomp"]):
        pytest.skip("no kernel layer here: the child cannot set its own parent-death signal")
    monkeypatch.delenv(sandbox.LAYER_ENV, raising=False)
    seen = []
    real = subprocess.Popen.__init__

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("preexec_fn"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    out = Output()
    result = sandbox.run("print('ok')", stdout=out, stderr=Output(), namespaces=False)
    assert out.text == "ok\n" and result.exit_code == 0
    assert seen and seen[-1] is None
