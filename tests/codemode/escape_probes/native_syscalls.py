# Raw system calls through ctypes (stdlib): what the Python layer cannot see.  Numbers are x86-64.
# ctypes is imported inside each attempt: with the guard on, each one is refused on its own.
AT_FDCWD = -100


def openat2(path):
    import ctypes

    how = (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0)  # struct open_how {flags, mode, resolve}
    fd = syscall(437, AT_FDCWD, path.encode(), ctypes.byref(how), ctypes.sizeof(how))
    return os.read(fd, 100)


def io_uring_setup():
    import ctypes

    params = ctypes.create_string_buffer(120)
    return syscall(425, 4, params)


def bpf_map():
    import ctypes

    attr = (ctypes.c_uint32 * 30)(2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
    return syscall(321, 0, attr, ctypes.sizeof(attr))


def perf_event():
    import ctypes

    attr = (ctypes.c_uint8 * 128)()
    ctypes.c_uint32.from_buffer(attr, 0).value = 1  # PERF_TYPE_SOFTWARE
    ctypes.c_uint32.from_buffer(attr, 4).value = 128  # size
    return syscall(298, attr, 0, -1, -1, 0)


def process_vm_readv():
    import ctypes

    local = ctypes.create_string_buffer(16)
    liov = (ctypes.c_void_p * 2)(ctypes.addressof(local), 16)
    riov = (ctypes.c_void_p * 2)(0x400000, 16)
    return reached(310, CONFIG["sleeper"], liov, 1, riov, 1, 0)


def mount_tmpfs():
    os.makedirs("mnt", exist_ok=True)
    target = os.path.abspath("mnt").encode()
    syscall(165, b"none", target, b"tmpfs", 0, None)
    # It went through: undo it at once (without a mount namespace it would outlive the sandbox).
    syscall(166, target, 2)  # umount2(MNT_DETACH)
    return "mounted a tmpfs"


def openat(path):
    fd = syscall(257, AT_FDCWD, path.encode(), os.O_RDONLY, 0)
    return os.read(fd, 100)


if os.uname().machine == "x86_64":
    attempt("openat(2) a secret via syscall", lambda: openat(CONFIG["secret"]))
    attempt("mknodat(2) a char device via syscall", lambda: syscall(259, AT_FDCWD, b"mem2", 0o20600, (1 << 8) | 1))
    attempt("openat2 /etc/shadow", lambda: openat2("/etc/shadow"))
    attempt("openat2 a secret", lambda: openat2(CONFIG["secret"]))
    attempt("io_uring_setup", io_uring_setup)
    attempt("ptrace attach", lambda: reached(101, 16, CONFIG["sleeper"], 0, 0))
    attempt("process_vm_readv", process_vm_readv)
    attempt("bpf map create", bpf_map)
    attempt("perf_event_open", perf_event)
    attempt("userfaultfd", lambda: syscall(323, 0))
    attempt("keyctl join session keyring", lambda: syscall(250, 1, None))
    attempt("mount tmpfs", mount_tmpfs)
    attempt("unshare mount namespace", lambda: syscall(272, 0x00020000))
    attempt("memfd_create + execveat", lambda: reached(322, syscall(319, b"x", 0), b"", None, None, 0x1000))
    attempt("socket(AF_PACKET) via syscall", lambda: syscall(41, 17, 3, 0))
    attempt("kexec_load", lambda: reached(246, 0, 0, None, 0))
done()
