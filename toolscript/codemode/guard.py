"""The runtime guard of ``toolscript exec``: first code to run in the sandboxed child.

This file is copied into the sandbox and run as
``python -I -S -B -u -X utf8 _toolscript_guard.py LIB WORK CODE FILENAME GWHOST GWPORT LIMITS [ARGS...]``
(toolscript's own package is not importable there, so it is a self-contained
stdlib module, Python 3.9+).  It

0. reads the parent's policy (``_toolscript_policy`` in LIB, marshal) and,
   after the resource limits below and before any thread or line of the
   script, applies the kernel layer (``_toolscript_confine.py``: Landlock,
   seccomp, a SIGKILL timer, no capabilities), which nothing in this process
   can undo; a layer the parent asked for that fails ends the run (exit 126).
   The policy's ``"guard": false`` (only from the test-only
   ``TOOLSCRIPT_EXEC_GUARD=off`` of the parent, never from the script's
   environment) skips the audit hook and the native-loading patch below;
1. applies resource limits (CPU seconds, address space, file size, open files,
   processes) and makes their signals readable (SIGXFSZ becomes an ``OSError``,
   SIGXCPU a one-line message), and starts a wall-clock watchdog thread that
   ends the process (exit 124) at its deadline, also when the parent that
   enforces ``--timeout`` is gone;
2. installs an audit hook (``sys.addaudithook``; it cannot be removed) that
   refuses, with ``PermissionError("toolscript sandbox: ... is not allowed (...)")``:

   * opening files outside the temp dir, except reading the interpreter's own
     standard library (the child's initial ``sys.path``), ``/dev/null``,
     ``/dev/urandom`` and the time-zone database; writing anywhere but the
     temp working dir; listing directories outside those places; opening
     directories outside the working dir; ``..`` paths that climb out of their
     start; symbolic links; removing, renaming, linking, ``chmod``/``chown``,
     ``chdir`` outside the working dir; SQLite databases outside it;
   * network: any connection, name lookup, ``sendto`` or ``bind`` except a
     connection to the gateway's host and port; raw/netlink sockets;
   * processes: ``subprocess``, ``os.system``, ``os.exec*``, ``os.spawn*``,
     ``os.posix_spawn``, ``os.fork``/``forkpty``, ``pty.spawn``; signalling
     another process; changing resource limits;
   * native code: importing ``ctypes``/``_ctypes``/``cffi``, every ``ctypes.*``
     event, loading an extension module from anywhere but the standard
     library's own directories (``_imp.create_dynamic`` is wrapped), SQLite
     extension loading, re-importing the modules the guard patched;
   * introspection that reaches the guard's state: ``gc.get_objects`` /
     ``get_referrers`` / ``get_referents``; other threads' frames
     (``sys._current_frames``, ``sys._current_exceptions``) and tracing or
     profiling every thread (they reach the watchdog); changing pathlib's
     classes or their functions' ``__code__`` (the path checks trust them);

3. compiles the user's code under its real name (``<exec>`` or the ``-f``
   path) and runs it as ``__main__``, with an excepthook that prints the
   traceback without the guard's and the runtime's frames.

The hook keeps its settings, the builtins and the ``posix`` functions it
uses in closures, captured before the script runs, so replacing
``builtins.type``, ``os.lstat`` or ``posixpath.realpath`` later does not change
what it sees; it checks exact types (``str``, ``bytes``, ``int``, genuine
``pathlib`` classes) so that no code of the script runs inside a check.

What it does NOT stop (it is a guardrail for model-written code, not a
security boundary against a determined attacker):

* pure-Python introspection of the guard itself: the functions it patched
  (``_imp.create_dynamic.__closure__`` holds the original, and with it native
  code can be loaded) and its own frames, reachable from the tracebacks of
  the exceptions it raises (their closures can be rewritten); a second thread swapping a path object between the check
  and the open; interpreter memory-corruption bugs (crafted bytecode,
  ``marshal``) that no audit hook sees;
* file metadata: ``os.stat``/``os.path.exists`` are not audited, so a script
  can tell which files exist anywhere;
* files the C library or C modules read on their own: ``/etc/passwd`` and
  ``/etc/group`` through ``pwd``/``grp``, ``/etc/hosts``, ``/etc/localtime``,
  certificate files given to ``ssl``;
* resource use inside the limits: CPU, memory, threads and disk space up to
  the limits (each file is capped here; exec checks the total of the work
  dir and stops the script past it);
* the tools: every tool the gateway exposes is callable.

The OS layer (a separate process, rlimits, the parent's wall-clock timeout,
dying with the parent (Linux), and on Linux Landlock + seccomp + the kill
timer, or bubblewrap, and the namespaces) is what holds when the guard is
bypassed.
"""

