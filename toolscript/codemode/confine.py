"""Kernel-enforced confinement of a sandboxed child: Landlock, seccomp, a kill timer, no capabilities.

A standalone stdlib module (Python 3.9+, imports nothing of toolscript): it
is copied into the sandbox's lib dir next to the guard.  Two uses:

* ``apply(policy) -> report``: the guard calls it before the script's first
  line (and before it starts any thread: Landlock binds only the calling
  thread);
* a launcher: ``python -I -S confine.py POLICY.json -- PROGRAM ARGS...``
  applies the policy, then ``os.execv``s PROGRAM (Deno runs this way).

In order, nothing of which the confined process can undo:

1. ``PR_SET_NO_NEW_PRIVS`` (no setuid or file-capability gain across exec);
2. a POSIX timer on CLOCK_MONOTONIC that delivers SIGKILL at the deadline
   (it holds when every parent is gone; the filter below denies ``timer_*``);
3. Landlock (Linux >= 5.13; the ABI is probed and used as far as it goes):
   read-only paths, read-write paths (no char/block device nodes), executable
   paths; TCP connect only to the allowed ports and no TCP bind (ABI >= 4);
   no signals to and no abstract unix sockets of processes outside (ABI >= 6);
4. every capability dropped, with ``SECBIT_NOROOT`` locked so that a uid 0
   regains none on exec (root's powers beyond file access: raw sockets,
   renicing or re-limiting others, setting the clock, ...);
5. a seccomp filter (classic BPF, built here): the wrong architecture and x32
   calls are refused, execve/execveat (unless the policy allows exec), fork,
   vfork and clone without CLONE_THREAD (so: threads, no processes), clone3
   (ENOSYS, so glibc falls back to clone), socket() other than TCP over
   IPv4/IPv6, listen() (no server: an unbound socket would bind itself),
   SysV IPC (shm*, msg*, sem*: the host's objects), memory and files no limit
   counts (memfd_create, memfd_secret; sendmsg/sendmmsg, which pass
   descriptors), raising resource limits, and the kernel's attack surface the
   script has no use for (ptrace, mount, keyctl, bpf, perf_event_open,
   userfaultfd, process_vm_*, io_uring_*, open_by_handle_at, modules, kexec,
   unshare/setns, ...).

Before Landlock, when the policy names one, it joins a cgroup, or waits until
the parent moved it in (its ``pids.max`` is the thread limit that binds root
too).

A policy is a dict (the launcher reads it from a JSON file)::

    {"python": true,              # also read the running interpreter's stdlib
     "system": true,              # also SYSTEM_READ_PATHS, DEVICE_READ (read) and DEVICE_WRITE
     "read": [paths], "write": [paths], "execute": [paths],
     "connectPorts": [port], "deadlineMs": 31500,
     "cgroup": {"name": "/toolscript-exec-...", "join": ".../tasks" or None},  # its pids.max caps threads
     "allowExec": false,          # the launcher sets it: it must execv
     "parentPid": 1234,           # die (SIGKILL) when this parent's starting thread ends; gone already: die now
     "landlock": true, "seccomp": true, "dropCapabilities": true}

``"landlock"``/``"seccomp"``: true = required (``ConfineError`` when the
kernel lacks it), false = skip, absent = use it when the kernel has it.
``apply`` never half-applies silently: a requested layer that the kernel
offers but refuses raises ``ConfineError``; a layer the kernel does not offer
is skipped and the report says so (``{"landlockAbi": 0, ...}``).
"""

import os
import sys

__all__ = ["apply", "ConfineError", "python_read_paths", "elf_interpreters", "seccomp_program", "SYSTEM_READ_PATHS", "DEVICE_READ", "DEVICE_WRITE"]


class ConfineError(OSError):
    """A layer the policy asked for could not be set up: the script must not run."""


# -- constants (<linux/landlock.h>, <linux/seccomp.h>, <linux/filter.h>, <linux/audit.h>) -------------

