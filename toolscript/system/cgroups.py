"""What a process started, all of it: a cgroup where this system lets us make one, else its tree in /proc.

Two users: ``exec`` caps the tasks (threads) of a script, and the gateway ends
every process an MCP server started when it stops the server.

A cgroup holds a process and everything it starts, whatever they do: its
``pids.max`` binds root too (``RLIMIT_NPROC`` does not: the kernel exempts uid
0), and a ``setsid`` grandchild that left the server's process group, or a
daemon that double-forked away from its parent, is still listed in its
``cgroup.procs``.  It needs a hierarchy with the pids controller that we may
write:

* cgroup v2 at ``/sys/fs/cgroup`` with ``pids`` in the root's
  ``cgroup.subtree_control`` (systemd machines; root, or a user whose
  ``/sys/fs/cgroup`` is writable);
* cgroup v1's pids hierarchy at ``/sys/fs/cgroup/pids`` (hybrid and older setups; root).

Groups are made directly under the hierarchy's root, named
``toolscript-<kind>-<owner pid>-<random>``; :func:`create` first removes the
empty ones whose owner is gone (an ``exec`` killed with SIGKILL cannot remove
its own).  Where no hierarchy is writable (a user without a delegated cgroup,
a container with a read-only ``/sys/fs/cgroup``) :func:`create` returns None
and the callers fall back: ``exec`` to ``RLIMIT_NPROC`` (non-root) or to
counting the script's tasks (root, see ``sandbox``), a server's stop to
:func:`descendants`, the process tree read from /proc while its parents live
(a daemon whose parent already exited is out of reach there).
"""

import os
import signal
import time
from typing import Callable, List, Optional, Tuple

from toolscript import log

logger = log.get("system.cgroups")

V2_ROOT = "/sys/fs/cgroup"
V1_PIDS_ROOT = "/sys/fs/cgroup/pids"
KINDS = ("exec", "server")
KILL_WAIT = 2.0  # seconds to wait for a killed group to empty before giving up on removing it


def hierarchy() -> Optional[Tuple[str, str]]:
    """``(root dir, "v2" | "v1")`` of a pids-controller hierarchy this process may write, or None."""
    try:
        with open(os.path.join(V2_ROOT, "cgroup.subtree_control"), "rb") as f:
            controllers = f.read().split()
        if b"pids" in controllers and os.access(V2_ROOT, os.W_OK):
            return V2_ROOT, "v2"
    except OSError:
        pass
    if os.path.exists(os.path.join(V1_PIDS_ROOT, "tasks")) and os.access(V1_PIDS_ROOT, os.W_OK):
        return V1_PIDS_ROOT, "v1"
    return None


