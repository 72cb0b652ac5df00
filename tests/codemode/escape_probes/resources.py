# What the limits must count: threads (root is exempt from RLIMIT_NPROC, so 1000 small-stacked threads went
# through), memory outside the address-space limit (memfd_create), and a file kept alive by a descriptor in
# flight on a unix socket, which no descriptor table shows.  More than THREADS_ESCAPED threads at once counts as
# an escape (the sandbox allows 64 tasks).
import socket
import threading

THREADS_TRIED, THREADS_ESCAPED = 1000, 256


def threads():
    stop, started, error = threading.Event(), [], None
    threading.stack_size(64 * 1024)  # small stacks: the address-space limit is not what stops them
    try:
        for _ in range(THREADS_TRIED):
            thread = threading.Thread(target=stop.wait, daemon=True)
            thread.start()
            started.append(thread)
    except RuntimeError as exc:
        error = exc
    finally:
        stop.set()
        for thread in started:
            thread.join()
        threading.stack_size(0)
    if len(started) > THREADS_ESCAPED:
        return f"{len(started)} threads ran at once"
    raise Blocked(f"capped at {len(started)} threads: {error}")


def memfd():
    fd = os.memfd_create("probe")
    os.write(fd, b"x" * 4096)
    return f"memfd {fd}, outside the memory limit"


def descriptor_in_flight():
    left, right = socket.socketpair()
    with open("in-flight", "wb") as f:
        f.write(b"x" * 4096)
    fd = os.open("in-flight", os.O_RDONLY)
    os.unlink("in-flight")
    try:
        socket.send_fds(left, [b"x"], [fd])
    finally:
        os.close(fd)
    return "an unlinked file in flight, in no descriptor table"


attempt("1000 threads", threads)
attempt("memfd_create", memfd)
attempt("pass a descriptor over a socketpair", descriptor_in_flight)
done()
