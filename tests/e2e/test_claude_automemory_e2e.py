"""End to end: toolscript finds Claude Code's auto memory where the real ``claude`` CLI keeps it.

The CLI answers ``get_memory_dialog`` (the rows of its ``/memory`` dialog) on
its stream-json control channel without calling a model: the auto-memory
folder it uses for the working directory, whether auto memory is on, and the
memory files it lists.  Each case sets up a layout (a subdirectory of a
repository, a linked worktree, ``CLAUDE_CONFIG_DIR``, ``autoMemoryDirectory``,
a path long enough to be hashed, auto memory turned off) and checks that
``toolscript.memory.automemory`` agrees with the CLI.
"""

import json
import os
import subprocess

import pytest

from claude_scene import claude_binary
from toolscript.memory import automemory

ASK = ('{"type":"control_request","request_id":"init","request":{"subtype":"initialize"}}\n'
       '{"type":"control_request","request_id":"memory","request":{"subtype":"get_memory_dialog"}}\n')


def dialog(cwd, home, **extra):
    """The CLI's answer to get_memory_dialog in ``cwd``, run with ``home`` as HOME and ``extra`` in its environment."""
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", os.defpath), "ANTHROPIC_API_KEY": "test",
           "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    env.update({key: str(value) for key, value in extra.items()})
    proc = subprocess.Popen([claude_binary(), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                             "--verbose"], cwd=str(cwd), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(ASK)
        proc.stdin.flush()
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            response = message.get("response") or {}
            if message.get("type") == "control_response" and response.get("request_id") == "memory":
                assert response.get("subtype") == "success", message
                return response["response"]
        raise AssertionError("claude never answered get_memory_dialog: " + proc.stderr.read()[-2000:])
    finally:
        proc.kill()
        proc.wait(30)


def auto_folder(answer):
    [row] = [f for f in answer["folders"] if f["kind"] == "auto"]
    return row["path"].rstrip("/")


def git(*args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *map(str, args)], check=True, capture_output=True)


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.mark.timeout(300)
def test_the_folder_matches_the_cli_in_a_repository_a_worktree_and_a_long_path(tmp_path, home):
    repo = tmp_path / "repo_one.v2"
    (repo / "src").mkdir(parents=True)
    git("init", "-q", repo)
    git("-C", repo, "commit", "-q", "--allow-empty", "-m", "start")
    env = {"HOME": str(home)}
    answer = dialog(repo / "src", home)
    assert auto_folder(answer) == automemory.folder(str(repo / "src"), env)
    git("-C", repo, "worktree", "add", "-q", tmp_path / "feature")
    assert auto_folder(dialog(tmp_path / "feature", home)) == automemory.folder(str(tmp_path / "feature"), env) \
        == automemory.folder(str(repo), env)
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 9)
    deep.mkdir(parents=True)
    assert len(automemory.project_key(str(deep))) > 200
    assert auto_folder(dialog(deep, home)) == automemory.folder(str(deep), env)


@pytest.mark.timeout(300)
def test_the_folder_follows_claude_config_dir_and_auto_memory_directory(tmp_path, home):
    project = tmp_path / "project"
    project.mkdir()
    config = tmp_path / "config"
    config.mkdir()
    moved = dialog(project, home, CLAUDE_CONFIG_DIR=config)
    assert auto_folder(moved) == automemory.folder(str(project), {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config)})
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"autoMemoryDirectory": "~/notes/memory"}')
    assert auto_folder(dialog(project, home)) == automemory.folder(str(project), {"HOME": str(home)}) \
        == str(home / "notes" / "memory")


@pytest.mark.timeout(300)
def test_auto_memory_off_is_seen_as_the_cli_sees_it_and_the_index_comes_first(tmp_path, home):
    project = tmp_path / "project"
    project.mkdir()
    env = {"HOME": str(home)}
    folder = automemory.folder(str(project), env)
    os.makedirs(folder)
    with open(os.path.join(folder, "MEMORY.md"), "w") as f:
        f.write("- [Deploys](deploys.md): canary first\n")
    with open(os.path.join(folder, "deploys.md"), "w") as f:
        f.write("---\nname: deploys\ndescription: how deploys go\ntype: project\n---\n- Canary first\n")
    on = dialog(project, home)
    assert on["auto_memory"]["enabled"] is True and automemory.loads_index(str(project), env) is True
    assert [m["name"] for m in on["memories"]][0] == "MEMORY.md"
    assert sorted(m["name"] for m in on["memories"]) == sorted(automemory.folder_files(folder)[0])
    off = dialog(project, home, CLAUDE_CODE_DISABLE_AUTO_MEMORY=1)
    assert off["auto_memory"]["enabled"] is False
    assert automemory.loads_index(str(project), dict(env, CLAUDE_CODE_DISABLE_AUTO_MEMORY="1")) is False
    os.makedirs(home / ".claude", exist_ok=True)
    (home / ".claude" / "settings.json").write_text('{"autoMemoryEnabled": false}')
    assert dialog(project, home)["auto_memory"]["enabled"] is False
    assert automemory.loads_index(str(project), env) is False


@pytest.mark.timeout(300)
def test_a_prompt_gets_what_claude_code_did_not_load_and_never_what_it_did(tmp_path, pyz):
    """Claude Code puts MEMORY.md's head in the request; toolscript's hooks add the entry past it, not the head's.

    The plugin runs a copy of this checkout's zipapp, so the hooks are the code under test.
    """
    import shutil
    import sys

    from claude_scene import CLAUDE_TIMEOUT, PLUGIN_DIR, Scene
    from conftest import REPO_ROOT
    from fake_anthropic import FakeAnthropic

    plugin = str(tmp_path / "plugin")
    shutil.copytree(PLUGIN_DIR, plugin)
    shutil.copyfile(pyz, os.path.join(plugin, "bin", "toolscript.pyz"))
    scene = Scene(str(tmp_path / "scene"))
    folder = automemory.folder(scene.project, {"HOME": scene.home})
    os.makedirs(folder)
    filler = "".join(f"- unrelated fact number {i}\n" for i in range(200))
    with open(os.path.join(folder, "MEMORY.md"), "w") as f:
        f.write("# Memory\n\n- Canary deploys need the zephyr VPN up\n" + filler + "- Canary deploys run from the zephyr main branch only\n")
    imported = subprocess.run([sys.executable, "-m", "toolscript", "--json", "memory", "import", "--from-claude-code"],
                              env=dict(scene.env(), PYTHONPATH=REPO_ROOT), cwd=scene.project, capture_output=True, text=True,
                              timeout=60)
    assert imported.returncode == 0 and json.loads(imported.stdout)["added"] == 202, imported.stderr
    with FakeAnthropic([{"text": "Noted."}], log_path=scene.request_log) as api:
        proc = subprocess.run([claude_binary(), "-p", "how do canary deploys work with zephyr", "--model", "haiku",
                               "--output-format", "json", "--plugin-dir", plugin, "--debug-file", scene.debug_log],
                              env=scene.env(api.url), cwd=scene.project, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=CLAUDE_TIMEOUT)
        explain = scene.diagnostics(api, proc)
        assert proc.returncode == 0, explain
        conversation = [r for r in api.message_requests() if r["body"].get("stream") is True]
        assert conversation, explain
        body = json.dumps(conversation[0]["body"])
    assert body.count("need the zephyr VPN up") == 1, explain  # Claude Code loaded it; toolscript did not add it again
    assert "## Relevant Context" in body and body.count("from the zephyr main branch only") == 1, explain
