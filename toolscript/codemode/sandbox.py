"""The runner behind ``toolscript exec``: Python code in a sandboxed child interpreter.

``run(code, ...)`` checks the syntax in this process first (nothing runs when
it is wrong), then starts ``python -I -S -B -u -X utf8`` on the guard
(``guard.py``, copied into a fresh temp dir together with the runtime
``toolscript.py`` and the name map), streams the child's stdout and stderr to
the given binary streams as they come, and returns an ``ExecResult`` whose
``exit_code`` is the script's own exit status.

The child gets an empty environment (plus ``TOOLSCRIPT_GATEWAY_URL`` when a
gateway is given, ``TOOLSCRIPT_WORKSPACE`` when a workspace is), the temp dir
as ``HOME`` and ``TMPDIR`` and as its working dir (the workspace when given),
resource limits (applied by the guard), a wall-clock timeout enforced here (by
killing its process group), by the guard's own watchdog, and by a kernel timer
(both hold when this process is gone), and the best isolation this system
offers, a ladder reported plainly in ``ExecResult.mode`` and
:func:`isolation_report`:

1. ``landlock``: the kernel layer of ``confine.py`` (Landlock: files, TCP
   ports, signal and abstract-socket scoping; seccomp: no exec, no fork, TCP
   sockets only, no kernel attack surface; no capabilities), applied by the
   guard before the script's first line; below Landlock ABI 6 (no signal
   scoping) also the namespaces below, when ``unshare`` works;
2. ``bubblewrap`` (``bwrap``, or ``TOOLSCRIPT_BWRAP``): a fresh mount
   namespace with only the runtime read-only and the temp dir writable, plus
   the seccomp filter;
3. ``namespaces``: Linux user, mount and PID namespaces (plus a network
   namespace without a gateway), with the seccomp filter when the kernel has it;
4. ``guard``: the in-process audit hook alone.

On every rung the script's tasks (threads) are capped at ``TASK_LIMIT``:
by a cgroup's ``pids.max`` where one can be made (``cgroups``; the mode
names it ``cgroup(pids)``), else by ``RLIMIT_NPROC`` (which does not bind
root: there exec counts them every ``process.WATCH_INTERVAL`` seconds); and
exec stops the script when its files pass ``WORK_DIR_LIMIT``.

The audit-hook guard runs on every rung, first, for its clear messages.
``TOOLSCRIPT_EXEC_LAYER`` forces a rung (``namespaces`` and ``guard`` forced
run without any kernel layer, not even seccomp); the test-only
``TOOLSCRIPT_EXEC_GUARD=off`` drops the guard, and the mode says
``guard-off``.  How the child is started, timed out and killed with us is
``process.py``.
"""

import json
import marshal
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from typing import BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple

from toolscript import log
from toolscript.codemode import process
from toolscript.system import cgroups
from toolscript.codemode.process import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, KILL_GRACE, ExecResult
from toolscript.errors import UserError

logger = log.get("codemode.sandbox")

__all__ = ["run", "check_syntax", "namespace_prefix", "isolation_report", "find_bwrap", "ExecResult", "DEFAULT_TIMEOUT", "DEFAULT_MAX_OUTPUT", "MEMORY_LIMIT"]

MEMORY_LIMIT = 1 << 30  # bytes of address space
FILE_SIZE_LIMIT = 64 << 20  # bytes per written file
OPEN_FILES_LIMIT = 256
THREAD_ALLOWANCE = 64  # tasks on top of what the user already runs (RLIMIT_NPROC counts threads)
# The tasks (threads) a script may have at once: its cgroup's pids.max, the limit that binds root too.
TASK_LIMIT = THREAD_ALLOWANCE
# What the files of a script may take together: the blocks of everything in its work dir, plus its open
# files that have no name (unlinked, O_TMPFILE); and how many entries the work dir may hold.  Checked by
# exec every process.WATCH_INTERVAL seconds: a fast writer can pass them by what it writes in that time.
WORK_DIR_LIMIT = 256 << 20
WORK_DIR_ENTRIES_LIMIT = 10000
CGROUP_MODE = "cgroup(pids)"  # how the mode string names the task cap's cgroup
# The guard's own wall-clock limit comes this long after the timeout, so that while exec lives
# its kill (and its exit status 124 with the --timeout notice) always comes first.
WATCHDOG_MARGIN = 1.0
PyCF_ALLOW_TOP_LEVEL_AWAIT = 0x2000

