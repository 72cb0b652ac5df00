# Signal a process outside the sandbox (the test's sleeper, in its own process group):
# os.kill, os.killpg, signal.pidfd_send_signal, and kill(2) through ctypes.
import signal

target = CONFIG["sleeper"]


def pidfd_kill():
    fd = os.pidfd_open(target)
    signal.pidfd_send_signal(fd, signal.SIGKILL)


attempt("os.kill SIGKILL", lambda: os.kill(target, signal.SIGKILL))
attempt("os.killpg SIGKILL", lambda: os.killpg(target, signal.SIGKILL))
attempt("signal.pidfd_send_signal", pidfd_kill)
attempt("kill(2) via ctypes", lambda: syscall(62, target, int(signal.SIGKILL)))
done()