import os
import sys

import posix

PREFIX = "toolscript sandbox"
POLICY_NAME = "_toolscript_policy"
CONFINE_MODULE = "_toolscript_confine"
NATIVE_MODULES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend"})
# Modules the guard patches: a fresh copy of them would undo the patch.
PATCHED_MODULES = frozenset({"_imp", "_posixsubprocess"})
# C modules that read files without an audit event (spwd: /etc/shadow; Python 3.9 has no sqlite3 events).
UNAUDITED_FILE_MODULES = frozenset({"_dbm", "_gdbm", "spwd"} | ({"_sqlite3"} if sys.version_info < (3, 10) else set()))
EXTRA_READ_PATHS = ("/usr/share/zoneinfo", "/etc/localtime", "/dev/urandom", "/dev/random")
EXTRA_RW_FILES = ("/dev/null",)
CO_COROUTINE = 0x80
PyCF_ALLOW_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, without importing ast


def apply_limits(cpu, memory, fsize, nofile, nproc):
    """Resource limits (soft = hard, so the script cannot raise them) for this process and its children."""
    try:
        import resource
    except ImportError:  # not POSIX: the parent's timeout and output caps still hold
        return
    import _signal  # type: ignore[import-not-found]  # CPython's C module, no stubs

    def setlimit(name, soft, hard=None):
        kind = getattr(resource, name, None)
        if kind is None or soft <= 0:
            return
        hard = soft if hard is None else hard
        current = resource.getrlimit(kind)[1]
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        try:
            resource.setrlimit(kind, (soft, hard))
        except (ValueError, OSError):
            pass

    if cpu > 0 and hasattr(_signal, "SIGXCPU"):
        write, exit_now = posix.write, posix._exit

        def on_xcpu(signum, frame):
            write(2, f"\ntoolscript: the script used up its CPU time limit ({cpu} s) and was stopped\n".encode())
            exit_now(128 + signum)

        _signal.signal(_signal.SIGXCPU, on_xcpu)
        setlimit("RLIMIT_CPU", cpu, cpu + 1)  # SIGXCPU (the message) first, SIGKILL a second later
    setlimit("RLIMIT_AS", memory)
    if fsize > 0 and hasattr(_signal, "SIGXFSZ"):
        _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)  # a write past the limit raises OSError (EFBIG) instead
    setlimit("RLIMIT_FSIZE", fsize)
    setlimit("RLIMIT_NOFILE", nofile)
    setlimit("RLIMIT_NPROC", nproc)
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError, AttributeError):
        pass


def start_watchdog(seconds):
    """End this process (exit 124, with a line on stderr) ``seconds`` from now, whatever the script does.

    The parent's ``--timeout`` kills the script first while the parent lives;
    this is what holds when it does not (``exec`` killed, or on macOS where
    nothing kills a child with its parent).  A plain ``_thread`` thread: not
    in ``threading.enumerate()``, and the hook refuses what reaches other
    threads' frames.  A script that never releases the GIL starves it, but
    then burns CPU, and RLIMIT_CPU stops that.  In a PID namespace this
    process is PID 1: its exit ends everything in the namespace.
    """
    if seconds <= 0:
        return
    import _thread
    import time

    monotonic, sleep, write, exit_now = time.monotonic, time.sleep, posix.write, posix._exit
    deadline = monotonic() + seconds
    message = f"\ntoolscript: the script ran past its wall-clock limit ({seconds:g} s) and was stopped\n".encode()

    def watch():
        while True:
            left = deadline - monotonic()
            if left <= 0:
                break
            sleep(left)
        try:
            write(2, message)
        finally:
            exit_now(124)

    _thread.start_new_thread(watch, ())


