# Read what lies outside the sandbox: /etc/shadow, the user's ssh key, a gateway state file
# (it holds another session's token URL), and list the state dir.
attempt("read /etc/shadow", lambda: read_text("/etc/shadow"))
attempt("read ~/.ssh/id_rsa", lambda: read_text(CONFIG["ssh_key"]))
attempt("read a gateway state file", lambda: read_text(CONFIG["state_file"]))
attempt("list the state dir", lambda: os.listdir(os.path.dirname(CONFIG["state_file"])))
attempt("os.open a secret", lambda: os.read(os.open(CONFIG["secret"], os.O_RDONLY), 100))
attempt("read another process's /proc/<pid>/environ", lambda: read_text("/proc/%d/environ" % CONFIG["sleeper"]))
done()
