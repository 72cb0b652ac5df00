"""The macOS sandbox for ``exec``: a ``sandbox-exec`` (Seatbelt, SBPL) profile from the exec policy.

macOS has no Landlock or seccomp; its kernel sandbox (Seatbelt) is driven by a
profile in SBPL, a small Scheme, which ``/usr/bin/sandbox-exec -f PROFILE
PROGRAM ARGS...`` applies to itself before it ``exec``s PROGRAM.  The profile is
inherited by everything the program starts and cannot be lifted from inside.
This module turns the same policy inputs the Linux layer uses into such a
profile; it runs nothing itself.  ``sandbox.run`` (the kernel layer's owner)
calls it:

    text = macos.profile(read_only, read_write, gateway_port)
    # write text to a 0600 file in the private lib dir, then:
    argv = macos.argv(profile_path, [python, "-I", "-S", ..., guard, ...])

The profile, rule by rule:

- ``(deny default)``: everything not allowed below is refused (EPERM), and
  Seatbelt logs it.
- Reading: the paths in ``read_only`` (the interpreter, its stdlib, the
  sandbox lib dir; ``default_read_only()`` gives the interpreter's part), the
  system's shared libraries (``SYSTEM_READ_ONLY``: ``/usr/lib``,
  ``/System/Library``, the dyld cache) and the few device files Python opens
  (``/dev/null``, ``/dev/urandom``, ``/dev/random``).  File *metadata*
  (``stat``, ``realpath``) is allowed everywhere, as on Linux, where Landlock
  does not cover it either: Python's start-up resolves its own path through
  every parent directory.
- Reading and writing: the paths in ``read_write`` (the private work dir and,
  opt-in, the workspace) and ``/dev/null``.
- Processes: only the interpreter in ``exec_paths`` (default: the ``read_only``
  entries that are files, i.e. the interpreter) may be exec'd, because
  ``sandbox-exec`` itself execs it after applying the profile; a script that
  re-execs it gets the same profile.  ``process-fork`` is denied, so no
  subprocess, shell or helper program starts.  Signals only to itself
  (``(target self)``), process information only about itself.
- Network: with a ``gateway_port``, exactly one rule, ``(allow
  network-outbound (remote tcp "localhost:PORT"))``: TCP to the gateway on
  loopback.  Everything else (other ports, other hosts, UDP, DNS through
  mDNSResponder, unix sockets, listening) stays denied.  Without a port, no
  network at all.
- ``sysctl-read`` is allowed (Python reads ``hw.ncpu``, ``kern.osversion``);
  Mach service lookups, IPC, ``iokit`` and the pasteboard are not.

Paths are resolved with ``realpath`` (Seatbelt matches the real path: ``/tmp``
is ``/private/tmp``) and written as SBPL string literals, ``"`` and ``\\``
escaped; a path with a control character or NUL, or a relative one, is
refused (``ValueError``) rather than guessed at.

Status: designed, and tested only as generated text (tests/test_isolation_cli.py)
-- there is no Mac in this project's CI, so it is **untested on a real Mac**.
``sandbox-exec`` is deprecated by Apple but still shipped and used (Chromium,
Bazel, Codex CLI use the same mechanism).
"""

import os
import sys
from typing import Iterable, List, Optional, Sequence

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# What a Python process on macOS reads besides its own files: the system's libraries and the dyld cache.
SYSTEM_READ_ONLY = (
    "/usr/lib",
    "/usr/share/zoneinfo",
    "/System/Library",
    "/System/Volumes/Preboot/Cryptexes/OS",  # the dyld shared cache on macOS 13+
    "/private/var/db/timezone",
)
DEVICE_READ_ONLY = ("/dev/urandom", "/dev/random")
DEVICE_READ_WRITE = ("/dev/null",)


def quote(path: str) -> str:
    """``path`` as an SBPL string literal: in double quotes, ``\\`` and ``"`` escaped.

    Raises ``ValueError`` for a NUL or any other control character, which
    SBPL's reader would take differently or which no sane path contains.
    """
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        raise ValueError(f"path {path!r} contains a control character; refusing to put it in a sandbox profile")
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _resolved(paths: Iterable[str]) -> List[str]:
    """Absolute real paths, in order, without duplicates."""
    out: List[str] = []
    for path in paths:
        if not isinstance(path, str) or not os.path.isabs(path):
            raise ValueError(f"sandbox profile paths must be absolute, not {path!r}")
        real = os.path.realpath(path)
        if real not in out:
            out.append(real)
    return out


