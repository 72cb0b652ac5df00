"""Calling the built-in tools in this process: a workspace root, its context, and reading results.

Shared by the tool contract's tests and the built-in tools' tests
(``from builtin_calls import ctx, root, run, ...``; ``root`` and ``ctx`` are fixtures).
"""

import os

import pytest

from toolscript.tools.builtin import builtin_specs
from toolscript.tools.contract import ToolCall, ToolContext, ToolResult, execute


@pytest.fixture
def root(tmp_path) -> str:
    """An empty workspace root, realpath'd as the CLI would pass it."""
    path = tmp_path / "root"
    path.mkdir()
    return os.path.realpath(str(path))


@pytest.fixture
def ctx(root) -> ToolContext:
    return ToolContext(workspace_roots=[root])


def write(path: str, content=b"") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def run(name: str, ctx: ToolContext, **args) -> ToolResult:
    return execute(builtin_specs(), ToolCall(name=name, args=args), ctx)


def ok_data(result: ToolResult):
    assert result.ok, result.error
    return result.data


def error_of(result: ToolResult):
    assert not result.ok, result.data
    return result.error["code"], result.error["message"]
