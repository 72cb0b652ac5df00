# Write outside the private work dir: a new file, a directory, truncating a file the test owns and
# changing its metadata (mode, owner, times, extended attributes: Landlock has no right for those),
# renaming a work file out, and a file in the system temp dir.
outside = CONFIG["outside_dir"]


def write_new():
    with open(os.path.join(outside, "written"), "w") as f:
        f.write("escaped")


def rename_out():
    with open("mine", "w") as f:
        f.write("escaped")
    os.rename("mine", os.path.join(outside, "renamed"))


def write_tmp():
    with open(CONFIG["tmp_marker"], "w") as f:
        f.write("escaped")
    # A rung may give the script a private /tmp (bubblewrap's tmpfs): writing there is no escape.
    # The test checks the host's temp dir for the marker afterwards, which is what decides.
    raise Contained("the write went to a /tmp of the sandbox's own; the test checks the host's")


attempt("write a file outside", write_new)
attempt("mkdir outside", lambda: os.mkdir(os.path.join(outside, "dir")))
attempt("truncate a file outside", lambda: os.truncate(CONFIG["secret"], 0))
attempt("chmod a file outside", lambda: os.chmod(CONFIG["secret"], 0o777))
attempt("chown a file outside", lambda: os.chown(CONFIG["secret"], 65534, 65534))
attempt("utime a file outside", lambda: os.utime(CONFIG["secret"], (0, 0)))
attempt("setxattr a file outside", lambda: os.setxattr(CONFIG["secret"], "user.escape", b"1"))
attempt("rename a file out of the work dir", rename_out)
attempt("write in the system temp dir", write_tmp)
done()