SYS = {  # name: (x86_64, aarch64); None = no such call there
    "landlock_create_ruleset": (444, 444), "landlock_add_rule": (445, 445), "landlock_restrict_self": (446, 446),
    "seccomp": (317, 277), "timer_create": (222, 107), "timer_settime": (223, 110), "timer_delete": (226, 111),
    "capset": (126, 91), "socket": (41, 198), "clone": (56, 220), "clone3": (435, 435), "prlimit64": (302, 261),
}
DENIED = {  # refused with EPERM
    "execve": (59, 221), "execveat": (322, 281), "fork": (57, None), "vfork": (58, None),
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "kcmp": (312, 272),
    "pidfd_getfd": (438, 438), "process_madvise": (440, 440), "process_mrelease": (448, 448),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fspick": (433, 433), "mount_setattr": (442, 442),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "init_module": (175, 105),
    "finit_module": (313, 273), "delete_module": (176, 106),
    "unshare": (272, 97), "setns": (308, 268),
    "reboot": (169, 142), "swapon": (167, 224), "swapoff": (168, 225), "acct": (163, 89), "syslog": (103, 116),
    "settimeofday": (164, 170), "clock_settime": (227, 112), "clock_adjtime": (305, 266), "adjtimex": (159, 171),
    "sethostname": (170, 161), "setdomainname": (171, 162), "quotactl": (179, 60), "fanotify_init": (300, 262),
    "iopl": (172, None), "ioperm": (173, None), "modify_ldt": (154, None), "uselib": (134, None),
    "setrlimit": (160, 164), "timer_create": (222, 107), "timer_settime": (223, 110), "timer_delete": (226, 111),
    # listen() on an unbound socket binds a free port on every address by itself (Landlock's bind rule never
    # sees it) and takes connections from anyone: the script is a client of its gateway, it never listens.
    "listen": (50, 201),
    # SysV IPC lives in the host's IPC namespace: its segments, queues and semaphore sets are the host's.
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    # Memory no limit counts: a memfd's pages are outside RLIMIT_AS until mapped, and a descriptor in flight
    # on a unix socket (sendmsg's SCM_RIGHTS) keeps a file alive that no descriptor table shows.
    "memfd_create": (319, 279), "memfd_secret": (447, 447), "sendmsg": (46, 211), "sendmmsg": (307, 269),
    # File metadata: Landlock has no right for mode, owner, times or extended attributes, so
    # without these a script could chmod/utime/setxattr any file it can name (its user's own
    # anywhere; as root, every file).  Also in the work dir: os.chmod and shutil.copystat fail there.
    "chmod": (90, None), "fchmod": (91, 52), "fchmodat": (268, 53), "fchmodat2": (452, 452),
    "chown": (92, None), "fchown": (93, 55), "lchown": (94, None), "fchownat": (260, 54),
    "utime": (132, None), "utimes": (235, None), "futimesat": (261, None), "utimensat": (280, 88),
    "setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7), "setxattrat": (463, 463),
    "removexattr": (197, 14), "lremovexattr": (198, 15), "fremovexattr": (199, 16), "removexattrat": (466, 466),
}
EXEC_CALLS = ("execve", "execveat")
ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}  # machine: (column in SYS, AUDIT_ARCH_*)
X32_SYSCALL_BIT = 0x40000000

# Landlock access rights
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
FS_ABI1 = (1 << 13) - 1
FS_BY_ABI = {1: FS_ABI1, 2: FS_ABI1 | FS_REFER, 3: FS_ABI1 | FS_REFER | FS_TRUNCATE}
FS_FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV  # what a rule on a non-directory may allow
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
CREATE_RULESET_VERSION = 1
READ = FS_READ_FILE | FS_READ_DIR
WRITE = (FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG
         | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_SYM | FS_REFER | FS_TRUNCATE)  # no MAKE_CHAR/MAKE_BLOCK, no EXECUTE