# The files of a run's lib dir.  The guard and the runtime, which cannot import this module, read
# them by the same names (guard.POLICY_NAME, guard.CONFINE_MODULE, runtime.NAMES_FILE).
GUARD_NAME = "_toolscript_guard.py"
RUNTIME_NAME = "toolscript.py"
NAMES_NAME = "_toolscript_names.json"
CODE_NAME = "_toolscript_script"
POLICY_NAME = "_toolscript_policy"
SIGNAL_NAME = "init_signal"  # in the temp root, outside the script's reach
NAMESPACES_ENV = "TOOLSCRIPT_EXEC_NAMESPACES"  # "0" turns the namespace layer off
LAYER_ENV = process.LAYER_ENV
WORKSPACE_ENV = process.WORKSPACE_ENV
GUARD_ENV = "TOOLSCRIPT_EXEC_GUARD"  # "off": TEST-ONLY, no audit-hook guard (proves the OS layer alone holds)
BWRAP_ENV = "TOOLSCRIPT_BWRAP"  # the bubblewrap executable to use (default: bwrap on PATH)
LAYERS = ("landlock", "bubblewrap", "namespaces", "guard")
SCOPE_ABI = 6  # the Landlock ABI that scopes signals and abstract unix sockets (LANDLOCK_SCOPE_*)
# The kernel's kill timer (confine.py) fires this long after the guard's watchdog: the watchdog's
# message comes first when it can run, the timer is what holds when it cannot.
KERNEL_DEADLINE_MARGIN = 0.5
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


def _choose_prefix(net: bool, namespaces: Optional[bool]) -> Optional[Tuple[str, ...]]:
    if namespaces is False or (namespaces is None and os.environ.get(NAMESPACES_ENV, "").strip() == "0"):
        return None
    prefix = namespace_prefix(net)
    if prefix is None and namespaces is True:
        raise UserError("Linux namespaces are not available here (unshare failed or is missing); run with namespaces=None to fall back to the guard alone")
    return prefix


_BWRAPS: Dict[str, Optional[str]] = {}
_BWRAP_LOCK = threading.Lock()


def find_bwrap() -> Optional[str]:
    """A bubblewrap that works here (``TOOLSCRIPT_BWRAP``, else ``bwrap`` on PATH), probed once; or None."""
    wanted = os.environ.get(BWRAP_ENV, "").strip()
    with _BWRAP_LOCK:
        if wanted not in _BWRAPS:
            _BWRAPS[wanted] = _probe_bwrap(wanted)
        return _BWRAPS[wanted]


def _probe_bwrap(wanted: str) -> Optional[str]:
    if not sys.platform.startswith("linux"):
        return None
    found = wanted if wanted and os.access(wanted, os.X_OK) else shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    true = shutil.which("true", path="/usr/bin:/bin")
    if not found or not true:
        return None
    argv = [found, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", true]
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=5, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError) as exc:
        logger.debug("bubblewrap unusable (%s): %s", found, exc)
        return None
    if proc.returncode != 0:
        logger.debug("bubblewrap unusable (%s): %s", found, proc.stderr.decode(errors="replace").strip())
        return None
    return found


class _Plan:
    """Which rung of the ladder runs, and how: the argv prefix, the kernel policy, the mode string."""

    def __init__(self, layer: str, prefix: Sequence[str], kernel: Optional[dict], mode: str, namespaces: List[str], bwrap: Optional[str]) -> None:
        self.layer = layer
        self.prefix = list(prefix)
        self.kernel = kernel  # confine.apply's switches ({"landlock": bool, "seccomp": bool}), None = no confine
        self.mode = mode
        self.namespaces = namespaces
        self.bwrap = bwrap


def _namespace_kinds(prefix: Optional[Sequence[str]]) -> List[str]:
    if not prefix:
        return []
    return ["user", "mount", "pid"] + (["net"] if "--net" in prefix else [])


