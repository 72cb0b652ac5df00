"""The runner behind ``toolscript exec``: Python code in a sandboxed child interpreter.

``run(code, ...)`` checks the syntax in this process first (nothing runs when
it is wrong), then starts ``python -I -S -B -u -X utf8`` on the guard
(``guard.py``, copied into a fresh temp dir together with the runtime
``toolscript.py`` and the name map), streams the child's stdout and stderr to
the given binary streams as they come, and returns an ``ExecResult`` whose
``exit_code`` is the script's own exit status.

The child gets an empty environment (plus ``TOOLSCRIPT_GATEWAY_URL`` when a
gateway is given), the temp dir as its working dir, ``HOME`` and ``TMPDIR``,
resource limits (applied by the guard), a wall-clock timeout enforced twice
(here, by killing its process group, and by the guard's own watchdog, which
holds when this process is gone), and Linux user, mount and PID namespaces
(plus a network namespace without a gateway) when ``unshare`` can create
them.  How it is started, timed out and killed with us is ``process.py``.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from typing import BinaryIO, Dict, List, Optional, Sequence, Tuple

from toolscript import log
from toolscript.codemode import process
from toolscript.codemode.process import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, KILL_GRACE, ExecResult
from toolscript.errors import UserError

logger = log.get("codemode.sandbox")

__all__ = ["run", "check_syntax", "namespace_prefix", "ExecResult", "DEFAULT_TIMEOUT", "DEFAULT_MAX_OUTPUT", "MEMORY_LIMIT"]

MEMORY_LIMIT = 1 << 30  # bytes of address space
FILE_SIZE_LIMIT = 64 << 20  # bytes per written file
OPEN_FILES_LIMIT = 256
THREAD_ALLOWANCE = 64  # tasks on top of what the user already runs (RLIMIT_NPROC counts threads)
# The guard's own wall-clock limit comes this long after the timeout, so that while exec lives
# its kill (and its exit status 124 with the --timeout notice) always comes first.
WATCHDOG_MARGIN = 1.0
PyCF_ALLOW_TOP_LEVEL_AWAIT = 0x2000

GUARD_NAME = "_toolscript_guard.py"
RUNTIME_NAME = "toolscript.py"
NAMES_NAME = "_toolscript_names.json"
CODE_NAME = "_toolscript_script"
NAMESPACES_ENV = "TOOLSCRIPT_EXEC_NAMESPACES"  # "0" turns the namespace layer off
EXIT_SYNTAX = 1


# -- syntax ------------------------------------------------------------------------------------


def check_syntax(code: str, filename: str) -> Optional[str]:
    """``"file:line:col: SyntaxError: message"`` when ``code`` does not compile, else None."""
    error = _syntax_error(code, filename)
    return None if error is None else error[0]


def _syntax_error(code: str, filename: str) -> Optional[Tuple[str, int, int]]:
    """(message, line, column) of the first syntax error, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the child shows SyntaxWarnings itself, once
            compile(code, filename, "exec", flags=PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        return f"{exc.filename or filename}:{line}:{col}: {type(exc).__name__}: {exc.msg}", line, col
    except ValueError as exc:  # NUL bytes
        return f"{filename}:1:1: SyntaxError: {exc}", 1, 1
    return None


def _syntax_report(code: str, error: Tuple[str, int, int]) -> str:
    """The message plus the offending line and a caret under the column, as Python shows them."""
    message, lineno, col = error
    lines = code.splitlines()
    if not 1 <= lineno <= len(lines):
        return message + "\n"
    text = lines[lineno - 1]
    stripped = text.lstrip()
    caret = " " * max(0, col - 1 - (len(text) - len(stripped))) + "^"
    return f"{message}\n    {stripped}\n    {caret}\n"


# -- isolation modes ---------------------------------------------------------------------------

_NAMESPACE_PREFIXES: Dict[bool, Optional[Tuple[str, ...]]] = {}
_NAMESPACE_LOCK = threading.Lock()


def namespace_prefix(net: bool) -> Optional[Tuple[str, ...]]:
    """The ``unshare ...`` argv prefix that works here (probed once per process), or None."""
    with _NAMESPACE_LOCK:
        if net not in _NAMESPACE_PREFIXES:
            _NAMESPACE_PREFIXES[net] = _probe_namespaces(net)
        return _NAMESPACE_PREFIXES[net]


def _probe_namespaces(net: bool) -> Optional[Tuple[str, ...]]:
    if not sys.platform.startswith("linux"):
        return None
    unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")
    true = shutil.which("true", path="/usr/bin:/bin")
    if not unshare or not true:
        return None
    tail = ["--mount", "--pid", "--fork", "--kill-child", "--mount-proc"] + (["--net"] if net else [])
    # --map-current-user keeps the script's own uid (no capabilities inside); older util-linux lacks it.
    for mapping in ("--map-current-user", "--map-root-user"):
        argv = [unshare, mapping] + tail
        try:
            proc = subprocess.run(argv + [true], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=5, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError) as exc:
            logger.debug("namespaces unavailable (%s): %s", mapping, exc)
            continue
        if proc.returncode == 0:
            return tuple(argv)
        logger.debug("namespaces unavailable (%s): %s", mapping, proc.stderr.decode(errors="replace").strip())
    return None


def _mode_name(prefix: Optional[Sequence[str]]) -> str:
    if not prefix:
        return "guard"
    kinds = ["user", "mount", "pid"] + (["net"] if "--net" in prefix else [])
    return f"namespace({','.join(kinds)})+guard"


def _choose_prefix(net: bool, namespaces: Optional[bool]) -> Optional[Tuple[str, ...]]:
    if namespaces is False or (namespaces is None and os.environ.get(NAMESPACES_ENV, "").strip() == "0"):
        return None
    prefix = namespace_prefix(net)
    if prefix is None and namespaces is True:
        raise UserError("Linux namespaces are not available here (unshare failed or is missing); run with namespaces=None to fall back to the guard alone")
    return prefix


# -- the child's files, environment and limits -------------------------------------------------

_SOURCES: Dict[str, bytes] = {}


def _source(name: str) -> bytes:
    """guard.py / runtime.py, from the package (works from the zipapp too)."""
    if name not in _SOURCES:
        import pkgutil

        data = pkgutil.get_data("toolscript.codemode", name)
        if data is None:
            raise UserError(f"toolscript is incomplete: toolscript/codemode/{name} is missing; reinstall it")
        _SOURCES[name] = data
    return _SOURCES[name]


def _thread_allowance() -> int:
    """RLIMIT_NPROC for the child: 0 (not set) as root, else the user's tasks now plus an allowance."""
    if not hasattr(os, "getuid") or os.getuid() == 0 or not os.path.isdir("/proc"):
        return 0  # root ignores RLIMIT_NPROC; the guard refusing fork/exec is the defence there
    uid, tasks = os.getuid(), 0
    try:
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                try:
                    if entry.stat().st_uid != uid:
                        continue
                    with open(f"/proc/{entry.name}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                    tasks += int(fields[17])  # num_threads (field 20 of stat)
                except (OSError, IndexError, ValueError):
                    tasks += 1
    except OSError:
        return 0
    return tasks + THREAD_ALLOWANCE


def _child_env(work: str, gateway_url: Optional[str]) -> Dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": work,
        "TMPDIR": work,
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",  # ignored under -I, kept for tools that look
        "MALLOC_ARENA_MAX": "2",  # fewer malloc arenas: threads stay inside the address-space limit
    }
    if gateway_url:
        env["TOOLSCRIPT_GATEWAY_URL"] = gateway_url
    return env


# -- running ------------------------------------------------------------------------------------


def _signal_message(signum: int, cpu: int, memory: int) -> str:
    name = process.signal_name(signum)
    if signum == getattr(signal, "SIGXCPU", -1):
        return f"toolscript: the script was stopped by its CPU time limit ({cpu} s)"
    if signum == getattr(signal, "SIGKILL", -1):
        return f"toolscript: the script was killed ({name}): probably a resource limit (CPU time {cpu} s, memory {memory >> 20} MiB) or the system's out-of-memory killer"
    if signum == getattr(signal, "SIGXFSZ", -1):
        return "toolscript: the script wrote past the file size limit"
    if signum == getattr(signal, "SIGSEGV", -1):
        return f"toolscript: the interpreter crashed ({name}), e.g. from very deep recursion"
    return f"toolscript: the script was killed by {name}"


def run(
    code: str,
    *,
    filename: str = "<exec>",
    gateway_url: Optional[str] = None,
    names: Optional[dict] = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    stdout: BinaryIO,
    stderr: BinaryIO,
    python: str = sys.executable,
    args: Sequence[str] = (),
    namespaces: Optional[bool] = None,
    memory_limit: int = MEMORY_LIMIT,
    kill_grace: float = KILL_GRACE,
) -> ExecResult:
    """Run ``code`` in the sandbox; stream its output; return how it ended.

    ``gateway_url`` (``http://127.0.0.1:PORT/t/TOKEN``) is given to the script
    as ``TOOLSCRIPT_GATEWAY_URL`` and is the only address it may connect to;
    without it the script has no network (a network namespace when
    available).  ``names`` is the attribute map of the runtime
    (``{"servers": {attr: {fn: {"id": "server__tool", "args": {kwarg: json}}}}}``).
    ``namespaces``: None = use them when available (unless
    ``TOOLSCRIPT_EXEC_NAMESPACES=0``), False = never, True = required.
    ``kill_grace``: seconds between SIGTERM and SIGKILL on a timeout (guard
    mode; a namespace's PID 1 ignores SIGTERM, so it gets SIGKILL at once).
    The script also stops itself ``WATCHDOG_MARGIN`` seconds after ``timeout``
    (exit 124), which is what ends it when this process is gone.
    Raises ``UserError`` only when the sandbox cannot be set up at all.
    """
    started = time.monotonic()
    if os.name != "posix":
        raise UserError("toolscript exec needs a POSIX system (Linux or macOS): its sandbox relies on process groups and resource limits")
    problem = _syntax_error(code, filename)
    if problem is not None:
        process.write_text(stderr, _syntax_report(code, problem))
        return ExecResult(EXIT_SYNTAX, "none", False, False, process.elapsed_ms(started))
    if not python:
        raise UserError("cannot tell which Python to run the script with (sys.executable is empty)")
    resolved = python if os.sep in python else shutil.which(python)
    if not resolved or not os.access(resolved, os.X_OK):
        raise UserError(f"cannot run the script with {python!r}: no such executable")
    if not (0 < timeout < float("inf")):
        raise UserError(f"the timeout must be a positive number of seconds, not {timeout!r}")
    gw_host, gw_port = process.gateway_address(gateway_url)
    prefix = _choose_prefix(not gateway_url, namespaces)
    mode = _mode_name(prefix)
    cpu = max(1, int(timeout + 0.999) + 1)
    wall_ms = int((timeout + WATCHDOG_MARGIN) * 1000)
    limits = f"{cpu},{int(memory_limit)},{FILE_SIZE_LIMIT},{OPEN_FILES_LIMIT},{_thread_allowance()},{wall_ms}"
    logger.info("exec: isolation %s, timeout %gs", mode, timeout)

    root = process.make_temp_dir("exec")
    try:
        lib, work = os.path.join(root, "lib"), os.path.join(root, "work")
        os.mkdir(lib, 0o700)
        os.mkdir(work, 0o700)
        import json

        files = {
            GUARD_NAME: _source("guard.py"),
            RUNTIME_NAME: _source("runtime.py"),
            NAMES_NAME: json.dumps(names if isinstance(names, dict) else {"servers": {}}).encode("utf-8"),
            CODE_NAME: code.encode("utf-8", "surrogateescape"),
        }
        for name, data in files.items():
            with open(os.path.join(lib, name), "wb") as f:
                f.write(data)
        argv: List[str] = list(prefix or ()) + [
            resolved, "-I", "-S", "-B", "-u", "-X", "utf8",
            os.path.join(lib, GUARD_NAME), lib, work, os.path.join(lib, CODE_NAME), filename,
            gw_host, gw_port, limits,
        ] + [str(a) for a in args]
        logger.debug("exec: mode %s, argv %s", mode, argv)
        exit_code, child = process.supervise(
            argv,
            cwd=work,
            env=_child_env(work, gateway_url),
            stdout=stdout,
            stderr=stderr,
            timeout=timeout,
            max_output=max_output,
            # In a PID namespace the script is PID 1, which ignores SIGTERM: no point waiting for it there.
            grace=0.0 if prefix else kill_grace,
            signal_message=lambda signum: _signal_message(signum, cpu, memory_limit),
        )
    finally:
        process.remove_tree(root)
    return ExecResult(exit_code, mode, child.timed_out, child.truncated, process.elapsed_ms(started), child.pgid)