CGROUP_WAIT = 5.0  # seconds to wait for the parent to move this process into its cgroup
PR_SET_NO_NEW_PRIVS, PR_GET_SECCOMP, PR_SET_SECUREBITS = 38, 21, 28
PR_SET_PDEATHSIG, SIGKILL_NUMBER = 1, 9
SECBITS_LOCKED_NOROOT = 0x2F  # NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP, NO_SETUID_FIXUP_LOCKED, KEEP_CAPS_LOCKED
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
EPERM, ENOSYS = 1, 38
CLONE_THREAD = 0x00010000
AF_INET, AF_INET6, SOCK_STREAM, IPPROTO_TCP = 2, 10, 1, 6
CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGKILL = 1, 0, 9
O_PATH, O_CLOEXEC = 0o10000000, 0o2000000

# Read-only outside the interpreter: shared libraries, the loader's cache, time zones, locales.
SYSTEM_READ_PATHS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache",
                     "/usr/share/zoneinfo", "/etc/localtime", "/usr/share/locale")
DEVICE_READ = ("/dev/zero", "/dev/urandom", "/dev/random")
DEVICE_WRITE = ("/dev/null",)


# -- libc through ctypes -----------------------------------------------------------------------------

_LIBC: list = []  # [(the ctypes module, libc)], loaded once


def _libc():
    """libc's ``syscall`` and ``prctl`` through ctypes (loaded once)."""
    if not _LIBC:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.prctl.restype = ctypes.c_int
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        _LIBC.append((ctypes, libc))
    return _LIBC[0]


def _column():
    arch = ARCHES.get(os.uname().machine)
    return None if arch is None else arch[0]


def _nr(name, table=SYS):
    column = _column()
    return None if column is None else table[name][column]


# -- the read-only set of the running interpreter -----------------------------------------------------


def python_read_paths() -> list:
    """Where this interpreter reads its stdlib, extension modules and libpython from."""
    paths = []
    for entry in sys.path:
        if isinstance(entry, str) and entry.startswith("/") and os.path.exists(entry):
            paths.append(entry)
    version = "python%d.%d" % sys.version_info[:2]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        for sub in ("lib/" + version, "lib64/" + version, "lib/" + version + "/lib-dynload"):
            candidate = os.path.join(prefix, sub)
            if os.path.isdir(candidate):
                paths.append(candidate)
        libdir = os.path.join(prefix, "lib")
        try:
            names = os.listdir(libdir)
        except OSError:
            names = []
        paths += [os.path.join(libdir, n) for n in names if n.startswith("libpython")]  # a shared-libpython build
    return paths


def elf_interpreters(path: str) -> list:
    """The ELF interpreter (``PT_INTERP``, e.g. ld-linux) of the executable ``path``, and its real path.

    Landlock checks the execute right on the loader too: a launched program
    needs it next to its own binary.  [] for a static or non-ELF file.
    """
    import struct

    try:
        with open(path, "rb") as f:
            header = f.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit ELF only
                return []
            endian = "<" if header[5] == 1 else ">"
            phoff, = struct.unpack(endian + "Q", header[32:40])
            phentsize, phnum = struct.unpack(endian + "HH", header[54:58])
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for index in range(phnum):
                entry = table[index * phentsize:(index + 1) * phentsize]
                kind, _, offset, _, _, size = struct.unpack(endian + "IIQQQQ", entry[:40])
                if kind == 3:  # PT_INTERP
                    f.seek(offset)
                    interp = f.read(size).rstrip(b"\0").decode("utf-8", "surrogateescape")
                    return sorted({interp, os.path.realpath(interp)})
    except (OSError, ValueError, struct.error):
        return []
    return []


# -- landlock ----------------------------------------------------------------------------------------


