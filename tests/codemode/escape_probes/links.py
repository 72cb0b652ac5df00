# Links out of the work dir: a symlink to /etc/shadow and to a secret, a hard link of the secret
# into the work dir, and a race (a thread flips a symlink between a work file and the secret
# while the main thread reads through it).
import threading
import time


def through_symlink(target, name):
    os.symlink(target, name)
    return read_text(name)


def hard_link():
    os.link(CONFIG["secret"], "hard")
    return read_text("hard")


def race():
    with open("harmless", "w") as f:
        f.write("harmless")
    os.symlink("harmless", "race")
    stop = []

    def flip():
        while not stop:
            for target in (CONFIG["secret"], "harmless"):
                try:
                    os.symlink(target, "race.new")
                    os.replace("race.new", "race")
                except OSError:
                    pass

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    deadline, errors = time.monotonic() + 1.0, []
    try:
        while time.monotonic() < deadline:
            try:
                data = read_text("race")
            except OSError as exc:
                errors.append(exc)
                continue
            if CONFIG["secret_text"].encode() in data:
                return data
    finally:
        stop.append(True)
        thread.join(2)
    if errors:
        raise errors[0]
    raise Blocked("never read the secret through the flipping link")


attempt("symlink to /etc/shadow", lambda: through_symlink("/etc/shadow", "shadow"))
attempt("symlink to a secret", lambda: through_symlink(CONFIG["secret"], "secret"))
attempt("hard link of a secret", hard_link)
attempt("symlink race", race)
done()
