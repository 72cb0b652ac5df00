"""The package type-checks: mypy over ``toolscript/`` with the repository's ``mypy.ini``.

mypy is a test-only dependency (tests/requirements.txt); toolscript itself stays stdlib-only.
The check runs as Python 3.9 code (``python_version = 3.9`` in mypy.ini), whatever
interpreter runs the tests. Without mypy installed the test skips (fails under
``TOOLSCRIPT_REQUIRE_PEERS=1``, as ``make test`` runs it).
"""

import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, missing_prerequisite

MYPY_CONFIG = os.path.join(REPO_ROOT, "mypy.ini")


def run_mypy() -> "subprocess.CompletedProcess[str]":
    """``python -m mypy`` from the repository root with mypy.ini; no cache left in the checkout."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", MYPY_CONFIG, "--cache-dir", os.devnull],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
    )


def test_mypy_config_checks_the_package_as_python_39():
    with open(MYPY_CONFIG, encoding="utf-8") as f:
        lines = [line.split("#")[0].strip() for line in f]
    assert "python_version = 3.9" in lines and "files = toolscript/" in lines
    # Nothing is switched off wholesale: no ignore_errors, no ignore_missing_imports.
    assert not [line for line in lines if line.startswith(("ignore_errors", "ignore_missing_imports"))]


@pytest.mark.timeout(300)
def test_package_type_checks():
    try:
        import mypy  # noqa: F401
    except ImportError:
        missing_prerequisite("mypy is not installed (pip install -r tests/requirements.txt)")
    result = run_mypy()
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert result.returncode == 0 and not errors, (
        f"mypy found {len(errors)} error(s) in toolscript/:\n" + "\n".join(errors or [result.stdout, result.stderr])
    )