def _landlock(libc, abi, policy):
    """Build the ruleset and restrict this thread; returns what it handles.  Raises ConfineError."""
    import ctypes

    syscall = libc.syscall
    handled_fs = FS_BY_ABI.get(abi, FS_ABI1 | FS_REFER | FS_TRUNCATE | FS_IOCTL_DEV)
    handled_net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    class NetPort(ctypes.Structure):
        _fields_ = [("allowed", ctypes.c_uint64), ("port", ctypes.c_uint64)]

    attr = RulesetAttr(handled_fs, handled_net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = syscall(ctypes.c_long(_nr("landlock_create_ruleset")), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfineError(ctypes.get_errno(), "landlock_create_ruleset failed: " + os.strerror(ctypes.get_errno()))
    rules = []
    try:
        add_rule = _nr("landlock_add_rule")
        grants = [(p, READ) for p in policy.get("read", ())] + [(p, WRITE) for p in policy.get("write", ())]
        grants += [(p, READ | FS_EXECUTE) for p in policy.get("execute", ())]
        for path, access in grants:
            try:
                fd = os.open(path, O_PATH | O_CLOEXEC)
            except OSError:
                continue  # a path this system does not have
            try:
                allowed = (access if _is_dir(fd) else access & FS_FILE_ONLY) & handled_fs
                if not allowed:
                    continue
                rule = PathBeneath(allowed, fd)
                if syscall(ctypes.c_long(add_rule), ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    errno = ctypes.get_errno()
                    raise ConfineError(errno, "landlock_add_rule(%s) failed: %s" % (path, os.strerror(errno)))
                rules.append(path)
            finally:
                os.close(fd)
        if handled_net:
            for port in policy.get("connectPorts", ()):
                port_rule = NetPort(NET_CONNECT_TCP, int(port))
                if syscall(ctypes.c_long(add_rule), ctypes.c_int(ruleset), ctypes.c_int(RULE_NET_PORT), ctypes.byref(port_rule), ctypes.c_uint32(0)) < 0:
                    errno = ctypes.get_errno()
                    raise ConfineError(errno, "landlock_add_rule(port %s) failed: %s" % (port, os.strerror(errno)))
        if syscall(ctypes.c_long(_nr("landlock_restrict_self")), ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            errno = ctypes.get_errno()
            raise ConfineError(errno, "landlock_restrict_self failed: " + os.strerror(errno))
    finally:
        os.close(ruleset)
    return {"fs": handled_fs, "net": bool(handled_net), "scoped": bool(scoped), "rules": len(rules)}


def _is_dir(fd):
    import stat

    return stat.S_ISDIR(os.fstat(fd).st_mode)


# -- seccomp -----------------------------------------------------------------------------------------

LD_W_ABS, JEQ, JGE, JSET, AND, RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06


def seccomp_program(machine: str, allow_exec: bool = False) -> bytes:
    """The classic-BPF filter for ``machine`` (``x86_64``/``aarch64``) as ``struct sock_filter[]`` bytes."""
    import struct

    column, audit_arch = ARCHES[machine]
    ops = []  # (code, jt label or 0, jf label or 0, k)

    def op(code, k=0, jt=0, jf=0):
        ops.append([code, jt, jf, k])

    def arg_low(index):
        return 16 + 8 * index  # seccomp_data.args[index], low 32 bits (little-endian)

    def arg_high(index):
        return 20 + 8 * index

    op(LD_W_ABS, 4)  # seccomp_data.arch
    op(JEQ, audit_arch, 0, "kill")
    op(LD_W_ABS, 0)  # seccomp_data.nr
    if machine == "x86_64":
        op(JGE, X32_SYSCALL_BIT, "eperm", 0)
    denied = sorted({int(nrs[column] or 0) for name, nrs in DENIED.items() if nrs[column] is not None and not (allow_exec and name in EXEC_CALLS)})
    for nr in denied:
        op(JEQ, nr, "eperm", 0)
    op(JEQ, SYS["clone3"][column], "enosys", 0)
    op(JEQ, SYS["clone"][column], "clone", 0)
    op(JEQ, SYS["socket"][column], "socket", 0)
    op(JEQ, SYS["prlimit64"][column], "prlimit", 0)
    op(RET, RET_ALLOW)
    labels = {}
    labels["clone"] = len(ops)
    op(LD_W_ABS, arg_low(0))
    op(JSET, CLONE_THREAD, "allow", "eperm")
    labels["socket"] = len(ops)
    op(LD_W_ABS, arg_low(0))
    op(JEQ, AF_INET, "socket_type", 0)
    op(JEQ, AF_INET6, "socket_type", "eperm")
    labels["socket_type"] = len(ops)
    op(LD_W_ABS, arg_low(1))
    op(AND, 0xF)
    op(JEQ, SOCK_STREAM, 0, "eperm")
    op(LD_W_ABS, arg_low(2))  # protocol: 0 or TCP (SCTP/MPTCP streams would slip past Landlock's TCP rules)
    op(JEQ, 0, "allow", 0)
    op(JEQ, IPPROTO_TCP, "allow", "eperm")
    labels["prlimit"] = len(ops)  # prlimit64(pid, resource, new, old): reading is fine, setting is not
    op(LD_W_ABS, arg_low(2))
    op(JEQ, 0, 0, "eperm")
    op(LD_W_ABS, arg_high(2))
    op(JEQ, 0, "allow", "eperm")
    labels["allow"] = len(ops)
    op(RET, RET_ALLOW)
    labels["eperm"] = len(ops)
    op(RET, RET_ERRNO | EPERM)
    labels["enosys"] = len(ops)
    op(RET, RET_ERRNO | ENOSYS)
    labels["kill"] = len(ops)
    op(RET, RET_KILL_PROCESS)
    out = []
    for index, (code, jt, jf, k) in enumerate(ops):
        jumps = []
        for target in (jt, jf):
            offset = labels[target] - index - 1 if isinstance(target, str) else target
            if not 0 <= offset <= 255:
                raise ConfineError(0, "seccomp program too long for a jump")
            jumps.append(offset)
        out.append(struct.pack("=HBBI", code, jumps[0], jumps[1], k & 0xFFFFFFFF))
    return b"".join(out)


def _install_seccomp(libc, program):
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.syscall(ctypes.c_long(_nr("seccomp")), ctypes.c_uint(SECCOMP_SET_MODE_FILTER), ctypes.c_uint(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog)) != 0:
        errno = ctypes.get_errno()
        raise ConfineError(errno, "installing the seccomp filter failed: " + os.strerror(errno))


# -- the deadline and capabilities ----------------------------------------------------------------------


def _kill_timer(libc, milliseconds):
    """SIGKILL this process ``milliseconds`` from now (CLOCK_MONOTONIC), whatever happens to its parent."""
    import ctypes


    class SigEvent(ctypes.Structure):
        _fields_ = [("value", ctypes.c_uint64), ("signo", ctypes.c_int), ("notify", ctypes.c_int), ("pad", ctypes.c_byte * 48)]

    class ItimerSpec(ctypes.Structure):
        _fields_ = [("interval_s", ctypes.c_long), ("interval_ns", ctypes.c_long), ("value_s", ctypes.c_long), ("value_ns", ctypes.c_long)]

    event = SigEvent(0, SIGKILL, SIGEV_SIGNAL)
    timer = ctypes.c_int(0)
    if libc.syscall(ctypes.c_long(_nr("timer_create")), ctypes.c_int(CLOCK_MONOTONIC), ctypes.byref(event), ctypes.byref(timer)) != 0:
        errno = ctypes.get_errno()
        raise ConfineError(errno, "timer_create failed: " + os.strerror(errno))
    spec = ItimerSpec(0, 0, milliseconds // 1000, (milliseconds % 1000) * 1000000)
    if libc.syscall(ctypes.c_long(_nr("timer_settime")), timer, ctypes.c_int(0), ctypes.byref(spec), None) != 0:
        errno = ctypes.get_errno()
        raise ConfineError(errno, "timer_settime failed: " + os.strerror(errno))


def _reap_as_init(signal_file):
    """As a PID namespace's init, fork: the child goes on to be confined, this process waits and exits with it.

    The kernel drops a SIGKILL that a namespace's init sends itself, the kill
    timer's included, so the script must not be PID 1.  This init runs only
    this loop; the script cannot signal it (Landlock's signal scope: it is
    outside the script's domain), trace it or read its memory.  When the
    script dies of signal N this exits 128 + N and writes N to
    ``signal_file`` (an init cannot die of a signal of its own), so the parent
    can still say which signal it was.
    """
    child = os.fork()
    if child == 0:
        return
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # the parent kills with SIGKILL; nothing else may end the wait early
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid != child:
            continue  # an orphan re-parented to init: reaped, nothing more
        if os.WIFSIGNALED(status):
            killer = os.WTERMSIG(status)
            if signal_file:
                try:
                    with open(signal_file, "w") as f:
                        f.write(str(killer))
                except OSError:
                    pass
            os._exit(128 + killer)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _join_cgroup(cgroup):
    """Be in the parent's cgroup before anything else starts: ``{"name": as /proc/self/cgroup spells it, "join": file or None}``.

    The parent made the cgroup and set its ``pids.max``: the limit on threads
    that holds for root too (RLIMIT_NPROC does not bind uid 0).  With
    ``"join"`` (cgroup v1's ``tasks``: moving one thread takes no global lock)
    this process, one thread still, moves itself; without it the parent moves
    it from a thread of its own while it starts (on v2 a move waits for an RCU
    grace period, ~10 ms, which would otherwise delay every run) and this waits
    until it is in.  Either way no thread of ours exists yet, and Landlock then
    denies /sys, so the script cannot move out.
    """
    join = cgroup.get("join")
    if join:
        try:
            fd = os.open(join, os.O_WRONLY | O_CLOEXEC)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        except OSError as exc:
            raise ConfineError(exc.errno or 0, "joining the cgroup %s failed: %s" % (os.path.dirname(join), exc.strerror or exc))
        return
    _await_cgroup(cgroup["name"])


def _await_cgroup(name):
    """Return once this process is in the cgroup ``name`` (as /proc/self/cgroup spells it); ConfineError after CGROUP_WAIT."""
    import time

    wait = CGROUP_WAIT
    deadline = time.monotonic() + wait
    suffix = ":" + name
    while True:
        try:
            with open("/proc/self/cgroup", "r") as f:
                if any(line.rstrip("\n").endswith(suffix) for line in f):
                    return
        except OSError as exc:
            raise ConfineError(exc.errno or 0, "cannot read /proc/self/cgroup: %s" % (exc.strerror or exc))
        if time.monotonic() > deadline:
            raise ConfineError(0, "the parent did not move this process into its cgroup %s within %g s" % (name, wait))
        time.sleep(0.0005)


def _drop_capabilities(libc):
    """No capability left, and none regained by a uid 0 on exec.  False when this kernel refused."""
    import ctypes


    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    if os.geteuid() == 0 and libc.prctl(PR_SET_SECUREBITS, SECBITS_LOCKED_NOROOT, 0, 0, 0) != 0:
        return False
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    return libc.syscall(ctypes.c_long(_nr("capset")), ctypes.byref(header), ctypes.byref(data)) == 0


# -- applying a policy ---------------------------------------------------------------------------------


def apply(policy: dict) -> dict:
    """Confine this process (see the module docstring); returns what took effect.

    ``{"noNewPrivs": bool, "landlockAbi": int, "landlock": {...} or None,
    "seccomp": bool, "deadline": bool, "capabilities": "dropped" | "kept",
    "arch": str, "skipped": [reasons]}``.  Call it before starting threads.
    """
    report: dict = {"noNewPrivs": False, "landlockAbi": 0, "landlock": None, "seccomp": False, "deadline": False,
              "capabilities": "kept", "arch": os.uname().machine if hasattr(os, "uname") else sys.platform, "skipped": []}
    if not sys.platform.startswith("linux"):
        report["skipped"].append("not Linux")
        return report
    if report["arch"] not in ARCHES:
        report["skipped"].append("unknown architecture %s: no seccomp filter or Landlock numbers for it" % report["arch"])
        return report
    try:
        ctypes, libc = _libc()
    except (ImportError, OSError) as exc:
        raise ConfineError(0, "ctypes is unavailable, so the confinement cannot be set up: %s" % exc)
    try:
        parent = int(policy.get("parentPid") or 0)
        if parent > 0:
            # Die with the exec process that started us (what its preexec_fn would do, done here so that it can
            # start us with a vfork).  If it is already gone, the getppid check catches the race.
            if libc.prctl(PR_SET_PDEATHSIG, SIGKILL_NUMBER, 0, 0, 0) != 0:
                raise ConfineError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
            if os.getppid() != parent:
                os.kill(os.getpid(), SIGKILL_NUMBER)
            report["parentDeath"] = True
        deadline = int(policy.get("deadlineMs") or 0)
        if deadline > 0 and os.getpid() == 1:
            _reap_as_init(policy.get("signalFile"))  # returns in the child, which the timer can kill
            report["init"] = "reaper"
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise ConfineError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        report["noNewPrivs"] = True
        if deadline > 0:
            _kill_timer(libc, deadline)
            report["deadline"] = True
        if policy.get("cgroup"):
            _join_cgroup(policy["cgroup"])  # before Landlock, which hides /sys and /proc
            report["cgroup"] = True
        if policy.get("landlock", "auto"):
            abi = int(libc.syscall(ctypes.c_long(_nr("landlock_create_ruleset")), None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION)))
            if abi <= 0 and policy.get("landlock") is True:
                raise ConfineError(ctypes.get_errno(), "Landlock was required but this kernel does not offer it")
            if abi > 0:
                full = dict(policy)
                read, write = list(policy.get("read", ())), list(policy.get("write", ()))
                if policy.get("python"):
                    read += python_read_paths()
                if policy.get("system"):
                    read += list(SYSTEM_READ_PATHS) + list(DEVICE_READ)
                    write += list(DEVICE_WRITE)
                full["read"], full["write"] = read, write
                report["landlock"] = _landlock(libc, abi, full)
                report["landlockAbi"] = abi
            else:
                report["skipped"].append("Landlock is not available in this kernel")
        if policy.get("dropCapabilities", True):
            report["capabilities"] = "dropped" if _drop_capabilities(libc) else "kept"
        if policy.get("seccomp", "auto"):
            if libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
                if policy.get("seccomp") is True:
                    raise ConfineError(ctypes.get_errno(), "seccomp was required but this kernel does not offer it")
                report["skipped"].append("seccomp is not available in this kernel")
            else:
                _install_seccomp(libc, seccomp_program(report["arch"], bool(policy.get("allowExec"))))
                report["seccomp"] = True
    finally:
        # The script must not find a ready ctypes (the guard refuses a fresh import of it).
        _LIBC.clear()
        for name in [n for n in sys.modules if n == "ctypes" or n.startswith("ctypes.") or n == "_ctypes"]:
            del sys.modules[name]
    return report


def main(argv: list) -> int:
    """``confine.py POLICY.json -- PROGRAM ARGS...``: apply the policy, then become PROGRAM."""
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: confine.py POLICY.json -- PROGRAM [ARGS...]\n")
        return 2
    import json

    with open(argv[1], "rb") as f:
        policy = json.loads(f.read().decode("utf-8"))
    try:
        apply(policy)
    except OSError as exc:
        sys.stderr.write("toolscript: cannot confine %s: %s\n" % (argv[3], exc))
        return 126
    try:
        os.execv(argv[3], argv[3:])
    except OSError as exc:
        sys.stderr.write("toolscript: cannot start %s: %s\n" % (argv[3], exc))
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
