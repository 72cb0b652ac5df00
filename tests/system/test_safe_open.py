"""toolscript.system.safe_open: opening beneath a directory descriptor, following no symlink, never leaving it.

Every behaviour is checked twice: through openat2 (where this kernel has it)
and through the component walk that stands in for it elsewhere, each made the
only mechanism for its run.  The fallback from openat2 to the walk (ENOSYS from
an old kernel, EPERM from a seccomp filter) is checked with a stand-in syscall.
"""

import ctypes
import errno
import os
import stat

import pytest

from safe_open_mechanisms import mechanism, openat2_works  # noqa: F401  # mechanism: a fixture
from toolscript.system import safe_open


@pytest.fixture
def tree(tmp_path):
    """root/{a/b/f.txt, up -> .., out -> <outside>, file-link -> a/b/f.txt, dir-link -> a}; yields root's descriptor."""
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside")
    os.symlink("..", str(root / "up"))
    os.symlink(str(outside), str(root / "out"))
    os.symlink("a/b/f.txt", str(root / "file-link"))
    os.symlink("a", str(root / "dir-link"))
    fd = safe_open.open_directory(str(root))
    try:
        yield fd
    finally:
        os.close(fd)


def _read(dir_fd: int, rel: str) -> str:
    fd = safe_open.open_beneath(dir_fd, rel, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        return handle.read().decode()


def _errno(dir_fd: int, rel: str, flags: int = os.O_RDONLY) -> int:
    with pytest.raises(OSError) as info:
        fd = safe_open.open_beneath(dir_fd, rel, flags)
        os.close(fd)  # only reached when it wrongly succeeded
    return info.value.errno


def test_a_path_of_real_directories_opens(tree, mechanism):
    assert _read(tree, "a/b/f.txt") == "inside"
    assert _read(tree, "./a//b/./f.txt") == "inside"
    for rel in (".", "", "a", "a/b/"):
        fd = safe_open.open_beneath(tree, rel, safe_open.READ_DIRECTORY)
        try:
            assert stat.S_ISDIR(os.fstat(fd).st_mode)
        finally:
            os.close(fd)


@pytest.mark.parametrize("rel", ["file-link", "dir-link/b/f.txt", "out/f.txt", "out", "up/outside/f.txt", "a/../out/f.txt"])
def test_a_symlink_anywhere_on_the_path_is_refused(tree, mechanism, rel):
    expected = errno.EXDEV if ".." in rel.split("/") else errno.ELOOP
    assert _errno(tree, rel) == expected
    assert _errno(tree, rel, safe_open.READ_DIRECTORY) == expected


@pytest.mark.parametrize("rel", ["..", "../outside/f.txt", "a/../../outside/f.txt", "a/b/../f.txt"])
def test_dotdot_is_refused_even_when_it_would_stay_inside(tree, mechanism, rel):
    assert _errno(tree, rel) == errno.EXDEV


def test_an_absolute_path_is_refused(tree, mechanism):
    assert _errno(tree, "/etc/passwd") == errno.EXDEV


@pytest.mark.skipif(not hasattr(os, "O_PATH"), reason="O_PATH is Linux's")
def test_o_path_does_not_open_a_symlink_itself(tree, mechanism):
    assert _errno(tree, "file-link", os.O_PATH) == errno.ELOOP
    assert _errno(tree, "a/../file-link", os.O_PATH) == errno.EXDEV


def test_creating_is_refused(tree, mechanism):
    with pytest.raises(ValueError):
        safe_open.open_beneath(tree, "new.txt", os.O_WRONLY | os.O_CREAT)


def test_missing_and_not_a_directory(tree, mechanism):
    assert _errno(tree, "a/nope") == errno.ENOENT
    assert _errno(tree, "a/b/f.txt/x") == errno.ENOTDIR
    assert _errno(tree, "a/b/f.txt", safe_open.READ_DIRECTORY) == errno.ENOTDIR


def test_the_descriptor_is_close_on_exec(tree, mechanism):
    fd = safe_open.open_beneath(tree, "a/b/f.txt", os.O_RDONLY)
    try:
        assert not os.get_inheritable(fd)
    finally:
        os.close(fd)


def test_the_walk_leaves_no_descriptor_open(tree, monkeypatch):
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd to count descriptors")
    monkeypatch.setattr(safe_open, "use_openat2", False)
    before = len(os.listdir("/proc/self/fd"))
    for rel in ["a/b/f.txt", "a/b/nope", "dir-link/b", "a/b/f.txt/x", "out/f.txt"] * 20:
        try:
            os.close(safe_open.open_beneath(tree, rel, os.O_RDONLY))
        except OSError:
            pass
    assert len(os.listdir("/proc/self/fd")) == before


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _stand_in_syscall(monkeypatch, code: int):
    """Make openat2 fail with ``code`` as an old kernel or a seccomp filter would; the calls made."""
    calls = []

    def syscall(*args):
        calls.append(args)
        ctypes.set_errno(code)
        return -1

    monkeypatch.setattr(safe_open, "_syscall", (ctypes, syscall, 437, _OpenHow))
    return calls


def test_enosys_falls_back_to_the_walk_for_good(tree, monkeypatch):
    calls = _stand_in_syscall(monkeypatch, errno.ENOSYS)
    assert _read(tree, "a/b/f.txt") == "inside"
    assert _errno(tree, "out/f.txt") == errno.ELOOP
    assert len(calls) == 1  # an old kernel does not grow the call later: asked once
    assert safe_open._syscall is False
    assert not openat2_works()


def test_eperm_from_a_seccomp_filter_falls_back_to_the_walk(tree, monkeypatch):
    calls = _stand_in_syscall(monkeypatch, errno.EPERM)
    assert _read(tree, "a/b/f.txt") == "inside"
    assert _errno(tree, "dir-link/b/f.txt") == errno.ELOOP
    assert len(calls) == 2  # the walk answered both, and the syscall is still tried