def make_hook(lib, work, gateway, genuine_path, workspace=None):
    """The audit hook.

    Everything it uses is bound here, in closures: builtins, ``posix``
    functions and settings are captured once, so a script that later
    replaces ``builtins.type``, ``os.lstat`` or ``posixpath.realpath`` does
    not change what the hook sees.  Nothing keeps a reference to the hook
    but the interpreter's audit-hook list.
    """
    type_, len_, str_, bytes_, int_, tuple_, list_ = type, len, str, bytes, int, tuple, list
    PermissionError_, OSError_ = PermissionError, OSError
    lstat, stat, readlink, getcwd, getpid = posix.lstat, posix.stat, posix.readlink, posix.getcwd, posix.getpid
    fs_encoding = sys.getfilesystemencoding()
    write_flags = posix.O_WRONLY | posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_APPEND
    dir_entry = getattr(posix, "DirEntry", None)
    path_types, path_fspath = genuine_path
    S_IFMT, S_IFLNK, S_IFDIR = 0o170000, 0o120000, 0o040000

    def deny(what, detail=""):
        return PermissionError_(f"{PREFIX}: {what} is not allowed" + (f" ({detail})" if detail else ""))

    def decode(value):
        return value.decode(fs_encoding, "surrogateescape")

    def realpath(path):
        """Like os.path.realpath for an absolute '/'-path, from captured primitives only."""
        stack = path.split("/")
        stack.reverse()
        resolved = ""
        links = 0
        while stack:
            part = stack.pop()
            if part in ("", "."):
                continue
            if part == "..":
                resolved = resolved.rpartition("/")[0]
                continue
            candidate = resolved + "/" + part
            try:
                mode = lstat(candidate).st_mode
            except (OSError_, ValueError):
                resolved = candidate  # does not exist (yet): the rest is taken as written
                continue
            if mode & S_IFMT != S_IFLNK:
                resolved = candidate
                continue
            links += 1
            if links > 40:
                raise deny(f"the path {path}", "too many symbolic links")
            target = readlink(candidate)
            if target.startswith("/"):
                resolved = ""
            parts = target.split("/")
            parts.reverse()
            stack.extend(parts)
        return resolved or "/"

    def roots_of(paths):
        roots = []
        for path in paths:
            if type_(path) is not str_ or not path.startswith("/"):
                continue
            for candidate in (path, realpath(path)):
                candidate = candidate.rstrip("/") or "/"
                if candidate not in roots:
                    roots.append(candidate)
        return tuple_(roots)

    def under(path, roots):
        for root in roots:
            if path == root or path.startswith(root + "/") or root == "/":
                return True
        return False

    def is_dir(path):
        try:
            return stat(path).st_mode & S_IFMT == S_IFDIR
        except (OSError_, ValueError):
            return False

    stdlib = [p for p in sys.path if type_(p) is str_ and p.startswith("/")]
    shared = [work] + ([workspace] if workspace else [])
    read_roots = roots_of(stdlib + [lib] + shared + [p for p in EXTRA_READ_PATHS if os.path.exists(p)])
    native_roots = roots_of([p for p in stdlib if os.path.isdir(p)])
    write_roots = roots_of(shared)
    rw_files = roots_of(list_(EXTRA_RW_FILES))
    gw_host, gw_port = gateway
    gw_hosts = frozenset([gw_host] + (["127.0.0.1", "::1"] if gw_host == "localhost" else [])) if gw_host else frozenset()

    path_classes = tuple_(path_types)

    def is_path_type(kind):
        # Identity, not `in`: a metaclass's __hash__/__eq__ would run the script's code inside the hook.
        for cls in path_classes:
            if kind is cls:
                return True
        return False

    def resolve(path):
        """The real absolute path of a str/bytes/path object; None for a file descriptor."""
        kind = type_(path)
        if kind is int_:
            return None
        if kind is str_:
            text = path
        elif kind is bytes_:
            text = decode(path)
        elif is_path_type(kind) and kind.__fspath__ is path_fspath:
            text = path_fspath(path)
        elif dir_entry is not None and kind is dir_entry:
            text = path.path if type_(path.path) is str_ else decode(path.path)
        else:
            # A home-made __fspath__ could answer one thing to this check and another to the open.
            raise deny(f"a path of type {kind.__name__ if type_(kind.__name__) is str_ else '?'}", "pass str(path)")
        if type_(text) is not str_:
            raise deny("this kind of path object")
        if "\0" in text:
            raise deny("a path with a NUL byte")
        if not text.startswith("/"):
            depth = 0
            for part in text.split("/"):
                if part == "..":
                    depth -= 1
                    if depth < 0:
                        raise deny(f"the relative path {text!r}", "'..' climbing out of the current directory; use an absolute path inside the temp dir")
                elif part not in ("", "."):
                    depth += 1
            text = getcwd() + "/" + text
        return realpath(text)

    def check_read(path, what):
        real = resolve(path)
        if real is None or under(real, read_roots) or real in rw_files:
            return real
        raise deny(f"{what} {real}", "outside the sandbox's temp dir")

    def check_write(path, what):
        real = resolve(path)
        if real is None or under(real, write_roots) or real in rw_files:
            return real
        if under(real, read_roots):
            raise deny(f"{what} {real}", "read-only in the sandbox")
        raise deny(f"{what} {real}", "outside the sandbox's temp dir")

    def on_open(args):
        path, mode, flags = args[0], args[1], args[2]
        writing = (type_(flags) is int_ and flags & write_flags) or (type_(mode) is str_ and ("w" in mode or "a" in mode or "x" in mode or "+" in mode))
        if writing:
            check_write(path, "writing to")
            return
        real = check_read(path, "reading")
        if real is not None and not under(real, write_roots) and is_dir(real):
            # A directory descriptor plus dir_fd= would bypass the checks on relative paths.
            raise deny(f"opening the directory {real}", "only directories inside the temp dir")

    def on_list(args):
        path = args[0] if len_(args) else None
        check_read("." if path is None else path, "listing")

    def write_args(indexes, what):
        def handler(args):
            for index in indexes:
                if len_(args) > index:
                    check_write(args[index], what)
        return handler

    def on_chdir(args):
        real = resolve(args[0])
        if real is not None and not under(real, write_roots):
            raise deny(f"changing directory to {real}", "outside the sandbox's temp dir")

    def on_xattr_read(args):
        check_read(args[0], "reading attributes of")

    def on_sqlite(args):
        database = args[0]
        if type_(database) is bytes_:
            database = decode(database)
        if type_(database) is str_ and (database in (":memory:", "") or database.startswith("file::memory:")):
            return
        if type_(database) is str_ and database.startswith("file:"):
            raise deny("opening an SQLite URI", "pass a plain file name inside the temp dir")
        check_write(database, "opening the database")

    def refuse(what):
        def handler(args):
            raise deny(what)
        return handler

    def text_of(value):
        if type_(value) is bytes_:
            return decode(value)
        if type_(value) in (list_, tuple_):
            return " ".join(text_of(v) for v in value if type_(v) in (str_, bytes_))
        return value if type_(value) is str_ else ""

    def refuse_with(what, index):
        def handler(args):
            raise deny(what, text_of(args[index]) if len_(args) > index else "")
        return handler

    def gateway_address(address):
        return (type_(address) is tuple_ and len_(address) >= 2 and type_(address[0]) is str_ and type_(address[1]) is int_
                and address[0] in gw_hosts and address[1] == gw_port)

    def describe(address):
        if type_(address) is tuple_ and len_(address) >= 2 and type_(address[0]) is str_ and type_(address[1]) is int_:
            return f"{address[0]}:{address[1]}"
        return text_of(address) or "an address"

    no_network = "only the toolscript gateway can be reached" if gw_hosts else "this script has no network access"

    def on_connect(args):
        if not gateway_address(args[1]):
            raise deny(f"connecting to {describe(args[1])}", no_network)

    def on_send(args):
        address = args[1] if len_(args) > 1 else None
        if address is not None and not gateway_address(address):
            raise deny(f"sending to {describe(address)}", no_network)

    def numeric(host):
        parts = host.split(".")
        if len_(parts) == 4 and all(p.isdigit() and len_(p) <= 3 for p in parts):
            return True
        return ":" in host and all(c in "0123456789abcdefABCDEF:." for c in host)

    def on_lookup(args):
        host = args[0] if len_(args) else None
        if type_(host) is bytes_:
            host = host.decode("ascii", "replace")  # type: ignore[union-attr]  # bytes, as just checked
        if host is None or (type_(host) is str_ and (host in gw_hosts or numeric(host))):
            return  # a numeric address asks nobody; connect() decides
        raise deny(f"looking up {host if type_(host) is str_ else 'a host name'}", no_network)

    found = set()
    try:
        import _socket

        for name in ("AF_INET", "AF_INET6", "AF_UNIX"):
            if hasattr(_socket, name):
                found.add(getattr(_socket, name))
    except ImportError:
        pass
    families = frozenset(found)
    inet = frozenset(f for f in (getattr(_socket, "AF_INET", None), getattr(_socket, "AF_INET6", None)) if f is not None) if found else frozenset()
    stream = 1  # SOCK_STREAM on Linux and macOS

    def on_socket(args):
        family = args[1] if len_(args) > 1 else None
        if type_(family) is not int_ or family not in families:
            raise deny("this kind of socket", f"address family {family}" if type_(family) is int_ else "")
        kind = args[2] if len_(args) > 2 else None
        if family in inet and type_(kind) is int_ and kind != -1 and (kind or 0) & 0xF != stream:
            raise deny("a UDP or raw socket", "only TCP connections to the toolscript gateway")

    def on_kill(args):
        pid = args[0]
        if pid != 0 and pid != getpid():
            raise deny(f"signalling process {pid}", "a script may only signal itself")

    def on_import(args):
        name = args[0]
        if type_(name) is not str_:
            return
        if name.partition(".")[0] in NATIVE_MODULES:
            raise deny(f"importing {name}", "no native code (ctypes/cffi) in the sandbox")
        if name in PATCHED_MODULES:
            raise deny(f"re-importing {name}", "the sandbox's guard patched it")
        if name in UNAUDITED_FILE_MODULES:
            raise deny(f"importing {name}", "it opens files where the guard cannot see")

    function_type = type_(lambda: None)

    def on_setattr(args):
        # pathlib's classes and functions are what the path checks trust (see genuine_pathlib).
        if len_(args) < 2:
            return
        target = args[0]
        if is_path_type(target) or (type_(target) is function_type and type_(args[1]) is str_ and args[1] == "__code__"
                                    and type_(target.__module__) is str_ and target.__module__.partition(".")[0] == "pathlib"):
            raise deny(f"changing pathlib's {args[1] if type_(args[1]) is str_ else 'attributes'}", "the sandbox's path checks rely on it")

    starting = "starting a program"
    handlers = {
        "open": on_open,
        "os.listdir": on_list,
        "os.scandir": on_list,
        "os.chdir": on_chdir,
        "os.mkdir": write_args((0,), "creating the directory"),
        "os.rmdir": write_args((0,), "removing"),
        "os.remove": write_args((0,), "removing"),
        "os.rename": write_args((0, 1), "renaming"),
        "os.link": write_args((0, 1), "linking"),
        "os.symlink": refuse("creating symbolic links"),
        "os.truncate": write_args((0,), "truncating"),
        "os.chmod": write_args((0,), "changing the mode of"),
        "os.chown": write_args((0,), "changing the owner of"),
        "os.chflags": write_args((0,), "changing the flags of"),
        "os.lchflags": write_args((0,), "changing the flags of"),
        "os.lchmod": write_args((0,), "changing the mode of"),
        "os.lchown": write_args((0,), "changing the owner of"),
        "os.utime": write_args((0,), "changing the times of"),
        "os.setxattr": write_args((0,), "changing attributes of"),
        "os.removexattr": write_args((0,), "changing attributes of"),
        "os.getxattr": on_xattr_read,
        "os.listxattr": on_xattr_read,
        "shutil.rmtree": write_args((0,), "removing"),
        "sqlite3.connect": on_sqlite,
        "sqlite3.enable_load_extension": refuse("loading SQLite extensions (native code)"),
        "sqlite3.load_extension": refuse("loading SQLite extensions (native code)"),
        "socket.__new__": on_socket,
        "socket.connect": on_connect,
        "socket.bind": refuse("listening on a socket"),
        "socket.sendto": on_send,
        "socket.sendmsg": on_send,
        "socket.getaddrinfo": on_lookup,
        "socket.gethostbyname": on_lookup,
        "socket.gethostbyaddr": on_lookup,
        "socket.getnameinfo": refuse("reverse name lookups"),
        "socket.sethostname": refuse("changing the host name"),
        "subprocess.Popen": refuse_with(starting + " (subprocess)", 1),
        "os.system": refuse_with("running a shell command (os.system)", 0),
        "os.exec": refuse_with(starting + " (os.exec*)", 0),
        "os.posix_spawn": refuse_with(starting + " (os.posix_spawn)", 0),
        "os.spawn": refuse_with(starting + " (os.spawn*)", 1),
        "os.fork": refuse("starting a process (os.fork)"),
        "os.forkpty": refuse("starting a process (os.forkpty)"),
        "pty.spawn": refuse(starting + " (pty.spawn)"),
        "os.startfile": refuse(starting + " (os.startfile)"),
        "os.kill": on_kill,
        "os.killpg": on_kill,
        "resource.setrlimit": refuse("changing resource limits"),
        "resource.prlimit": refuse("changing resource limits"),
        "os.add_dll_directory": refuse("loading native code"),
        "import": on_import,
        "gc.get_objects": refuse("gc.get_objects (it reaches the sandbox's own state)"),
        "gc.get_referrers": refuse("gc.get_referrers (it reaches the sandbox's own state)"),
        "gc.get_referents": refuse("gc.get_referents (it reaches the sandbox's own state)"),
        "sys._current_frames": refuse("sys._current_frames (it reaches the sandbox's watchdog)"),
        "sys._current_exceptions": refuse("sys._current_exceptions (it reaches the sandbox's watchdog)"),
        "sys._setprofileallthreads": refuse("profiling every thread (it reaches the sandbox's watchdog)"),
        "sys._settraceallthreads": refuse("tracing every thread (it reaches the sandbox's watchdog)"),
        "object.__setattr__": on_setattr,
    }
    lookup = handlers.get

    def hook(event, args):
        if type_(event) is not str_ or type_(args) is not tuple_:
            return  # sys.audit() with a str subclass: hashing it would run the script's code in here
        handler = lookup(event)
        if handler is not None:
            handler(args)
        elif event[:7] == "ctypes.":
            raise deny(f"native code ({event})")

    def may_load_native(spec_name, origin):
        name = spec_name.rpartition(".")[2]
        if name in NATIVE_MODULES or spec_name.partition(".")[0] in NATIVE_MODULES:
            raise deny(f"loading {spec_name}", "no native code (ctypes/cffi) in the sandbox")
        if name in PATCHED_MODULES:
            raise deny(f"re-creating {name}", "the sandbox's guard patched it")
        if origin is not None:
            real = realpath(origin) if origin.startswith("/") else origin
            if not under(real, native_roots):
                raise deny(f"loading native code from {real}", "only the interpreter's own extension modules")

    return hook, may_load_native


