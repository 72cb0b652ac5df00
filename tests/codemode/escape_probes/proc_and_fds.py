# /proc/<pid>/mem of another process, and file descriptors the parent might have passed on:
# /proc/self/fd entries and every fd from 3 to 255 read directly (no path, no audit event).
import stat


def proc_mem():
    with open("/proc/%d/mem" % CONFIG["sleeper"], "rb") as f:
        return f.read(1)


def proc_maps():
    return read_text("/proc/%d/maps" % CONFIG["sleeper"])


def inherited_by_path():
    found = []
    for name in os.listdir("/proc/self/fd"):
        target = os.readlink("/proc/self/fd/" + name)
        if target == CONFIG["secret"]:
            found.append(read_text("/proc/self/fd/" + name))
    if not found:
        raise Blocked("no inherited fd names the secret")
    return found


def inherited_by_number():
    for fd in range(3, 256):
        try:
            info = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            data = os.pread(fd, 4096, 0)
            if CONFIG["secret_text"].encode() in data:
                return f"fd {fd}: {data!r}"
    raise Blocked("no inherited fd holds the secret")


attempt("open /proc/<pid>/mem", proc_mem)
attempt("read /proc/<pid>/maps", proc_maps)
attempt("/proc/self/fd of inherited fds", inherited_by_path)
attempt("read inherited fds by number", inherited_by_number)
done()
