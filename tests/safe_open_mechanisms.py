"""The two ways ``toolscript.system.safe_open`` opens beneath a directory, each made the only way for a test.

``from safe_open_mechanisms import mechanism`` gives a test file the ``mechanism``
fixture: each test using it runs once with openat2 (skipped where this kernel or
its seccomp filter has none) and once with the component walk.
"""

import os

import pytest

from toolscript.system import safe_open


def openat2_works() -> bool:
    """True when this kernel and process let ``open_beneath`` use openat2 (not the walk)."""
    here = os.open("/", safe_open.READ_DIRECTORY | os.O_CLOEXEC)
    try:
        opened = safe_open._openat2(here, ".", safe_open.READ_DIRECTORY | os.O_CLOEXEC)
    finally:
        os.close(here)
    if opened is None:
        return False
    os.close(opened)
    return True


@pytest.fixture(params=["openat2", "walk"])
def mechanism(request, monkeypatch):
    """Run the test once with openat2 and once with the component walk (each made the only way)."""

    def must_not_run(*args, **kwargs):
        raise AssertionError(f"the {request.param} test reached the other mechanism")

    if request.param == "openat2":
        if not openat2_works():
            pytest.skip("this kernel (or its seccomp filter) has no openat2")
        monkeypatch.setattr(safe_open, "_walk", must_not_run)
    else:
        monkeypatch.setattr(safe_open, "use_openat2", False)
        monkeypatch.setattr(safe_open, "_openat2", must_not_run)
    return request.param