def patch_native_loading(may_load_native):
    """Wrap ``_imp.create_dynamic``/``create_builtin``; make ``_posixsubprocess.fork_exec`` refuse.

    ``may_load_native`` must come from its own ``make_hook`` call: the wrappers
    are reachable from the script (``_imp.create_dynamic.__closure__``), and
    must share no closure cell with the audit hook.
    """
    import _imp

    try:
        import _posixsubprocess  # before create_dynamic refuses to make it
    except ImportError:
        _posixsubprocess = None  # type: ignore[assignment]
    spec_class = type(getattr(sys, "__spec__", None))
    if spec_class is type(None):
        import _frozen_importlib

        spec_class = _frozen_importlib.ModuleSpec
    create_dynamic, create_builtin = _imp.create_dynamic, _imp.create_builtin
    type_, str_ = type, str

    def clean_spec(spec, with_origin):
        # Read name and origin once: a spec whose attributes change between reads cannot fool the check.
        name, origin = spec.name, (spec.origin if with_origin else None)
        if type_(name) is not str_ or (with_origin and type_(origin) is not str_):
            raise PermissionError(f"{PREFIX}: loading a module from an unusual spec is not allowed")
        may_load_native(name, origin)
        return spec_class(name, None, origin=origin)  # type: ignore[misc]  # ModuleSpec, set just above

    def guarded_create_dynamic(spec, file=None):
        clean = clean_spec(spec, True)
        return create_dynamic(clean) if file is None else create_dynamic(clean, file)

    def guarded_create_builtin(spec):
        return create_builtin(clean_spec(spec, False))

    _imp.create_dynamic = guarded_create_dynamic
    _imp.create_builtin = guarded_create_builtin
    if _posixsubprocess is None:
        return

    def fork_exec(*args, **kwargs):
        raise PermissionError(f"{PREFIX}: starting a program (_posixsubprocess) is not allowed")

    _posixsubprocess.fork_exec = fork_exec


