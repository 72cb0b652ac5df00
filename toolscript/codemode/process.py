"""Running a script runner as a child process: what ``sandbox`` (Python) and ``deno`` (TypeScript) share.

* :func:`supervise` starts the runner in its own session, streams its output
  (capped), enforces the wall-clock timeout (SIGTERM, then SIGKILL to the
  whole process group, exit status 124), checks the limits no kernel counts
  (``watch``: the size of the work dir, say) every ``WATCH_INTERVAL`` seconds,
  and leaves nothing of the group behind when it returns or raises.
* The runner dies with us: on Linux it gets ``PR_SET_PDEATHSIG=SIGKILL``, so
  when the thread that started it ends -- ``exec`` killed by SIGKILL, say --
  the kernel kills it.  macOS has no such signal (see :func:`die_with_parent`).
* :func:`make_temp_dir` names each temp dir after its owner's pid
  (``toolscript-exec-<pid>-XXXXXXXX``) and first removes the dirs of owners
  that are gone, which is how a SIGKILLed ``exec``'s dir is cleaned up.
* :func:`terminate_on_signals` turns SIGTERM, SIGHUP and SIGINT into a
  :class:`Terminated` exception in the main thread, so the ``finally`` blocks
  that kill the child and remove its temp dir run before the process exits.
"""

import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from typing import BinaryIO, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from toolscript import log
from toolscript.errors import UserError
from toolscript.system import cgroups

logger = log.get("codemode.process")

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_OUTPUT = 1_000_000
KILL_GRACE = 0.3  # seconds between SIGTERM and SIGKILL
READER_JOIN = 5.0  # seconds to wait for the output pipes to drain after the child died
GROUP_GONE_WAIT = 2.0  # seconds to wait for killed processes outside our reach (a namespace's PID 1) to vanish
EXIT_TIMEOUT = 124
EXIT_TRUNCATED = 1
EXIT_LIMIT = 1  # a limit the parent checks (the work dir's size, say) stopped the script
WATCH_INTERVAL = 0.1  # seconds between two looks of a ``watch`` (see supervise)
TERMINATING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))
TEMP_KINDS = ("exec", "deno")
LAYER_ENV = "TOOLSCRIPT_EXEC_LAYER"  # landlock | bubblewrap | namespaces | guard: force a rung of the isolation ladder
WORKSPACE_ENV = "TOOLSCRIPT_WORKSPACE"  # set in the script's environment to its --workspace, its working directory
_OWNED_TEMP_DIR = re.compile(r"toolscript-(?:%s)-(\d+)-[a-z0-9_]+\Z" % "|".join(TEMP_KINDS))
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)


class ExecResult(NamedTuple):  # a NamedTuple, not a dataclass: dataclasses costs ~5 ms to import on exec's path
    exit_code: int
    # Every layer that ran, e.g. "landlock(abi 7)+seccomp+guard", "bubblewrap+seccomp+guard",
    # "namespace(user,mount,pid,net)+guard", "guard" ("+guard-off" under TOOLSCRIPT_EXEC_GUARD=off),
    # "landlock(abi 7)+seccomp+deno-permissions", "deno-permissions", or "none" (not run).
    mode: str
    timed_out: bool
    truncated: bool
    duration_ms: int
    pid: int = 0  # the child's pid, also its process group id (0 when nothing ran)


def elapsed_ms(started: float) -> int:
    """Milliseconds since ``started`` (a ``time.monotonic()`` value)."""
    return int((time.monotonic() - started) * 1000)


def signal_name(signum: int) -> str:
    """``SIGKILL`` for 9; ``signal 99`` for a number with no name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def check_timeout(timeout: float) -> None:
    """``UserError`` unless ``timeout`` is a positive, finite number of seconds."""
    if not (0 < timeout < float("inf")):
        raise UserError(f"the timeout must be a positive number of seconds, not {timeout!r}")


def gateway_address(url: Optional[str]) -> Tuple[str, str]:
    """(host, port) of ``http://host:port/t/TOKEN``; ("", "") without a URL; ``UserError`` for anything else."""
    if not url:
        return "", ""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise UserError(f"the gateway URL must look like http://127.0.0.1:PORT/t/TOKEN, not {url!r}")
    try:
        port = parts.port or 80
    except ValueError:
        raise UserError(f"the gateway URL has a bad port: {url!r}") from None
    return parts.hostname, str(port)


# -- temp dirs ------------------------------------------------------------------------------------


