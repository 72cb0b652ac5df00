"""toolscript.system.cgroups: the groups exec and the gateway make, and their sweep."""

import os
import subprocess
import sys


def test_cgroup_sweep_removes_only_empty_groups_whose_owner_is_gone(tmp_path):
    from toolscript.system import cgroups

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = [f"toolscript-exec-{dead.pid}-0a1b2c3d", f"toolscript-server-{dead.pid}-ff"]
    kept = [f"toolscript-exec-{os.getpid()}-0a1b2c3d", f"toolscript-exec-{dead.pid}-notHEX", "user.slice", f"toolscript-other-{dead.pid}-ab"]
    for name in gone + kept:
        (tmp_path / name).mkdir()
    busy = tmp_path / f"toolscript-exec-{dead.pid}-beef"  # still holds something: rmdir refuses, as with a cgroup with members
    busy.mkdir()
    (busy / "member").write_text("x")
    removed = cgroups.sweep(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted(gone)
    assert sorted(os.listdir(tmp_path)) == sorted(kept + [busy.name])