def genuine_pathlib(source):
    """pathlib's classes, imported before the script can fake them (only when the code names pathlib)."""
    if b"pathlib" not in source:
        return (frozenset(), None)
    import pathlib

    names = ("PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath")
    classes = frozenset(c for c in (getattr(pathlib, n, None) for n in names) if c is not None)
    return (classes, pathlib.PurePath.__fspath__)


def printable(text):
    """A traceback without terminal escape sequences or control characters (newlines and tabs kept).

    The message of a failed tool call quotes the server's words; a server must not set the
    terminal's title or clear the screen through a script's traceback.  The sandbox cannot
    import the package's own cleaner (toolscript.log.terminal_text), so this is its small sibling.
    """
    import re

    csi = "(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]"  # colours, cursor moves, screen clears
    string = "(?:\x1b[\\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"  # titles, links
    other = "\x1b[ -/]*[0-~]"
    text = re.sub(f"{csi}|{string}|{other}", "", text)
    return re.sub("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", "", text)


def install_excepthook(filename, source, hidden, memory):
    """Tracebacks without the guard's and the runtime's frames, showing the user's source lines."""

    def prune(te, seen):
        if te is None or id(te) in seen:
            return
        seen.add(id(te))
        import traceback

        frames = list(te.stack)
        for index, frame in enumerate(frames):
            if frame.filename == filename:
                frames = frames[index:]  # drop the guard (and asyncio.run) above the script's first frame
                break
        te.stack = traceback.StackSummary.from_list([f for f in frames if f.filename not in hidden])
        prune(getattr(te, "__cause__", None), seen)
        prune(getattr(te, "__context__", None), seen)
        for sub in getattr(te, "exceptions", None) or ():
            prune(sub, seen)

    def excepthook(etype, value, tb):
        try:
            import linecache
            import traceback

            lines = source.decode("utf-8", "replace").splitlines(True)
            linecache.cache[filename] = (len(source), None, lines, filename)
            te = traceback.TracebackException(etype, value, tb)
            prune(te, set())
            sys.stderr.write(printable("".join(te.format())))
            if isinstance(value, MemoryError) and memory > 0:
                sys.stderr.write(f"toolscript: the script ran out of memory (the sandbox's limit is {memory // (1024 * 1024)} MiB)\n")
            elif isinstance(value, PermissionError) and value.errno == 1 and PREFIX not in str(value):
                # EPERM with no message of the guard's: the kernel layer's seccomp filter said no.
                sys.stderr.write("toolscript: the sandbox's kernel filter refused that system call (exec scripts start no "
                                 "programs or processes, listen on no socket, use no SysV IPC or memfd, pass no descriptors)\n")
            elif isinstance(value, RuntimeError) and str(value).startswith("can't start new thread"):
                sys.stderr.write("toolscript: the script reached the sandbox's limit on threads running at once\n")
            sys.stderr.flush()
        except BaseException:
            sys.__excepthook__(etype, value, tb)

    sys.excepthook = excepthook


