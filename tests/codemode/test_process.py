"""What both runners share (``toolscript/codemode/process.py``): dying with exec, sweeping leftover temp dirs."""

import ast
import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

CODEMODE = os.path.join(REPO_ROOT, "toolscript", "codemode")
# Dying with exec is Linux-only (PR_SET_PDEATHSIG).
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dying with the parent is Linux-only (PR_SET_PDEATHSIG)")


@linux_only
def test_exec_sets_its_runner_to_die_with_it():
    """The preexec hook sets PR_SET_PDEATHSIG=SIGKILL (read back from /proc: field 'PDeathSig' is not there, so ask prctl)."""
    from toolscript.codemode import process

    hook = process.die_with_parent()
    assert hook is not None
    code = (
        "import ctypes, signal\n"
        "libc = ctypes.CDLL(None)\n"
        "value = ctypes.c_int()\n"
        "libc.prctl(2, ctypes.byref(value), 0, 0, 0)\n"  # PR_GET_PDEATHSIG
        "print(value.value)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], preexec_fn=hook, capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == str(int(signal.SIGKILL)), out.stderr


def test_sweep_removes_only_our_dirs_whose_owner_is_gone(tmp_path):
    from toolscript.codemode import process

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = os.getppid()
    (tmp_path / f"toolscript-exec-{dead.pid}-abc123_x").mkdir()
    (tmp_path / f"toolscript-deno-{dead.pid}-abc123_y").mkdir()
    keep = [
        f"toolscript-exec-{live}-abc123_z",  # its owner lives
        f"toolscript-exec-{os.getpid()}-abc123_w",  # ours
        "toolscript-exec-abc123_v",  # no owner pid in the name: no owner to ask
        f"other-exec-{dead.pid}-abc123_u",  # not ours
    ]
    for name in keep:
        (tmp_path / name).mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "precious").write_text("x")
    os.symlink(str(target), str(tmp_path / f"toolscript-exec-{dead.pid}-link"))
    (tmp_path / f"toolscript-exec-{dead.pid}-file").write_text("not a dir")
    removed = process.sweep_temp_dirs(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted([f"toolscript-exec-{dead.pid}-abc123_x", f"toolscript-deno-{dead.pid}-abc123_y"])
    left = set(os.listdir(tmp_path))
    assert set(keep) <= left and (target / "precious").exists()
    assert f"toolscript-exec-{dead.pid}-link" in left and f"toolscript-exec-{dead.pid}-file" in left


def test_runners_use_no_private_name_of_another_module():
    """deno.py and sandbox.py share process.py's public functions, not each other's ``_helpers``."""
    offenders = []
    for name in ("deno.py", "sandbox.py", "process.py"):
        with open(os.path.join(CODEMODE, name), "rb") as f:
            tree = ast.parse(f.read())
        modules = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolscript") for alias in node.names}
        modules |= {(alias.asname or alias.name).split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names if alias.name.startswith("toolscript")}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules and node.attr.startswith("_") and not node.attr.startswith("__"):
                offenders.append(f"{name}: {node.value.id}.{node.attr}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolscript"):
                offenders += [f"{name}: from {node.module} import {a.name}" for a in node.names if a.name.startswith("_")]
    assert offenders == []