def _plan(gateway: bool, namespaces: Optional[bool], guard_on: bool) -> _Plan:
    """Choose the rung: Landlock (+ namespaces) -> bubblewrap -> namespaces -> guard; or the forced one."""
    forced = os.environ.get(LAYER_ENV, "").strip().lower()
    if forced and forced not in LAYERS:
        raise UserError(f"{LAYER_ENV}={forced!r} is not a layer; use one of {', '.join(LAYERS)} or unset it")
    probe = process.kernel_probe()
    abi = int(probe.get("landlockAbi") or 0)
    seccomp = bool(probe.get("seccomp"))
    landlock_ok = abi > 0 and seccomp
    # From ABI 6 Landlock scopes signals and abstract unix sockets to the sandbox, and it already denies /proc and
    # every port but the gateway's: on that rung the namespaces would add nothing but their cost (a probe, unshare's
    # exec and fork, an init reaper: ~10 ms a run).  Older ABIs keep them for the signal scoping.
    scoped = landlock_ok and abi >= SCOPE_ABI and forced in ("", "landlock") and namespaces is not True
    prefix = _choose_prefix(not gateway, namespaces) if (namespaces is not False or forced) and not scoped else None
    if forced == "namespaces" and prefix is None:
        prefix = namespace_prefix(not gateway)
    bwrap = find_bwrap() if (forced == "bubblewrap" or (not forced and not landlock_ok and namespaces is not False)) else None
    if forced == "landlock" and not landlock_ok:
        raise UserError(f"{LAYER_ENV}=landlock, but this kernel offers no Landlock (ABI {abi}) or no seccomp; unset {LAYER_ENV} to fall back")
    if forced == "bubblewrap" and not bwrap:
        raise UserError(f"{LAYER_ENV}=bubblewrap, but no working bwrap was found (install the bubblewrap package or set {BWRAP_ENV}); unset {LAYER_ENV} to fall back")
    if forced == "namespaces" and prefix is None:
        raise UserError(f"{LAYER_ENV}=namespaces, but Linux namespaces are not available here (unshare failed or is missing); unset {LAYER_ENV} to fall back")
    layer = forced or ("landlock" if landlock_ok else "bubblewrap" if bwrap else "namespaces" if prefix else "guard")
    guard = "guard" if guard_on else "guard-off"
    # The task cap's cgroup comes with every rung where this system lets us make one (named after the kernel layers).
    tasks = CGROUP_MODE + "+" if cgroups.hierarchy() is not None else ""
    if layer == "landlock":
        kinds = _namespace_kinds(prefix)
        mode = f"landlock(abi {abi})+seccomp+" + tasks + (f"namespace({','.join(kinds)})+" if kinds else "") + guard
        return _Plan(layer, prefix or (), {"landlock": True, "seccomp": True}, mode, kinds, None)
    if layer == "bubblewrap":
        kinds = ["user", "mount", "pid", "ipc", "uts", "cgroup"] + ([] if gateway else ["net"])
        return _Plan(layer, (), {"landlock": False, "seccomp": seccomp}, "bubblewrap+" + ("seccomp+" if seccomp else "") + tasks + guard, kinds, bwrap)
    if forced:  # namespaces or guard, forced: no kernel layer at all, the baseline the others are measured against
        prefix = prefix if layer == "namespaces" else None
        kinds = _namespace_kinds(prefix)
        return _Plan(layer, prefix or (), None, tasks + (f"namespace({','.join(kinds)})+" if kinds else "") + guard, kinds, None)
    # Chosen because nothing better is here: keep the seccomp filter and kill timer when the kernel has them.
    kinds = _namespace_kinds(prefix)
    mode = ("seccomp+" if seccomp else "") + tasks + (f"namespace({','.join(kinds)})+" if kinds else "") + guard
    return _Plan(layer, prefix or (), {"landlock": False, "seccomp": True} if seccomp else None, mode, kinds, None)


SECCOMP_STOPS = ("starting programs, forking, UDP/raw/unix sockets, listening, SysV IPC, memfd_create, passing descriptors "
                 "(sendmsg), ptrace, mount, keyctl, bpf, io_uring (seccomp)")