def read_policy(lib):
    """The parent's ``_toolscript_policy`` in LIB: ``{"confine": {...} or None, "guard": bool, "workspace": str}``.

    ``marshal`` (version 4, plain dicts, lists, strings and numbers), not JSON:
    it is built in, where ``import json`` costs several milliseconds per run.
    """
    import marshal

    try:
        with open(os.path.join(lib, POLICY_NAME), "rb") as f:
            policy = marshal.loads(f.read())
    except FileNotFoundError:
        return {}
    return policy if type(policy) is dict else {}


def confine_now(lib, policy):
    """The kernel layer (``_toolscript_confine.py``): Landlock, seccomp, the kill timer.  Exits 126 if it fails.

    Runs before any thread starts (Landlock binds the calling thread only) and
    before the script's first line, so nothing the script does can undo it.
    """
    if not policy:
        return None
    sys.path.insert(0, lib)
    try:
        # __import__, not an import statement: it is a file copied next to the guard, not a package module.
        return __import__(CONFINE_MODULE).apply(policy)
    except OSError as exc:
        posix.write(2, f"toolscript: cannot confine the script, so it did not run: {exc}\n".encode("utf-8", "replace"))
        posix._exit(126)
    finally:
        sys.modules.pop(CONFINE_MODULE, None)
        del sys.path[0]