def make_temp_dir(kind: str) -> str:
    """A fresh private dir ``<tmp>/toolscript-<kind>-<our pid>-XXXXXXXX`` (its real path).

    First sweeps the dirs whose owner is gone (:func:`sweep_temp_dirs`).
    """
    if kind not in TEMP_KINDS:
        raise ValueError(f"unknown temp dir kind {kind!r}")
    sweep_temp_dirs()
    return os.path.realpath(tempfile.mkdtemp(prefix=f"toolscript-{kind}-{os.getpid()}-"))


def sweep_temp_dirs(directory: Optional[str] = None) -> List[str]:
    """Remove the temp dirs left by runs whose owner process is gone; return their paths.

    Only ours: in the system temp dir (or ``directory``), named
    ``toolscript-exec-<pid>-*`` / ``toolscript-deno-<pid>-*``, real
    directories (not links) owned by this uid, whose ``<pid>`` is not a live
    process.  A dir whose pid was reused by another process stays until that
    one ends too.
    """
    base = directory or tempfile.gettempdir()
    uid = os.getuid() if hasattr(os, "getuid") else None
    removed: List[str] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        match = _OWNED_TEMP_DIR.match(entry.name)
        if not match or cgroups.alive(int(match.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or (uid is not None and info.st_uid != uid):
            continue
        logger.debug("removing %s, left by process %s which is gone", entry.path, match.group(1))
        remove_tree(entry.path, quiet=True)  # another run's leftover (a mount inside, say) is no concern of this one
        removed.append(entry.path)
    return removed


def remove_tree(path: str, quiet: bool = False) -> None:
    """rmtree that also gets past directories the script made read-only or unreadable (``quiet``: no warning)."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    for dirpath, dirnames, _ in os.walk(path):
        for name in [""] + dirnames if dirpath == path else dirnames:
            target = os.path.join(dirpath, name) if name else dirpath
            try:
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        (logger.debug if quiet else logger.warning)("could not remove the sandbox's temp dir %s", path)


# -- the files a run copies into its temp dir -----------------------------------------------------

CONFINE_NAME = "_toolscript_confine.py"  # confine.py's name in a run's temp dir (the guard imports it by that name)
_SOURCES: Dict[str, bytes] = {}


def package_source(name: str) -> bytes:
    """The bytes of ``toolscript/codemode/<name>`` (guard.py, confine.py, runtime.py), from the zipapp too; kept once read."""
    if name not in _SOURCES:
        # What pkgutil.get_data does, without importing pkgutil (and importlib.util, ~6 ms).
        from toolscript import codemode

        loader = getattr(codemode.__spec__, "loader", None)
        try:
            data = loader.get_data(os.path.join(os.path.dirname(codemode.__file__), name))  # type: ignore[union-attr]
        except (AttributeError, OSError) as exc:
            raise UserError(f"toolscript is incomplete: toolscript/codemode/{name} is missing; reinstall it") from exc
        _SOURCES[name] = data
    return _SOURCES[name]


# -- what the kernel offers -------------------------------------------------------------------------

_LANDLOCK_CREATE_RULESET = {"x86_64": 444, "aarch64": 444}  # the syscall number; LANDLOCK_CREATE_RULESET_VERSION = 1
_PR_GET_SECCOMP = 21


PROBE_CACHE = "kernel-probe"  # under the state dir: what this boot's kernel offers


_KERNEL: List[dict] = []  # [what kernel_probe found], once per process
_KERNEL_LOCK = threading.Lock()


def kernel_probe() -> dict:
    """What this kernel offers: ``{"landlockAbi": int (0 = none), "seccomp": bool, "arch": str}``; asked once per process.

    Both runners ask it here, in ``exec``'s own process, without compiling
    ``confine.py`` (about 6 ms): the child's ``confine.apply`` is what
    applies the layers.  The answer is also kept in the state dir for the
    rest of this boot (:func:`_probe_this_boot`).
    """
    with _KERNEL_LOCK:
        if not _KERNEL:
            _KERNEL.append(_probe_this_boot())
        return dict(_KERNEL[0])


def _probe_this_boot() -> dict:
    """The probe, kept in the state dir for the rest of this boot.

    Landlock and seccomp cannot change without a reboot
    (``/proc/sys/kernel/random/boot_id`` does), so the cache spares each run
    loading ctypes: a few ms.  A wrong cache could only make the child's own
    ``confine.apply`` fail loudly, never weaken it.
    """
    key = _boot_key()
    cached = _read_probe_cache(key) if key else None
    if cached is not None:
        return cached
    result = _probe_kernel()
    if key:
        _write_probe_cache(key, result)
    return result


def _boot_key() -> Optional[str]:
    """This boot and kernel (``boot_id``, release, machine), or None where there is no boot id to read."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            boot = f.read(64).decode("ascii", "replace").strip()
    except OSError:
        return None
    uname = os.uname()
    return f"{boot} {uname.release} {uname.machine}" if boot else None


def _probe_cache_path() -> str:
    """Where the cache lives; the state dir is not created for it (``doctor`` only looks), exec creates it anyway."""
    from toolscript import paths

    return os.path.join(paths.state_dir_path(), PROBE_CACHE)


def _read_probe_cache(key: str) -> Optional[dict]:
    try:
        with open(_probe_cache_path(), "r", encoding="ascii") as f:
            lines = f.read(512).splitlines()
        if len(lines) == 3 and lines[0] == key:
            return {"landlockAbi": max(0, int(lines[1])), "seccomp": lines[2] == "1", "arch": key.rsplit(" ", 1)[-1]}
    except (OSError, ValueError, UserError):
        pass
    return None


def _write_probe_cache(key: str, result: dict) -> None:
    try:
        path = _probe_cache_path()
        if not os.path.isdir(os.path.dirname(path)):
            return
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "w", encoding="ascii") as f:
            f.write(f"{key}\n{int(result['landlockAbi'])}\n{int(bool(result['seccomp']))}\n")
        os.replace(partial, path)
    except (OSError, UserError) as exc:
        logger.debug("kernel probe not cached (%s)", exc)


def _probe_kernel() -> dict:
    machine = os.uname().machine if hasattr(os, "uname") else sys.platform
    result = {"landlockAbi": 0, "seccomp": False, "arch": machine}
    prctl = _prctl()
    number = _LANDLOCK_CREATE_RULESET.get(machine)
    if prctl is None or number is None:
        return result
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    result["landlockAbi"] = max(0, int(libc.syscall(ctypes.c_long(number), None, ctypes.c_size_t(0), ctypes.c_uint32(1))))
    result["seccomp"] = prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) >= 0
    return result


