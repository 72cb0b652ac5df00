"""tools/ and system/ sit just above the foundations: nothing in them imports a package built on them.

Lazy imports inside functions count too: memory, the gateway and the rest
build on the tool contract, so the contract's layer must not reach up to them.
"""

import ast
import glob
import os

import pytest

from conftest import REPO_ROOT

PACKAGE = os.path.join(REPO_ROOT, "toolscript")
FOUNDATIONS = {"toolscript", "toolscript.log", "toolscript.errors", "toolscript.paths", "toolscript.http1"}
SAME_LAYER = ("toolscript.config", "toolscript.tools", "toolscript.system")


def imported(path: str):
    """(line, module) of every toolscript module ``path`` imports, at the top or inside a function."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "toolscript")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "toolscript":
            if node.module == "toolscript":
                yield from ((node.lineno, f"toolscript.{alias.name}") for alias in node.names)
            else:
                yield node.lineno, node.module


def allowed(module: str) -> bool:
    return module in FOUNDATIONS or any(module == layer or module.startswith(layer + ".") for layer in SAME_LAYER)


@pytest.mark.parametrize("package", ["tools", "system"])
def test_the_package_imports_only_foundations_config_tools_and_system(package):
    sources = sorted(glob.glob(os.path.join(PACKAGE, package, "*.py")))
    assert sources
    upward = [f"{os.path.relpath(path, REPO_ROOT)}:{line} imports {module}"
              for path in sources for line, module in imported(path) if not allowed(module)]
    assert upward == []


def test_the_check_sees_a_lazy_import_upward(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from toolscript import log\n\ndef specs():\n    from toolscript.memory.tools import memory_specs\n    return memory_specs()\n")
    assert [module for _, module in imported(str(planted)) if not allowed(module)] == ["toolscript.memory.tools"]