def main():
    lib, work, code_path, filename, gw_host, gw_port, limits = sys.argv[1:8]
    user_args = sys.argv[8:]
    with open(code_path, "rb") as f:
        source = f.read()
    policy = read_policy(lib)
    cpu, memory, fsize, nofile, nproc, wall_ms = (int(x) for x in limits.split(","))
    apply_limits(cpu, memory, fsize, nofile, nproc)
    confine_now(lib, policy.get("confine"))
    start_watchdog(wall_ms / 1000)
    sys.path.insert(0, lib)
    genuine = genuine_pathlib(source)
    gateway = (gw_host, int(gw_port) if gw_port else 0)
    workspace = policy.get("workspace") or None
    guard_on = policy.get("guard", True) is not False  # False only from the test-only TOOLSCRIPT_EXEC_GUARD=off
    if guard_on:
        patch_native_loading(make_hook(lib, work, gateway, genuine, workspace)[1])
    here = os.path.abspath(__file__)
    hidden = frozenset({here, __file__, os.path.join(os.path.dirname(here), "toolscript.py")})
    install_excepthook(filename, source, hidden, memory)
    code = compile(source, filename, "exec", flags=PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    # A second make_hook call: the hook shares no closure cell with the wrappers above.
    if guard_on:
        sys.addaudithook(make_hook(lib, work, gateway, genuine, workspace)[0])
    module = type(sys)("__main__")
    module.__dict__.update(__builtins__=__builtins__, __spec__=None, __loader__=None, __package__=None, __cached__=None)
    if not filename.startswith("<"):
        module.__file__ = filename
    sys.modules["__main__"] = module
    sys.argv = [filename] + user_args
    if code.co_flags & CO_COROUTINE:  # top-level await
        import asyncio

        asyncio.run(eval(code, module.__dict__))
    else:
        exec(code, module.__dict__)


if __name__ == "__main__":
    main()