# Where no seccomp filter runs (a forced namespaces or guard rung, a kernel without seccomp), nothing refuses these.
NO_SECCOMP_GAPS = [
    "listening on a socket (an unbound one binds itself to every address), the host's SysV IPC, and memfd memory "
    "outside the memory limit: no seccomp filter on this rung",
]
STOPS = {
    "landlock": [
        "file access outside the Python runtime, the shared libraries, the temp dir and the workspace (Landlock)",
        "TCP connections to any port but the gateway's (Landlock), and listening on any port (Landlock denies bind, seccomp listen)",
        "signals to and abstract unix sockets of processes outside the sandbox (Landlock, ABI >= 6; a PID namespace below)",
        "other processes' /proc files, memory and descriptors (Landlock grants no /proc; seccomp denies ptrace)",
        SECCOMP_STOPS,
        "the wall-clock limit, also when exec is gone (a kernel timer sends SIGKILL)",
    ],
    "bubblewrap": [
        "every file but the read-only runtime, /dev's basic devices and the temp dir (a private mount namespace)",
        "the network, unless a gateway is given (then the host's network is shared)",
        "the host's SysV IPC (a private IPC namespace)",
        SECCOMP_STOPS,
    ],
    "namespaces": ["other processes (PID namespace)", "the network when no gateway is given (network namespace)"],
    "guard": ["what the in-process audit hook refuses (it can be switched off from inside by a determined script)"],
}
GAPS = {
    "landlock": [
        "file metadata: stat() shows which files exist anywhere (Landlock checks opens, not lookups)",
        "with a gateway, TCP to the gateway's port number on other hosts (Landlock rules are per port; the guard checks the host)",
        "every tool the gateway exposes is callable",
        "CPU, memory and disk use inside the limits",
    ],
    "bubblewrap": [
        "with a gateway, the host's whole TCP network (only the guard limits it to the gateway)",
        "every tool the gateway exposes is callable",
        "CPU, memory and disk use inside the limits",
    ],
    "namespaces": [
        "files: anything the user can read or write, once the in-process guard is bypassed",
        "with a gateway, the host's network, once the guard is bypassed",
        "starting programs and forking, once the guard is bypassed",
    ],
    "guard": [
        "everything the user can do, once a script defeats the in-process guard (about fifteen lines of Python)",
    ],
}


def isolation_fix(bubblewrap: bool = True) -> str:
    """What gives exec a (stronger) kernel-enforced layer on this system (for errors and doctor)."""
    if sys.platform == "darwin":
        return "run it on Linux with Landlock (on macOS exec has only the in-process guard)"
    fix = 'use a Linux kernel with Landlock (5.13+, "landlock" in the lsm= list)'
    return fix + (", or install bubblewrap (apt install bubblewrap)" if bubblewrap else "")


def isolation_report(gateway: bool = True) -> Dict[str, object]:
    """Which layer ``exec`` would use now and what it stops and does not (no side effects; probes are cached).

    A ``TOOLSCRIPT_EXEC_LAYER`` that ``exec`` would refuse adds ``"error"``
    (the message ``exec`` would give) and reports the ladder's own choice.
    """
    probe = process.kernel_probe()
    guard_on = os.environ.get(GUARD_ENV, "").strip().lower() != "off"
    problem = None
    try:
        plan = _plan(gateway, None, guard_on)
    except UserError as exc:  # a TOOLSCRIPT_EXEC_LAYER that cannot be honoured: say so, report the ladder's own choice
        problem = str(exc)
        saved = os.environ.pop(LAYER_ENV, None)
        try:
            plan = _plan(gateway, None, guard_on)
        finally:
            if saved is not None:
                os.environ[LAYER_ENV] = saved
    gaps = list(GAPS[plan.layer]) + ([] if guard_on else ["TOOLSCRIPT_EXEC_GUARD=off: the in-process guard is switched off (test only)"])
    if not (plan.kernel and plan.kernel.get("seccomp")):
        gaps += NO_SECCOMP_GAPS
    tasks = task_limit()
    if tasks["by"] == "count":
        gaps.append(f"threads past {TASK_LIMIT} between two counts (root without a writable pids cgroup)")
    return {
        "layer": plan.layer,
        "mode": plan.mode,
        "landlockAbi": int(probe.get("landlockAbi") or 0),
        "seccomp": bool(probe.get("seccomp")),
        "namespaces": plan.namespaces,
        "bwrap": find_bwrap(),
        "stops": list(STOPS[plan.layer]),
        "gaps": gaps,
        "limits": {
            "tasks": tasks["detail"],
            "memory": f"{MEMORY_LIMIT >> 20} MiB of address space (RLIMIT_AS)",
            "fileSize": f"{FILE_SIZE_LIMIT >> 20} MiB per file (RLIMIT_FSIZE)",
            "workDir": (f"{WORK_DIR_LIMIT >> 20} MiB and {WORK_DIR_ENTRIES_LIMIT} entries in the work dir, unnamed open files "
                        f"included; checked by exec every {process.WATCH_INTERVAL:g} s (not the workspace)"),
            "openFiles": OPEN_FILES_LIMIT,
        },
        **({"error": problem} if problem else {}),
    }