class Group:
    """One cgroup we made: join it, list it, kill what is in it, remove it."""

    def __init__(self, path: str, version: str) -> None:
        self.path = path
        self.version = version
        self.procs = os.path.join(path, "cgroup.procs")
        self.name = "/" + os.path.basename(path)  # how /proc/PID/cgroup names it (made under the hierarchy's root)
        # Where a process with a single thread moves itself by writing "0".  On v1 that is the thread's own
        # entry, ``tasks``: moving just the calling thread takes no global lock, while a move through
        # cgroup.procs waits for an RCU grace period (~10 ms) and holds up every fork on the machine meanwhile.
        # v2 has only cgroup.procs for a domain cgroup.
        self.self_join = os.path.join(path, "tasks") if version == "v1" else self.procs
        self.fast_self_join = version == "v1"

    def __repr__(self) -> str:
        return f"Group({self.path!r})"

    def joiner(self) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the new child (one thread, after the fork) into this group before it runs its program."""
        procs = self.self_join

        def join() -> None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

        return join

    def add(self, pid: int) -> None:
        """Move process ``pid`` (all its threads, not its children) into this group.

        A move waits for an RCU grace period (about 10 ms on cgroup v1): the
        caller may want it off its own path (see ``sandbox``).
        """
        with open(self.procs, "w") as f:
            f.write(str(pid))

    def pids(self) -> List[int]:
        """The processes in the group now."""
        try:
            with open(self.procs, "rb") as f:
                return [int(line) for line in f.read().split()]
        except (OSError, ValueError):
            return []

    def signal_all(self, signum: int) -> int:
        """Send ``signum`` to every process in the group; how many there were.

        Each pid is checked to be still in this group through a pidfd where
        the system has them, so a pid reused by another process in between is
        never signalled.
        """
        pids = self.pids()
        for pid in pids:
            _signal_member(pid, signum, self.path)
        return len(pids)

    def kill(self, wait: float = KILL_WAIT) -> bool:
        """SIGKILL everything in the group until it is empty (or ``wait`` seconds pass); True when empty."""
        deadline = time.monotonic() + wait
        kill_file = os.path.join(self.path, "cgroup.kill")  # v2 (Linux 5.14+): the kernel kills them all at once
        while True:
            if self.version == "v2" and os.path.exists(kill_file):
                try:
                    with open(kill_file, "w") as f:
                        f.write("1")
                except OSError:
                    self.signal_all(signal.SIGKILL)
            elif not self.signal_all(signal.SIGKILL):
                return True
            if not self.pids():
                return True
            if time.monotonic() > deadline:
                logger.debug("cgroup %s still has processes after %.1fs", self.path, wait)
                return False
            time.sleep(0.005)

    def remove(self) -> None:
        """Kill what is left in the group and remove it (a leftover is swept by a later :func:`create`)."""
        for _ in range(2):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                self.kill()
        logger.debug("could not remove the cgroup %s", self.path)


def _signal_member(pid: int, signum: int, group_path: str) -> None:
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    if pidfd_open is None or send is None:
        try:
            os.kill(pid, signum)
        except OSError:
            pass
        return
    try:
        fd = pidfd_open(pid)
    except OSError:
        return  # gone already
    try:
        # The pidfd pins this very process: if it is still in the group now, the signal reaches it and no other.
        if _in_group(pid, group_path):
            send(fd, signum)
    except OSError:
        pass
    finally:
        os.close(fd)


def _in_group(pid: int, group_path: str) -> bool:
    name = "/" + os.path.basename(group_path)  # Group.name
    try:
        with open(f"/proc/{pid}/cgroup", "r", encoding="utf-8", errors="replace") as f:
            return any(line.rstrip("\n").endswith(":" + name) for line in f)
    except OSError:
        return False


def create(kind: str, pids_max: int = 0) -> Optional[Group]:
    """A new cgroup for ``kind`` (``exec`` or ``server``) with ``pids.max`` set when > 0; None where we cannot.

    None also when the hierarchy lets us make the directory but offers no
    ``pids.max`` in it (a v2 cgroup whose parent does not delegate the pids
    controller): a cap we cannot set is no cap.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown cgroup kind {kind!r}")
    found = hierarchy()
    if found is None:
        return None
    root, version = found
    sweep(root)
    path = os.path.join(root, f"toolscript-{kind}-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.mkdir(path, 0o755)
    except OSError as exc:
        logger.debug("no cgroup (%s): %s", path, exc)
        return None
    group = Group(path, version)
    if pids_max > 0:
        try:
            with open(os.path.join(path, "pids.max"), "w") as f:
                f.write(str(int(pids_max)))
        except OSError as exc:
            logger.debug("no pids.max in %s (%s): no cgroup", path, exc)
            group.remove()
            return None
    return group


def sweep(root: str) -> List[str]:
    """Remove our empty cgroups under ``root`` whose owner process is gone; return their paths."""
    removed: List[str] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        owner = _owner(entry.name)
        if owner is None or alive(owner):
            continue
        try:
            os.rmdir(entry.path)  # fails (EBUSY) while anything is still in it
            removed.append(entry.path)
        except OSError:
            continue
    return removed


def _owner(name: str) -> Optional[int]:
    """The owner pid of a group named ``toolscript-<kind>-<pid>-<hex>``; None for any other name.

    By hand, not a regular expression: compiling one costs each exec run about half a millisecond.
    """
    parts = name.split("-")
    if len(parts) != 4 or parts[0] != "toolscript" or parts[1] not in KINDS or not parts[2].isdigit():
        return None
    if not parts[3] or parts[3].strip("0123456789abcdef"):
        return None
    return int(parts[2])


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's included): what tells a leftover's owner is gone."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0
    return True


# -- the process tree, where there is no cgroup ------------------------------------------------------


def children(pid: int) -> List[int]:
    """The children of ``pid`` now (every thread's, from /proc; a parent-pid scan where that file is missing)."""
    found: List[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found += [int(p) for p in f.read().split()]
        except FileNotFoundError:
            return _children_by_scan(pid)  # a kernel without CONFIG_PROC_CHILDREN
        except (OSError, ValueError):
            continue
    return found


def _children_by_scan(parent: int) -> List[int]:
    found: List[int] = []
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return found
    for name in names:
        fields = _stat_fields(int(name))
        if fields and int(fields[1]) == parent:
            found.append(int(name))
    return found


def descendants(pid: int) -> List[int]:
    """Every process below ``pid`` now, children first."""
    found: List[int] = []
    frontier = [pid]
    while frontier:
        kids = [k for k in children(frontier.pop()) if k not in found and k != pid]
        found += kids
        frontier += kids
    return found


def _stat_fields(pid: int) -> Optional[List[bytes]]:
    """``/proc/PID/stat`` from the field after the command name on (state is [0], ppid [1]), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def identity(pid: int) -> Optional[Tuple[int, int]]:
    """``(pid, start time)``: what tells a process apart from a later one with the same pid; None when gone."""
    fields = _stat_fields(pid)
    if not fields or len(fields) < 20 or fields[0] == b"Z":
        return None  # gone, or a zombie: it runs nothing any more
    return pid, int(fields[19])  # starttime, field 22 of stat


def task_count(pid: int) -> int:
    """Threads of ``pid`` and of every process below it."""
    total = 0
    for member in [pid] + descendants(pid):
        fields = _stat_fields(member)
        if fields and len(fields) > 17:
            total += int(fields[17])  # num_threads, field 20 of stat
    return total


def signal_identified(identities: List[Tuple[int, int]], signum: int) -> int:
    """Signal those of ``identities`` that are still the same processes; how many were."""
    sent = 0
    for pid, started in identities:
        if identity(pid) != (pid, started):
            continue
        try:
            os.kill(pid, signum)
            sent += 1
        except OSError:
            pass
    return sent