# -- dying together ---------------------------------------------------------------------------------

_PRCTL_LOCK = threading.Lock()
_PRCTL: list = []  # [the libc prctl function or None], resolved once


def _prctl() -> Optional[Callable[..., int]]:
    with _PRCTL_LOCK:
        if not _PRCTL:
            function = None
            if sys.platform.startswith("linux"):
                try:
                    import ctypes

                    function = ctypes.CDLL(None, use_errno=True).prctl
                    function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
                    function.restype = ctypes.c_int
                except (ImportError, OSError, AttributeError) as exc:
                    logger.debug("no prctl here (%s): a runner will outlive a killed parent", exc)
                    function = None
            _PRCTL.append(function)
        return _PRCTL[0]


def die_with_parent() -> Optional[Callable[[], None]]:
    """A ``preexec_fn`` that makes the child get SIGKILL when the thread that started it ends, or None.

    Linux only (``PR_SET_PDEATHSIG``).  It survives ``execve`` (so it holds
    for ``unshare`` or ``deno``), but not ``fork``: ``unshare --kill-child``
    passes it on to the namespace's PID 1, and the Python guard refuses to
    fork.  The thread matters, not the process: :func:`supervise` starts and
    waits for the child on the same thread.  If the parent died between the
    fork and the ``prctl``, the child kills itself.  macOS has no equivalent:
    there the Python guard's own wall-clock watchdog ends the script.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), _SIGKILL)

    return preexec


def _preexec(*steps: Optional[Callable[[], None]]) -> Optional[Callable[[], None]]:
    """One ``preexec_fn`` running ``steps`` in order (None when there is none: then the start can be a vfork)."""
    todo = [step for step in steps if step is not None]
    if not todo:
        return None
    if len(todo) == 1:
        return todo[0]

    def run_all() -> None:
        for step in todo:
            step()

    return run_all


class Terminated(BaseException):
    """A terminating signal arrived (see :func:`terminate_on_signals`); ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def terminate_on_signals(signums: Sequence[int] = TERMINATING_SIGNALS) -> Iterator[None]:
    """Inside the block, the first of ``signums`` raises :class:`Terminated` in the main thread.

    The exception unwinds through :func:`supervise` (which kills the child's
    group) and the runner's ``finally`` (which removes its temp dir); the
    caller then exits with 128 + the signal.  Later signals are ignored until
    the block ends, so that cleanup is not interrupted.  Outside the main
    thread (where Python cannot handle signals) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: List[int] = []

    def handler(signum: int, frame: object) -> None:
        if fired:
            return
        fired.append(signum)
        raise Terminated(signum)

    previous = {}
    try:
        for signum in signums:
            previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


# -- supervising the runner ------------------------------------------------------------------------


class Child:
    """The running child: its output pumps, its process group, and how it ended."""

    def __init__(self, proc: subprocess.Popen, stdout: BinaryIO, stderr: BinaryIO, max_output: int, grace: float) -> None:
        self.proc = proc
        self.grace = grace
        self.pgid = proc.pid
        self.max_output = max_output
        self.forwarded = 0
        self.truncated = False
        self.timed_out = False
        self.killed = False  # by us (timeout, output cap, broken pipe, a watched limit)
        self.limit_message = ""  # what a watched limit said when it stopped the child
        self.reaped = False
        self.lock = threading.Lock()
        self.exited = threading.Event()
        self.readers = [
            threading.Thread(target=self._pump, args=(proc.stdout, stdout), name="exec-stdout", daemon=True),
            threading.Thread(target=self._pump, args=(proc.stderr, stderr), name="exec-stderr", daemon=True),
        ]
        self.out_lock = threading.Lock()
        self.stderr = stderr
        for reader in self.readers:
            reader.start()

    def signal_group(self, signum: int) -> None:
        """Signal the whole process group, never after the leader was reaped (its id could be reused)."""
        with self.lock:
            if self.reaped:
                return
            try:
                os.killpg(self.pgid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self, grace: Optional[float] = None) -> None:
        """SIGTERM the group, then SIGKILL it after ``grace`` seconds (at once if the child is gone by then)."""
        self.killed = True
        grace = self.grace if grace is None else grace
        if grace > 0:
            self.signal_group(signal.SIGTERM)
            self.exited.wait(grace)
        self.signal_group(_SIGKILL)

    def on_timeout(self) -> None:
        if self.exited.is_set():
            return
        self.timed_out = True
        self.stop()

    def start_watch(self, watch: Callable[[int], Optional[str]], interval: float) -> None:
        """Call ``watch(pid)`` every ``interval`` seconds until the child exits; a message from it stops the child."""

        def loop() -> None:
            while not self.exited.wait(interval):
                started = time.monotonic()
                try:
                    message = watch(self.proc.pid)
                except Exception:  # a broken check must not leave the limit unwatched silently
                    logger.exception("exec: checking the script's limits failed; stopping it")
                    message = "toolscript: the script was stopped: its limits could not be checked"
                if message and not self.exited.is_set():
                    self.limit_message = message
                    self.stop(grace=0)
                    return
                # A slow look (a work dir of many files) waits longer before the next: the parent's CPU stays small.
                spent = time.monotonic() - started
                if spent * 4 > interval:
                    self.exited.wait(spent * 4 - interval)

        threading.Thread(target=loop, name="exec-watch", daemon=True).start()

    def _pump(self, pipe, stream: BinaryIO) -> None:
        fd = pipe.fileno()
        broken = False
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self.out_lock:
                if self.truncated or broken:
                    continue  # keep draining so the child never blocks on a full pipe
                room = self.max_output - self.forwarded
                if len(chunk) > room:
                    chunk = chunk[: max(room, 0)]
                    self.truncated = True
                self.forwarded += len(chunk)
                try:
                    if chunk:
                        stream.write(chunk)
                        stream.flush()
                    if self.truncated:
                        self.stderr.write(f"\n[toolscript: output truncated after {self.max_output} bytes]\n".encode())
                        self.stderr.flush()
                except (BrokenPipeError, OSError, ValueError):
                    broken = True  # whoever reads us went away: stop the script, as a pipe would
            if self.truncated or broken:
                threading.Thread(target=self.stop, kwargs={"grace": 0}, daemon=True).start()

    def wait(self) -> int:
        """Wait for the child; kill what is left of its group; reap it; drain the pipes."""
        pid = self.proc.pid
        if hasattr(os, "waitid") and hasattr(os, "WNOWAIT"):
            while True:
                try:
                    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # leaves the zombie: the group id stays ours
                    break
                except InterruptedError:
                    continue
                except ChildProcessError:
                    break
            self.exited.set()
            self.signal_group(_SIGKILL)
            with self.lock:
                self.proc.wait()
                self.reaped = True
        else:  # pragma: no cover - macOS has no waitid
            self.proc.wait()
            self.exited.set()
            self.signal_group(_SIGKILL)
            with self.lock:
                self.reaped = True
        self._wait_group_gone()
        for reader in self.readers:
            reader.join(READER_JOIN)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is None:
                continue
            try:
                pipe.close()
            except OSError:
                pass
        return self.proc.returncode

    def _wait_group_gone(self, limit: float = GROUP_GONE_WAIT) -> None:
        """Wait (bounded) until no process of the group is left.

        After a kill, the namespace's PID 1 is reaped by the system's init, not
        by us (its parent was ``unshare``): give that a moment, so that when
        ``supervise`` returns nothing of the script is still there.
        """
        deadline = time.monotonic() + limit
        while True:
            try:
                os.killpg(self.pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            if time.monotonic() > deadline:
                logger.debug("exec: process group %d still has members after %.1fs", self.pgid, limit)
                return
            time.sleep(0.005)

    def kill_now(self) -> None:
        """For an interrupted parent: SIGKILL the group and reap."""
        self.killed = True
        self.signal_group(_SIGKILL)
        with self.lock:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
            self.reaped = True


def write_text(stream: BinaryIO, text: str) -> None:
    """Write ``text`` (UTF-8) to a binary stream that may already be closed."""
    try:
        stream.write(text.encode("utf-8", "replace"))
        stream.flush()
    except (OSError, ValueError):
        pass


def supervise(
    argv: Sequence[str],
    *,
    cwd: str,
    env: dict,
    stdout: BinaryIO,
    stderr: BinaryIO,
    timeout: float,
    max_output: int,
    grace: float,
    signal_message: Callable[[int], str],
    die_with_parent_here: bool = True,
    preexec: Optional[Callable[[], None]] = None,
    on_start: Optional[Callable[[int], None]] = None,
    watch: Optional[Callable[[int], Optional[str]]] = None,
    watch_interval: float = WATCH_INTERVAL,
) -> Tuple[int, Child]:
    """Run ``argv`` as a script runner: its own session, output streamed and capped, a wall-clock limit.

    Returns ``(exit_code, child)``: the script's own status, or 124 after
    ``timeout`` (with a notice on ``stderr``), 1 when ``max_output`` stopped it,
    128 + N when signal N killed it (``signal_message(N)`` on ``stderr``
    unless we sent it).  ``child`` tells ``timed_out``, ``truncated`` and its
    process group id ``pgid``; nothing of the group is left when this returns,
    also when it raises (a :class:`Terminated` included).  The child dies with
    the calling thread (:func:`die_with_parent`), so call this from a thread
    that lives until it returns.  ``die_with_parent_here=False``: the child
    sets that up itself (``confine.apply``'s ``parentPid``), and without a
    ``preexec_fn`` the start is a vfork, not a fork of this whole process.
    ``preexec``: more to do in the child before it runs ``argv`` (joining a
    cgroup).  ``on_start(pid)``: called as soon as the child runs.
    ``watch(pid)``: a limit no kernel enforces, asked every
    ``watch_interval`` seconds; when it returns a message the child is
    killed, the message goes to ``stderr`` and the exit code is 1.
    """
    child: Optional[Child] = None
    try:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                preexec_fn=_preexec(die_with_parent() if die_with_parent_here else None, preexec),
            )
        except OSError as exc:
            raise UserError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
        child = Child(proc, stdout, stderr, max_output, grace)
        timer = threading.Timer(max(timeout, 0.001), child.on_timeout)
        timer.daemon = True
        timer.start()
        if watch is not None:
            child.start_watch(watch, watch_interval)
        if on_start is not None:
            on_start(proc.pid)  # last: it may move the child into a cgroup, which holds up every new thread meanwhile
        try:
            returncode = child.wait()
        finally:
            timer.cancel()
    except BaseException:
        if child is not None and not child.reaped:
            child.kill_now()
        raise

    if child.timed_out:
        write_text(stderr, f"toolscript: script timed out after {timeout:g}s (--timeout)\n")
        exit_code = EXIT_TIMEOUT
    elif child.limit_message:
        write_text(stderr, "\n" + child.limit_message + "\n")
        exit_code = EXIT_LIMIT
    elif child.truncated and child.killed:
        exit_code = EXIT_TRUNCATED
    elif returncode < 0:
        signum = -returncode
        if not child.killed:
            write_text(stderr, signal_message(signum) + "\n")
        exit_code = 128 + signum
    else:
        exit_code = returncode
    return exit_code, child
