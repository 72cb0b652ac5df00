# Replace the interpreter with another program: os.execv("/bin/sh"), memfd_create + fexecve of a
# tiny static ELF written here, and the same ELF written to the work dir.  Whichever runs prints
# ESCAPED-... (and then nothing else of this script runs).
import struct


def tiny_elf(message):
    """A static x86-64 ELF that writes ``message`` to stdout and exits 0 (no loader, no libraries)."""
    base, header_size = 0x400000, 64 + 56
    code = (b"\xb8\x01\x00\x00\x00" b"\xbf\x01\x00\x00\x00" b"\x48\x8d\x35\x10\x00\x00\x00"
            + b"\xba" + struct.pack("<I", len(message)) + b"\x0f\x05" b"\xb8\x3c\x00\x00\x00" b"\x31\xff" b"\x0f\x05")
    body = code + message
    size = header_size + len(body)
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + b"\0" * 9, 2, 0x3E, 1,
                       base + header_size, 64, 0, 0, 64, 56, 1, 64, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)
    return ehdr + phdr + body


def memfd_exec():
    fd = os.memfd_create("probe", 0)
    os.write(fd, tiny_elf(b"ESCAPED-memfd\n"))
    os.execve(fd, ["probe"], {})


def work_exec():
    with open("probe.bin", "wb") as f:
        f.write(tiny_elf(b"ESCAPED-work-exec\n"))
    os.chmod("probe.bin", 0o700)
    os.execv(os.path.abspath("probe.bin"), ["probe"])


if os.uname().machine == "x86_64":
    attempt("memfd_create + fexecve", memfd_exec)
    attempt("exec a file written in the work dir", work_exec)
attempt("os.execv /bin/sh", lambda: os.execv("/bin/sh", ["sh", "-c", "echo ESCAPED-execv"]))
done()
