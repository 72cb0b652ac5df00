# SysV IPC, which Landlock does not see: the host's shared memory segment, message queue and semaphore set
# (the test planted one of each; their keys are in CONFIG), and a segment of the script's own, which would
# outlive the sandbox.  Python has no SysV API: ctypes it is, imported in each attempt (with the guard on,
# each one is refused on its own).
IPC_NUMBERS = {  # name: (x86_64, aarch64)
    "shmget": (29, 194), "shmat": (30, 196), "shmdt": (67, 197), "shmctl": (31, 195),
    "msgget": (68, 186), "msgrcv": (70, 188), "semget": (64, 190), "semctl": (66, 191),
}
IPC_CREAT, IPC_NOWAIT, IPC_RMID, GETVAL, SHM_RDONLY = 0o1000, 0o4000, 0, 12, 0o10000
IPC_COLUMN = {"x86_64": 0, "aarch64": 1}.get(os.uname().machine)


def ipc(name, *args):
    return syscall(IPC_NUMBERS[name][IPC_COLUMN], *args)


def read_host_segment():
    import ctypes

    shmid = ipc("shmget", CONFIG["shm_key"], ctypes.c_size_t(0), 0)
    address = ipc("shmat", shmid, None, SHM_RDONLY)
    try:
        return ctypes.string_at(address, 64)
    finally:
        ipc("shmdt", ctypes.c_void_p(address))


def receive_host_message():
    import ctypes

    msqid = ipc("msgget", CONFIG["msg_key"], 0)
    buffer = ctypes.create_string_buffer(8 + 128)  # struct msgbuf {long mtype; char mtext[]}
    size = ipc("msgrcv", msqid, buffer, ctypes.c_size_t(128), ctypes.c_long(0), IPC_NOWAIT)
    return buffer.raw[8:8 + size]


def read_host_semaphore():
    semid = ipc("semget", CONFIG["sem_key"], 0, 0)
    return ipc("semctl", semid, 0, GETVAL)


def new_segment():
    import ctypes

    shmid = ipc("shmget", 0, ctypes.c_size_t(1 << 20), IPC_CREAT | 0o600)  # IPC_PRIVATE
    ipc("shmctl", shmid, IPC_RMID, None)  # it went through: remove it at once
    return f"created segment {shmid}"


if IPC_COLUMN is not None:
    attempt("SysV: read the host's shared memory", read_host_segment)
    attempt("SysV: take the host's queued message", receive_host_message)
    attempt("SysV: read the host's semaphore", read_host_semaphore)
    attempt("SysV: create a segment", new_segment)
done()
