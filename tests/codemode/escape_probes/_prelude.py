# The escape probes' shared prelude (stdlib only; the test prepends it to each probe, after the
# config line ``CONFIG = {...}``).  ``attempt(name, action)`` runs one escape and prints one line:
#   PROBE {"probe": name, "outcome": "escaped" | "blocked", "by": "guard" | "os" | "error", "detail": ...}
# "guard" = refused by exec's in-process audit hook; "os" = an OSError (EACCES, EPERM, ENOSYS, ESRCH,
# ECONNREFUSED...) from the kernel, or an OS-level isolation with no error (a UDP packet nobody
# answers); "error" = the probe itself is broken (the test fails on it).  Before each attempt it
# prints ``ATTEMPT name``, so a probe killed by a signal (seccomp) shows where; ``DONE`` at the end.
import errno as _errno
import json as _json
import os
import sys

GUARD_TEXT = "tool" + "script sandbox:"  # spelt apart: exec connects to a gateway when a script names its package


class Blocked(Exception):
    """Raised by an action when the OS stopped it without an error of its own (no reply, a cap)."""


def report(name, outcome, by="", detail=""):
    line = _json.dumps({"probe": name, "outcome": outcome, "by": by, "detail": str(detail)[:300]})
    print("PROBE " + line, flush=True)


def _blocked_by(exc):
    if GUARD_TEXT in str(exc):
        return "guard"
    if isinstance(exc, (OSError, Blocked)):
        return "os"
    if isinstance(exc, ImportError) and ("Permission denied" in str(exc) or "Operation not permitted" in str(exc)):
        return "os"  # a library the OS would not let the loader read
    return "error"


class Contained(Exception):
    """The action went through, but into something private to the sandbox (the test checks the host side)."""


def attempt(name, action):
    print("ATTEMPT " + name, flush=True)
    try:
        result = action()
    except Contained as exc:
        report(name, "contained", "os", str(exc))
        return
    except Exception as exc:
        code = getattr(exc, "errno", None)
        errname = _errno.errorcode.get(code, "") if isinstance(code, int) else ""
        report(name, "blocked", _blocked_by(exc), f"{type(exc).__name__} {errname}: {exc}")
        return
    report(name, "escaped", "", repr(result))


def done():
    print("DONE", flush=True)


def libc():
    """libc through ctypes (the guard refuses ctypes; with the guard off only the kernel decides)."""
    import ctypes

    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


def syscall(number, *args):
    """``syscall(number, args...)``; the result when it succeeded, OSError(errno) when it failed."""
    import ctypes

    lib = libc()
    result = lib.syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"syscall {number}: {os.strerror(code)}")
    return result


def reached(number, *args):
    """For a call that needs a valid target to succeed: any errno but EPERM/EACCES/ENOSYS/ESRCH means
    the kernel ran it for us (it passed every permission check), which counts as an escape."""
    try:
        return syscall(number, *args)
    except OSError as exc:
        if exc.errno in (None, _errno.EPERM, _errno.EACCES, _errno.ENOSYS, _errno.ESRCH):
            raise  # refused (None: by the guard, before any system call)
        return f"reached the kernel: {_errno.errorcode.get(exc.errno, exc.errno)}"


def read_text(path):
    with open(path, "rb") as f:
        return f.read(4096)