def _rule(operations: str, filter_name: str, paths: Sequence[str]) -> List[str]:
    """``(allow OPS (FILTER "p1") (FILTER "p2") ...)`` over several lines, or nothing for no paths."""
    if not paths:
        return []
    return [f"(allow {operations}"] + [f"    ({filter_name} {quote(path)})" for path in paths] + ["    )"]


def default_read_only(python: str = sys.executable) -> List[str]:
    """The interpreter's own files: its executable and its installation prefix (stdlib, framework)."""
    paths = [os.path.realpath(python)]
    for prefix in (sys.base_prefix, sys.base_exec_prefix):
        if prefix and os.path.isabs(prefix):
            paths.append(os.path.realpath(prefix))
    return paths


def profile(
    read_only: Sequence[str],
    read_write: Sequence[str],
    gateway_port: Optional[int],
    exec_paths: Optional[Sequence[str]] = None,
) -> str:
    """The SBPL profile text: deny by default, then exactly what the exec policy allows.

    ``read_only``/``read_write``: absolute paths (files or directories; a
    directory covers everything under it).  ``gateway_port``: the one
    loopback TCP port the script may connect to, or None for no network.
    ``exec_paths``: the programs that may be exec'd (default: the files
    among ``read_only``, i.e. the interpreter ``sandbox-exec`` starts).
    """
    if gateway_port is not None:
        if isinstance(gateway_port, bool) or not isinstance(gateway_port, int) or not 1 <= gateway_port <= 65535:
            raise ValueError(f"the gateway port must be a TCP port number (1-65535), not {gateway_port!r}")
    ro = _resolved(read_only)
    rw = _resolved(read_write)
    if exec_paths is None:
        executables = [path for path in ro if os.path.isfile(path)]
    else:
        executables = _resolved(exec_paths)
    lines = [
        "(version 1)",
        ";; toolscript exec: generated by toolscript/codemode/macos.py; everything not allowed is denied",
        "(deny default)",
        "",
        ";; the process itself: signals and process information only about itself; no fork",
        "(allow signal (target self))",
        "(allow process-info* (target self))",
        "(allow sysctl-read)",
        "",
        ";; metadata (stat, realpath) everywhere, as on Linux; contents only below",
        "(allow file-read-metadata)",
        "",
        ";; read-only: the interpreter, its stdlib, the sandbox lib dir, the system's libraries",
    ]
    lines += _rule("file-read*", "subpath", ro + [p for p in SYSTEM_READ_ONLY if p not in ro])
    lines += _rule("file-read*", "literal", list(DEVICE_READ_ONLY))
    lines += ["", ";; read-write: the private work dir and the opt-in workspace"]
    lines += _rule("file-read* file-write*", "subpath", rw)
    lines += _rule("file-read* file-write-data", "literal", list(DEVICE_READ_WRITE))
    lines += ["", ";; exec: only the interpreter sandbox-exec starts (it inherits this profile)"]
    lines += _rule("process-exec", "literal", executables)
    lines += [""]
    if gateway_port is None:
        lines.append(";; network: none")
    else:
        lines += [";; network: TCP to the gateway on loopback, nothing else", f'(allow network-outbound (remote tcp "localhost:{gateway_port}"))']
    return "\n".join(lines) + "\n"


def argv(profile_path: str, program_argv: Sequence[str]) -> List[str]:
    """``sandbox-exec -f PROFILE PROGRAM ARGS...``: the argv that runs the program under the profile."""
    if not program_argv:
        raise ValueError("no program to run under sandbox-exec")
    return [SANDBOX_EXEC, "-f", profile_path] + [str(arg) for arg in program_argv]


def available() -> bool:
    """True on macOS with ``/usr/bin/sandbox-exec`` present."""
    return sys.platform == "darwin" and os.access(SANDBOX_EXEC, os.X_OK)
