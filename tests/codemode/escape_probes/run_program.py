# Start another program: subprocess (_posixsubprocess), os.posix_spawn, os.system, and a child
# with LD_PRELOAD (native code outside the guard).  A child that runs prints ESCAPED-...
SH = "/bin/sh"


def spawned(argv, env=None):
    pid = os.posix_spawn(argv[0], argv, env if env is not None else {"PATH": "/usr/bin:/bin"})
    return os.waitpid(pid, 0)


def via_subprocess():
    import subprocess

    return subprocess.run([SH, "-c", "echo ESCAPED-subprocess"], timeout=10).returncode


def via_system():
    status = os.system("echo ESCAPED-system")
    if status != 0:
        raise Blocked(f"the shell did not run (status {status})")
    return status


def ld_preload():
    import subprocess

    env = {"LD_PRELOAD": CONFIG.get("preload") or "/lib/x86_64-linux-gnu/libc.so.6", "PATH": "/usr/bin:/bin"}
    return subprocess.run([SH, "-c", "echo ESCAPED-ld-preload"], env=env, timeout=10).returncode


attempt("subprocess (_posixsubprocess) /bin/sh", via_subprocess)
attempt("os.posix_spawn /bin/sh", lambda: spawned([SH, "-c", "echo ESCAPED-posix_spawn"]))
attempt("os.system", via_system)
attempt("LD_PRELOAD via a spawned child", ld_preload)
done()