# What the C library reads to resolve a gateway host given by name (``localhost``); no DNS: UDP is refused.
HOST_FILES = ("/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf")


def _numeric_host(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _kernel_policy(plan: _Plan, lib: str, work: str, workspace: Optional[str], gw_host: str, gw_port: str, deadline_ms: int) -> Optional[dict]:
    if plan.kernel is None:
        return None
    policy = dict(plan.kernel)
    policy.update(
        python=True,
        system=True,
        read=[lib] + (list(HOST_FILES) if gw_host and not _numeric_host(gw_host) else []),
        write=[work] + ([workspace] if workspace else []),
        connectPorts=[int(gw_port)] if gw_port else [],
        deadlineMs=deadline_ms,
        dropCapabilities=True,
    )
    return policy


def _bwrap_argv(bwrap: str, python: str, lib: str, work: str, workspace: Optional[str], gateway: bool) -> List[str]:
    """bubblewrap: a fresh mount namespace with the runtime read-only and the temp dir (+ workspace) writable."""
    argv = [bwrap, "--die-with-parent", "--unshare-all", "--new-session", "--cap-drop", "ALL"]
    if gateway:
        argv.append("--share-net")
    from toolscript.codemode import confine  # only here: importing it costs a compile

    prefix = os.path.dirname(os.path.dirname(python))  # <prefix>/bin/python3.X -> <prefix>
    for path in ["/usr", prefix] + list(confine.SYSTEM_READ_PATHS):
        if os.path.lexists(path):
            argv += ["--ro-bind-try", path, path]
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--ro-bind", lib, lib, "--bind", work, work]
    if workspace:
        argv += ["--bind", workspace, workspace]
    return argv + ["--chdir", workspace or work]


# -- the child's files, environment and limits -------------------------------------------------

_PYCS: Dict[str, Optional[bytes]] = {}
PYC_DIR = "pyc"  # under the state dir: compiled copies of confine.py and runtime.py, per interpreter


def _pyc_helpers() -> Tuple[bytes, Callable[[bytes], bytes]]:
    """(the interpreter's pyc magic, its source hash): importlib.util's, without importing it (~6 ms)."""
    try:
        import _imp
        from _frozen_importlib_external import MAGIC_NUMBER, _RAW_MAGIC_NUMBER  # type: ignore[attr-defined]  # CPython internals

        return MAGIC_NUMBER, lambda data: _imp.source_hash(_RAW_MAGIC_NUMBER, data)
    except ImportError:  # pragma: no cover - not CPython
        import importlib.util

        return importlib.util.MAGIC_NUMBER, importlib.util.source_hash


def _pyc(name: str) -> Optional[bytes]:
    """An unchecked hash-based ``.pyc`` of ``name`` for this interpreter, kept in the state dir; None if it cannot be.

    The child compiled ``confine.py`` and ``runtime.py`` from source on every
    run (``-B``, and a fresh lib dir), about 6 ms; it reads a ``__pycache__``
    entry instead.  The cache is keyed by the source's hash and the
    interpreter's tag, so a changed toolscript or Python never sees a stale one.
    """
    if name in _PYCS:
        return _PYCS[name]
    data: Optional[bytes] = None
    try:
        magic, source_hash = _pyc_helpers()
        source = process.package_source(name)
        tag = sys.implementation.cache_tag
        if tag:
            key = (source_hash(source + tag.encode() + magic) + len(source).to_bytes(8, "little")).hex()
            from toolscript import paths

            folder = os.path.join(paths.state_dir(), PYC_DIR)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            path = os.path.join(folder, f"{name[:-3]}-{key}.pyc")
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                code = compile(source, name, "exec", dont_inherit=True)
                data = magic + (1).to_bytes(4, "little") + source_hash(source) + marshal.dumps(code)
                partial = f"{path}.{os.getpid()}.tmp"
                with open(partial, "wb") as f:
                    f.write(data)
                os.replace(partial, path)
    except (OSError, UserError, ValueError) as exc:
        logger.debug("no precompiled %s (%s): the child compiles it", name, exc)
        data = None
    _PYCS[name] = data
    return data


def _precompiled(python: str) -> Dict[str, bytes]:
    """``__pycache__`` entries for the lib dir, when the child runs this very interpreter (else it compiles)."""
    if os.path.realpath(python) != os.path.realpath(sys.executable or "") or not sys.implementation.cache_tag:
        return {}
    entries = {}
    for source_name, module in (("confine.py", process.CONFINE_NAME[:-3]), ("runtime.py", RUNTIME_NAME[:-3])):
        data = _pyc(source_name)
        if data:
            entries[os.path.join("__pycache__", f"{module}.{sys.implementation.cache_tag}.pyc")] = data
    return entries


class _Mover:
    """Moves the child into its cgroup from a thread of its own, while the child starts (cgroup v2).

    A move through cgroup.procs waits for an RCU grace period (~10 ms): done
    in line, before or after the start, every run would wait for it.  The
    child waits for it before Landlock (``confine``'s ``cgroup``) and runs
    nothing of the script until it is in; a failed move makes it give up
    (exit 126).  On cgroup v1 the child joins itself, cheaply (``Group.self_join``).
    """

    def __init__(self, group: cgroups.Group) -> None:
        self.group = group
        self.thread: Optional[threading.Thread] = None

    def start(self, pid: int) -> None:
        self.thread = threading.Thread(target=self._move, args=(pid,), name="exec-cgroup", daemon=True)
        self.thread.start()

    def _move(self, pid: int) -> None:
        try:
            self.group.add(pid)
        except OSError as exc:
            logger.warning("exec: could not move the script into its cgroup %s: %s", self.group.path, exc)

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join(5.0)


def _is_root() -> bool:
    return hasattr(os, "getuid") and os.getuid() == 0


def task_limit() -> Dict[str, object]:
    """How the script's tasks (threads) are capped here: ``{"by": "cgroup" | "rlimit" | "count", "limit": N, "detail": str}``."""
    found = cgroups.hierarchy() if sys.platform.startswith("linux") else None
    if found is not None:
        return {"by": "cgroup", "limit": TASK_LIMIT, "detail": f"{TASK_LIMIT} tasks: pids.max of a cgroup of its own (cgroup {found[1]}, {found[0]})"}
    if not _is_root():
        return {"by": "rlimit", "limit": THREAD_ALLOWANCE, "detail": f"{THREAD_ALLOWANCE} tasks on top of the user's own (RLIMIT_NPROC)"}
    return {"by": "count", "limit": TASK_LIMIT, "detail": (
        f"{TASK_LIMIT} tasks, counted by exec every {process.WATCH_INTERVAL:g} s: root is exempt from RLIMIT_NPROC "
        "and no pids cgroup is writable here, so a burst between two counts can pass it")}


def _work_dir_usage(work: str, stop_at_entries: int) -> Tuple[int, int, set, bool]:
    """(bytes allocated, entries, the (dev, inode) pairs seen, whether a directory could not be read) under ``work``.

    Stops counting entries past ``stop_at_entries``.
    """
    used, entries, seen, hidden = 0, 0, set(), False
    pending = [work]
    while pending and entries <= stop_at_entries:
        try:
            listing = os.scandir(pending.pop())
        except FileNotFoundError:
            continue  # removed meanwhile
        except OSError:
            hidden = True  # e.g. made without read permission: what is in it cannot be counted
            continue
        with listing:
            for entry in listing:
                entries += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    continue  # a hard link: its blocks are counted once
                seen.add(key)
                used += info.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
    return used, entries, seen, hidden


def _unnamed_files(pids: Sequence[int], seen: set) -> int:
    """Bytes of the regular files ``pids`` hold open that have no name left (unlinked, O_TMPFILE), not in ``seen``."""
    import stat as stat_module

    used = 0
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                info = os.stat(f"{fd_dir}/{fd}")  # the open file itself, through the magic link
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if not stat_module.S_ISREG(info.st_mode) or info.st_nlink or key in seen:
                continue
            seen.add(key)
            used += info.st_blocks * 512
    return used


def _limits_watch(work: str, limit: int, count_tasks: bool) -> Callable[[int], Optional[str]]:
    """``supervise``'s watch: the limits no kernel enforces for the script (see ``WORK_DIR_LIMIT``).

    ``count_tasks``: also count its threads (root without a pids cgroup: nothing else caps them).
    """
    linux = sys.platform.startswith("linux")

    def check(pid: int) -> Optional[str]:
        used, entries, seen, hidden = _work_dir_usage(work, WORK_DIR_ENTRIES_LIMIT)
        if hidden:
            return "toolscript: the script was stopped: it made a directory in its work dir that exec cannot read, so its disk use cannot be checked"
        if entries > WORK_DIR_ENTRIES_LIMIT:
            return f"toolscript: the script was stopped: its work dir passed {WORK_DIR_ENTRIES_LIMIT} files and directories (the sandbox's limit)"
        if linux:
            used += _unnamed_files([pid] + cgroups.descendants(pid), seen)
        if used > limit:
            return f"toolscript: the script was stopped: its files passed the sandbox's disk limit ({limit / (1 << 20):g} MiB in its work dir)"
        if count_tasks and linux and cgroups.task_count(pid) > TASK_LIMIT:
            return f"toolscript: the script was stopped: it ran more than {TASK_LIMIT} threads at once (the sandbox's limit)"
        return None

    return check


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


def _child_env(work: str, gateway_url: Optional[str], workspace: Optional[str] = None) -> Dict[str, str]:
    """The script's whole environment: HOME and TMPDIR in its private work dir, also when it runs in a workspace."""
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
    if workspace:
        env[WORKSPACE_ENV] = workspace
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


def _signal_reported_by_init(path: str) -> int:
    """The signal number confine.py's init wrote when the script died of one (see ``_reap_as_init``), else 0."""
    try:
        with open(path, "rb") as f:
            return int(f.read(8) or b"0")
    except (OSError, ValueError):
        return 0


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
    require_isolation: bool = False,
    workspace: Optional[str] = None,
    work_dir_limit: int = WORK_DIR_LIMIT,
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
    (exit 124), which is what ends it when this process is gone, and a kernel
    timer kills it ``KERNEL_DEADLINE_MARGIN`` later still (when the kernel
    layer runs).  The layer is the best rung of the ladder this system offers
    (see ``isolation_report``), or the one ``TOOLSCRIPT_EXEC_LAYER`` forces.
    ``require_isolation``: refuse (``UserError``, exit code 2) when only the
    in-process guard is available.  ``workspace``: a directory the script runs
    in (its working directory and ``TOOLSCRIPT_WORKSPACE``) and may also read
    and write; its files do not count towards ``work_dir_limit``.  ``work_dir_limit``: bytes the script's files may
    take together (see ``WORK_DIR_LIMIT``); past it the script is stopped
    with a message, exit code 1.
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
    process.check_timeout(timeout)
    gw_host, gw_port = process.gateway_address(gateway_url)
    if workspace is not None:
        if not os.path.isdir(workspace):
            raise UserError(f"the workspace {workspace!r} is not a directory; create it or pass another one")
        workspace = os.path.realpath(workspace)
    guard_on = os.environ.get(GUARD_ENV, "").strip().lower() != "off"
    plan = _plan(bool(gateway_url), namespaces, guard_on)
    if require_isolation and plan.layer == "guard":
        raise UserError(
            "exec: isolation is required, but only the in-process guard is available here (no Landlock, no bubblewrap, "
            "no user namespaces); use Linux >= 5.13 with Landlock, or install bubblewrap, or drop --require-isolation",
            exit_code=2,
        )
    prefix = plan.prefix
    mode = plan.mode
    cpu = max(1, int(timeout + 0.999) + 1)
    wall_ms = int((timeout + WATCHDOG_MARGIN) * 1000)
    logger.info("exec: timeout %gs", timeout)

    root = process.make_temp_dir("exec")
    group: Optional[cgroups.Group] = None
    mover: Optional[_Mover] = None
    try:
        group = cgroups.create("exec", TASK_LIMIT) if sys.platform.startswith("linux") else None
        if group is None:
            mode = mode.replace(CGROUP_MODE + "+", "")  # the plan expected one, but it could not be made
        # With the cgroup's pids.max, no RLIMIT_NPROC (and no scan of every process to set it).
        limits = f"{cpu},{int(memory_limit)},{FILE_SIZE_LIMIT},{OPEN_FILES_LIMIT},{0 if group else _thread_allowance()},{wall_ms}"
        lib, work = os.path.join(root, "lib"), os.path.join(root, "work")
        os.mkdir(lib, 0o700)
        os.mkdir(work, 0o700)
        kernel = _kernel_policy(plan, lib, work, workspace, gw_host, gw_port, wall_ms + int(KERNEL_DEADLINE_MARGIN * 1000))
        signal_file = os.path.join(root, SIGNAL_NAME)
        # Started directly (no unshare or bwrap in between), the child sets its own parent-death signal: then no
        # preexec_fn, and the start is a vfork instead of a fork of this process.
        child_sets_pdeathsig = kernel is not None and not prefix and plan.layer != "bubblewrap"
        if kernel is not None:
            kernel["signalFile"] = signal_file  # where a PID namespace's init says which signal killed the script
            if child_sets_pdeathsig:
                kernel["parentPid"] = os.getpid()
                if group is not None:
                    # The child joins before Landlock (still no preexec_fn); where joining itself is slow, we move it.
                    kernel["cgroup"] = {"name": group.name, "join": group.self_join if group.fast_self_join else None}
                    mover = None if group.fast_self_join else _Mover(group)
        policy = {"confine": kernel, "guard": guard_on, "workspace": workspace}
        files = {
            GUARD_NAME: process.package_source("guard.py"),
            process.CONFINE_NAME: process.package_source("confine.py"),
            POLICY_NAME: marshal.dumps(policy, 4),  # read by the guard without importing json
            RUNTIME_NAME: process.package_source("runtime.py"),
            NAMES_NAME: json.dumps(names if isinstance(names, dict) else {"servers": {}}).encode("utf-8"),
            CODE_NAME: code.encode("utf-8", "surrogateescape"),
        }
        files.update(_precompiled(resolved))
        os.mkdir(os.path.join(lib, "__pycache__"), 0o700)
        for name, data in files.items():
            with open(os.path.join(lib, name), "wb") as f:
                f.write(data)
        if plan.layer == "bubblewrap" and plan.bwrap:
            resolved = os.path.realpath(resolved)  # the interpreter itself, not a venv's link to it
            prefix = _bwrap_argv(plan.bwrap, resolved, lib, work, workspace, bool(gateway_url))
        argv: List[str] = list(prefix or ()) + [
            resolved, "-I", "-S", "-B", "-u", "-X", "utf8",
            os.path.join(lib, GUARD_NAME), lib, work, os.path.join(lib, CODE_NAME), filename,
            gw_host, gw_port, limits,
        ] + [str(a) for a in args]
        logger.debug("exec: mode %s, argv %s", mode, argv)
        exit_code, child = process.supervise(
            argv,
            cwd=workspace or work,  # relative paths in the script are the workspace's (bubblewrap: --chdir)
            env=_child_env(work, gateway_url, workspace),
            stdout=stdout,
            stderr=stderr,
            timeout=timeout,
            max_output=max_output,
            # In a PID namespace the script is PID 1, which ignores SIGTERM: no point waiting for it there.
            grace=0.0 if plan.namespaces else kill_grace,
            signal_message=lambda signum: _signal_message(signum, cpu, memory_limit),
            die_with_parent_here=not child_sets_pdeathsig,
            # Started through unshare or bwrap, the child joins before it runs them: they fork at once, and a
            # move takes only the process moved, not the children it already has.
            preexec=group.joiner() if group is not None and not child_sets_pdeathsig else None,
            on_start=mover.start if mover is not None else None,
            watch=_limits_watch(work, work_dir_limit, count_tasks=group is None and _is_root()),
        )
        signum = _signal_reported_by_init(signal_file)
        if signum and exit_code == 128 + signum and not child.killed:
            process.write_text(stderr, _signal_message(signum, cpu, memory_limit) + "\n")
    finally:
        if mover is not None:
            mover.join()
        if group is not None:
            group.remove()
        process.remove_tree(root)
    return ExecResult(exit_code, mode, child.timed_out, child.truncated, process.elapsed_ms(started), child.pgid)
