"""``-v``: what a command did, on stderr and in the rotating log file ``<data dir>/logs/cli.log``.

The file keeps what ``-v`` showed, for after the terminal is gone: rotated at
10 MB, files left unchanged for 7 days removed.  It says what was done, never
what was asked (a prompt or a query may hold what memory would redact).
Commands run as ``python -m toolscript`` with their own HOME and data dir.
"""

import logging
import os
import stat
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT
from toolscript import log


@pytest.fixture
def world(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / ".git").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLSCRIPT_", "ANTHROPIC_", "CLAUDE_", "DEBUG"))}
    env.update(HOME=str(home), TOOLSCRIPT_STATE_DIR=str(tmp_path / "state"), TOOLSCRIPT_DATA_DIR=str(tmp_path / "data"),
               PYTHONPATH=REPO_ROOT)

    class World:
        data, logs = tmp_path / "data", tmp_path / "data" / "logs"

        def cli(self, *args, env=None):
            return subprocess.run([sys.executable, "-m", "toolscript", *map(str, args)], capture_output=True, text=True,
                                  timeout=60, env=dict(env_base, **(env or {})), cwd=str(project))

    env_base = env
    return World()


def test_verbose_memory_commands_say_what_they_did(world):
    assert world.cli("memory", "capture", "--content", "Raised the HDBSCAN eps to 0.5", "--session-id", "old").returncode == 0
    runs = {
        "memory inject": ["memory", "inject", "--query", "hdbscan eps", "--session-id", "new"],
        "memory brief": ["memory", "brief", "--query", "hdbscan eps", "--session-id", "new"],
        "memory search": ["memory", "search", "hdbscan", "eps"],
    }
    for what, argv in runs.items():
        quiet = world.cli(*argv)
        assert quiet.returncode == 0 and quiet.stderr == "", (what, quiet.stderr)
        loud = world.cli("-v", *argv)
        assert loud.returncode == 0 and loud.stdout == quiet.stdout, (what, loud.stderr)
        said = [line for line in loud.stderr.splitlines() if line.startswith(f"toolscript: INFO: {what}:")]
        assert said, (what, loud.stderr)
        assert "hdbscan" not in loud.stderr.lower(), loud.stderr  # what was done, not what was asked
    text = (world.logs / "cli.log").read_text()
    for what in runs:
        assert f" INFO toolscript.memory: {what}:" in text, text
    assert "hdbscan" not in text.lower()


def test_verbose_on_any_command_writes_the_private_rotating_log(world):
    quiet = world.cli("config", "validate")
    assert quiet.returncode == 0 and not world.logs.exists()  # no -v: no file
    loud = world.cli("-v", "config", "validate")
    assert loud.returncode == 0, loud.stderr
    path = world.logs / "cli.log"
    assert "toolscript config validate" in path.read_text()  # the command it ran, so interleaved runs can be told apart
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(world.logs.stat().st_mode) == 0o700
    status = world.cli("-v", "status")
    assert status.returncode == 0 and "toolscript status" in path.read_text()


def test_the_log_rotates_at_its_size_and_old_files_go(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    week_old = time.time() - 8 * 86400
    for name in ("cli.log.2", "cli.log.3", "other.txt"):
        (folder / name).write_text("old\n")
        os.utime(folder / name, (week_old, week_old))
    (folder / "cli.log.1").write_text("recent\n")
    logger = logging.getLogger(log.LOGGER_NAME)
    level = logger.level
    handler = log.log_to_file(str(folder), "toolscript test", max_bytes=400)
    try:
        assert handler is not None and log.log_to_file(str(folder), "toolscript test", max_bytes=400) is handler  # once per process
        assert not (folder / "cli.log.2").exists() and not (folder / "cli.log.3").exists()
        assert (folder / "other.txt").exists() and (folder / "cli.log.1").exists()  # not ours, and recent: kept
        logger.setLevel(logging.INFO)
        for i in range(20):
            log.get("test").info("line %d of the rotation test", i)
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)
    assert (folder / "cli.log").stat().st_size <= 400
    assert "line 19 of" in (folder / "cli.log").read_text() and "line 0 of" not in (folder / "cli.log").read_text()
    assert stat.S_IMODE((folder / "cli.log.1").stat().st_mode) == 0o600  # rotated files stay private
