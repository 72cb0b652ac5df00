# os.mkfifo / os.mknod outside the work dir, and a device node (as root: /dev/mem's numbers) inside it.
import stat

outside = CONFIG["outside_dir"]
attempt("mkfifo outside", lambda: os.mkfifo(os.path.join(outside, "fifo")))
attempt("mknod a file outside", lambda: os.mknod(os.path.join(outside, "node"), stat.S_IFREG | 0o600))
attempt("mknod a char device in the work dir", lambda: os.mknod("mem", stat.S_IFCHR | 0o600, os.makedev(1, 1)))
attempt("mknod a block device in the work dir", lambda: os.mknod("disk", stat.S_IFBLK | 0o600, os.makedev(7, 0)))
done()
