"""Open a path beneath a directory without following a symlink and without leaving the directory.

``open_beneath(dir_fd, rel, flags)`` guarantees that the file it opens is
reached from ``dir_fd`` by going down through real directories only: no
component of ``rel`` may be a symlink (``ELOOP``), and ``rel`` may be neither
absolute nor contain ``..`` (``EXDEV``).  Every step is taken relative to the
file descriptor of the directory before it, never by path string, so renaming
or swapping anything on the way while it runs can make the open fail, but can
never make it reach a file outside ``dir_fd``'s tree.  That is what a check of
``realpath()`` followed by ``open()`` cannot promise: between the two, a
directory that was checked can be replaced by a symlink to anywhere.

Where the kernel has it (Linux 5.6 and later), this is one ``openat2(2)`` call
with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS``, made
through ctypes.  Where it does not (an older kernel, a seccomp filter that
refuses the call, macOS), the same rule is kept by a walk: ``openat()`` one
component at a time with ``O_NOFOLLOW``, each relative to the previous one's
descriptor.  Mount points inside the tree are crossed by both (mounting needs
privilege the callers guard against elsewhere).

Callers that want symlinks inside a tree honoured resolve them first
(``os.path.realpath``), check the result, and open the resolved path with this:
a symlink that appears after the check is then refused instead of followed.
"""

import errno
import os
import stat
import sys
from typing import Any, List, Optional

# openat2(2)'s resolve flags (linux/openat2.h).
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
# The syscall number is 437 on x86_64 and aarch64 (newer syscalls share one number across most
# architectures, but only these two are relied on here; others use the walk).
_OPENAT2_SYSCALL = {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437}

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_PATH = getattr(os, "O_PATH", 0)
# A directory only passed through needs search permission, not read: O_PATH (Linux) asks for no more.
SEARCH_DIRECTORY = (_O_PATH or os.O_RDONLY) | _O_DIRECTORY
# A directory to list (os.scandir needs a readable descriptor).
READ_DIRECTORY = os.O_RDONLY | _O_DIRECTORY

# Set to False to force the walk (tests do, to cover it on kernels that have openat2).
use_openat2 = True
# The ctypes entry point, loaded on first use: None until then, False when there is none.
_syscall: Any = None


def open_directory(path: str) -> int:
    """A descriptor for the directory ``path`` (itself not a symlink), to pass to :func:`open_beneath`."""
    return os.open(path, SEARCH_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)


def open_beneath(dir_fd: int, rel: str, flags: int) -> int:
    """Open ``rel`` beneath the directory ``dir_fd`` with ``flags``, following no symlink; a new descriptor.

    Raises OSError: ``ELOOP`` when a component is a symlink, ``EXDEV`` when
    ``rel`` is absolute or has a ``..`` component, and whatever ``open(2)``
    raises otherwise (``ENOENT``, ``ENOTDIR``, ``EACCES``...).  ``rel`` may be
    ``"."`` or ``""`` for ``dir_fd``'s directory itself.  ``O_CLOEXEC`` is
    always added; ``O_CREAT`` is not supported.
    """
    if "\x00" in rel:
        raise ValueError("embedded null byte")
    if flags & os.O_CREAT:
        raise ValueError("open_beneath does not create files")
    parts = _components(rel)
    flags |= _O_CLOEXEC
    if use_openat2:
        fd = _openat2(dir_fd, "/".join(parts), flags)
        if fd is not None:
            return fd
    return _walk(dir_fd, parts, flags)


def _components(rel: str) -> List[str]:
    """``rel``'s names, without empty and ``.`` ones (``["."]`` for the directory itself); EXDEV for ``..``/absolute."""
    if rel.startswith("/"):
        raise OSError(errno.EXDEV, f"{os.strerror(errno.EXDEV)} (an absolute path is not beneath the directory)", rel)
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise OSError(errno.EXDEV, f"{os.strerror(errno.EXDEV)} (.. is not followed)", rel)
    return parts or ["."]


def _load_syscall() -> Any:
    global _syscall
    if _syscall is None:
        _syscall = False
        number = _OPENAT2_SYSCALL.get(os.uname().machine.lower()) if hasattr(os, "uname") else None
        if number is not None and sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)  # our own handle: argtypes set here touch no one else's
                function = libc.syscall
                function.restype = ctypes.c_long
                function.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]

                class OpenHow(ctypes.Structure):
                    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

                _syscall = (ctypes, function, number, OpenHow)
            except (ImportError, OSError, AttributeError):
                _syscall = False
    return _syscall


def _openat2(dir_fd: int, rel: str, flags: int) -> Optional[int]:
    """openat2(dir_fd, rel, flags, BENEATH|NO_SYMLINKS|NO_MAGICLINKS); None when the call is not available here."""
    global _syscall
    loaded = _load_syscall()
    if not loaded:
        return None
    ctypes, function, number, OpenHow = loaded
    how = OpenHow(flags=flags, mode=0, resolve=RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    path = os.fsencode(rel or ".")
    while True:
        fd = function(number, dir_fd, path, ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            return int(fd)
        code = ctypes.get_errno()
        if code == errno.EINTR:
            continue
        if code == errno.ENOSYS:
            _syscall = False  # an older kernel: it will not appear later in this process
            return None
        if code == errno.EPERM:
            # A seccomp filter (containers) that refuses what it does not know; the walk gives the
            # real answer, including a genuine EPERM.
            return None
        raise OSError(code, os.strerror(code), rel)


def _walk(dir_fd: int, parts: List[str], flags: int) -> int:
    """The openat2 rule by hand: each component opened with O_NOFOLLOW relative to the one before."""
    if os.open not in os.supports_dir_fd:
        raise OSError(errno.ENOTSUP, "opening relative to a directory descriptor is not supported here")
    current = dir_fd
    try:
        for index, name in enumerate(parts):
            last = index == len(parts) - 1
            try:
                fd = os.open(name, (flags if last else SEARCH_DIRECTORY | _O_CLOEXEC) | _O_NOFOLLOW, dir_fd=current)
            except OSError as exc:
                code = exc.errno or errno.EIO
                # O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR; say ELOOP, as openat2 does.
                if code in (errno.ENOTDIR, errno.EMLINK) and _is_symlink(name, current):
                    code = errno.ELOOP
                raise OSError(code, os.strerror(code), "/".join(parts)) from None
            if current != dir_fd:
                os.close(current)
            current = fd
            if not last and not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), "/".join(parts))
            # O_PATH|O_NOFOLLOW opens a symlink itself rather than failing; openat2 refuses it.
            if last and flags & _O_PATH and stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), "/".join(parts))
        result, current = current, dir_fd
        return result
    finally:
        if current != dir_fd:
            os.close(current)


def _is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
