"""Storing a fact on purpose (``memory.remember``), and the memory tools when a project turned memory off.

The model keeps a fact with the ``memory.remember`` built-in tool; the user
with ``toolscript memory add`` (tests/cli/test_memory.py).  Either way the fact
is a note of the project, redacted like every memory, stored once.
"""

import json

import pytest

from conftest import git_project
from toolscript.memory.store import open_store
from toolscript.memory.tools import memory_specs
from toolscript.tools.contract import ToolCall, ToolContext, ToolFailure, execute


@pytest.fixture
def project(scratch_dirs):
    return git_project(scratch_dirs / "app")


def _call(name, args, project):
    spec = next(spec for spec in memory_specs() if spec.name == name)
    return spec.handler(args, ToolContext(workspace_roots=[str(project)]))


def _notes(project):
    with open_store() as db:
        return db.recent(project=str(project), limit=20)


def test_remember_stores_a_note_of_this_project_that_search_finds(project):
    kept = _call("memory.remember", {"text": "Releases are tagged vX.Y.Z from main", "files": ["RELEASING.md"]}, project)
    assert kept["stored"] is True and isinstance(kept["id"], int) and kept["redacted"] is False
    [note] = _notes(project)
    assert (note.kind, note.tool, note.files, note.content) == ("note", "remember", ["RELEASING.md"],
                                                               "Releases are tagged vX.Y.Z from main")
    found = _call("memory.search", {"query": "release tags"}, project)
    assert [r["id"] for r in found["results"]] == [kept["id"]]


def test_remember_redacts_a_secret_and_keeps_the_same_fact_once(project):
    text = "Deploys use the token ghp_abcdefghijklmnopqrstuvwxyz0123456789 from the vault"
    first = _call("memory.remember", {"text": text}, project)
    second = _call("memory.remember", {"text": text}, project)
    assert first["redacted"] is True and "redacted" in first["note"]
    assert second == dict(first, stored=False, note=second["note"]) and "already" in second["note"]
    [note] = _notes(project)
    assert "ghp_abcdef" not in note.content and "vault" in note.content


def test_remember_with_only_private_text_stores_nothing_and_says_so(project):
    with pytest.raises(ToolFailure, match="nothing to remember"):
        _call("memory.remember", {"text": "<private>my home address</private>"}, project)
    assert _notes(project) == []


def test_remember_refuses_unknown_arguments_like_every_builtin(project):
    spec = next(spec for spec in memory_specs() if spec.name == "memory.remember")
    result = execute({spec.name: spec}, ToolCall("memory.remember", {"fact": "x"}), ToolContext(workspace_roots=[str(project)]))
    assert not result.ok and result.error["code"] == "invalid_args"


def test_every_memory_tool_fails_clearly_when_the_project_turned_memory_off(project):
    _call("memory.remember", {"text": "Releases are tagged vX.Y.Z from main"}, project)
    (project / ".toolscript.json").write_text(json.dumps({"memory": {"enabled": False}}))  # not trusted: off still counts
    for name, args in (("memory.search", {"query": "release"}), ("memory.timeline", {"id": 1}), ("memory.get", {"ids": [1]}),
                       ("memory.remember", {"text": "another fact"})):
        with pytest.raises(ToolFailure, match="memory is turned off for this project") as failed:
            _call(name, args, project)
        assert '"enabled": false' in str(failed.value)
    assert len(_notes(project)) == 1
