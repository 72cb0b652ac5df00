# A fork bomb, capped: 200 forks.  Each child sleeps a moment and exits, so they overlap.
# More than 5 going through counts as an escape (the contracted seccomp rule lets none through).
import time


def bomb():
    children, error = [], None
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError as exc:
            error = exc
            break
        if pid == 0:
            time.sleep(2)
            os._exit(0)
        children.append(pid)
    for pid in children:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except OSError:
            pass
    if len(children) > 5:
        return f"{len(children)} forks went through"
    if error is None:
        raise Blocked(f"capped at {len(children)} forks")
    raise error


attempt("200 forks", bomb)
done()
