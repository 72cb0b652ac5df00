#!/usr/bin/env python3
"""Build ``dist/toolscript.pyz``: the whole package as one runnable zipapp.

The archive is reproducible: the same source tree, built by the same Python
version, always gives the same bytes.  Entries are sorted, timestamps fixed,
permissions normalised, and only ``*.py`` files and the package data in
``PACKAGE_DATA`` are taken (no ``__pycache__``, no editor droppings).

Each module also goes in compiled, as an unchecked hash-based ``.pyc`` beside
its ``.py`` (PEP 552): zipimport uses it when its magic number matches the
running interpreter, which saves compiling every module on every start (about
40 ms a command), and falls back to the source on any other Python version.  The stdlib
``zipapp`` module is not used because it stamps each file's mtime.

    python3 build_pyz.py                    # -> dist/toolscript.pyz
    python3 build_pyz.py -o plugins/toolscript/bin/toolscript.pyz
"""

import argparse
import io
import marshal
import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "toolscript"
SHEBANG = b"#!/usr/bin/env python3\n"
# 1980-01-01 is the earliest time a zip entry can carry.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
# Files besides modules the package reads with pkgutil.get_data (the TypeScript runtime the gateway
# serves, the word-vector table and thesaurus toolscript/search/ loads, the hook scripts
# `toolscript setup` installs, the gateway's web page).
PACKAGE_DATA = (".ts", ".bin", ".tsv", ".sh", ".html", ".js", ".css")
# Stored, not deflated: the embedding table is quantised vectors that deflate shrinks by only ~16%, and a hook
# process that reads it would spend ~15-50 ms inflating 3.8 MB; stored, reading it is one copy.
STORED_DATA = (".bin",)
# Any python3 may run the archive: this text, toolscript/__init__.py and toolscript/__main__.py are in syntax every
# Python parses, and main() checks the version before importing anything else (one line on an older Python).
MAIN = b'''\
# Entry point of toolscript.pyz (written by build_pyz.py).
from toolscript.__main__ import main
main()
'''


def package_files(root: str = ROOT) -> list:
    """Sorted archive names of every module and data file under the package."""
    names = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for filename in filenames:
            if filename.endswith((".py",) + PACKAGE_DATA):
                path = os.path.join(dirpath, filename)
                names.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return sorted(names)


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
    info.compress_type = zipfile.ZIP_STORED if name.endswith(STORED_DATA) else zipfile.ZIP_DEFLATED
    info.create_system = 3  # unix, so the mode bits below are honoured everywhere
    info.external_attr = 0o644 << 16
    return info


# Run in a fresh ``python -I -S``: marshal's output depends on the reference counts of the
# objects it writes (shared strings get back-references), so the same source marshals
# differently in a process that has loaded other things.  A fresh interpreter in the same
# state every time makes the bytes reproducible.
_COMPILER = """
import importlib.util, marshal, sys
sources = marshal.loads(sys.stdin.buffer.read())
flags = (1).to_bytes(4, "little")  # hash-based, source not checked: the archive never changes
out = {}
for name, source in sorted(sources.items()):
    code = compile(source, name, "exec", dont_inherit=True, optimize=0)
    out[name] = importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)
sys.stdout.buffer.write(marshal.dumps(out))
"""


def compiled(sources: dict) -> dict:
    """{archive name: unchecked hash-based ``.pyc`` bytes for this interpreter} (names show in tracebacks)."""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", _COMPILER], input=marshal.dumps(sources), capture_output=True, check=True)
    return marshal.loads(done.stdout)


def build(output: str, root: str = ROOT) -> str:
    """Write the archive to ``output`` atomically and return its path."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(_entry("__main__.py"), MAIN, compresslevel=9)
        sources = {}
        for name in package_files(root):
            with open(os.path.join(root, name), "rb") as source:
                sources[name] = source.read()
        pycs = compiled({name: data for name, data in sources.items() if name.endswith(".py")})
        for name, data in sources.items():
            archive.writestr(_entry(name), data, compresslevel=9)
            if name in pycs:
                archive.writestr(_entry(name + "c"), pycs[name], compresslevel=9)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    tmp = f"{output}.tmp{os.getpid()}"
    with open(tmp, "wb") as out:
        out.write(SHEBANG)
        out.write(buffer.getvalue())
    os.chmod(tmp, 0o755)
    os.replace(tmp, output)
    return output


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the toolscript zipapp (reproducibly).")
    parser.add_argument("-o", "--output", default=os.path.join(ROOT, "dist", "toolscript.pyz"), help="where to write it (default: dist/toolscript.pyz)")
    args = parser.parse_args(argv)
    path = build(args.output)
    print(f"wrote {os.path.relpath(path)} ({os.path.getsize(path)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
