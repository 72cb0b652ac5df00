#!/usr/bin/env python3
"""Build the neutral sentence corpus distill/distill.py trains the token table on (issue 13, tokenlearn-style).

Short developer-ish sentences that say what a piece of software does, from sources that are pinned and
have nothing to do with bench/ (the held-out set must never be seen, and the development set only where
a flag asks for it):

- ``debian``: the short description of every package in Debian 12's main/binary-amd64 Packages file
  (the one apt fetched here, checked against PACKAGES_SHA256; distill/README.md says where to get it).
- ``python``: the first line of every module, class and function docstring of CPython's standard library
  (the ``Lib/`` of the Python running this script, tests and site-packages left out).
- ``man``: the NAME line of every English manual page of the Debian 12 image the table was made on
  (``apropos -l .``), committed as distill/man-names.txt since a man-db's contents are not pinnable
  (``--man-from-apropos`` remakes the file on another machine).
- ``wordnet``: every WordNet 3.0 synset as ``lemma, lemma: definition``, and ``wordnet-examples`` its quoted
  example sentences, read from Debian 12's wordnet-base .deb (checked against WORDNET_SHA256).
- ``api``: the first sentence of every operation's documentation in the AWS API models botocore ships
  (``data/<service>/<latest date>/service-2.json.gz`` of the pinned wheel, checked against BOTOCORE_SHA256):
  "Cancels a queued build", "Lists the tags of a resource" -- the text tool search is about; and ``api-google``
  the same of every method in the Google API discovery documents google-api-python-client ships
  (``discovery_cache/documents/*.json``, checked against GOOGLEAPI_SHA256). ``api`` is both. ``api_pairs()``
  gives (the operation name split into words, that sentence) for a contrastive stage.
- ``dev``: the development catalogs' tool descriptions (bench/search/sets/set00/catalogs/, first sentence) -- dev data,
  only with ``--sources ...,dev``.

Sentences are cleaned (whitespace collapsed, 3 to 32 words), deduplicated case-insensitively, and
sorted, so the same sources give the same corpus byte for byte.  Stdlib only.

    python3 distill/corpus.py [--sources debian,man,wordnet] -o /tmp/corpus.txt
"""

import argparse
import ast
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4"
# Debian 12.15 (bookworm, Release dated 2026-07-11 10:16:37 UTC): the uncompressed main/binary-amd64/Packages,
# 50,060,337 bytes, as listed in that Release file.
PACKAGES_SHA256 = "515e692f2c4121c6fcec444ef100cc18f79a991910615f3a88c8b7becfc94d2f"
# Of Debian's ~59,000 distinct descriptions, this many (the teacher's pass over all of them would take
# ~20 minutes of one core; 28,000 keep the whole corpus near 10).
DEBIAN_COUNT = 28000
# WordNet 3.0 as Debian 12 packages it (wordnet-base 1:3.0-37, `apt-get download wordnet-base`): the .deb's sha256.
WORDNET = "/var/cache/apt/archives/wordnet-base_1%3a3.0-37_all.deb"
WORDNET_SHA256 = "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752"
# botocore 1.35.99 (PyPI, `pip download --no-deps botocore==1.35.99`): the wheel's sha256. Its AWS API models
# (403 services) are the in-domain source ``api``.
BOTOCORE = os.path.join(os.path.expanduser("~"), ".cache", "toolscript-distill", "botocore-1.35.99-py3-none-any.whl")
BOTOCORE_SHA256 = "b22d27b6b617fc2d7342090d6129000af2efd20174215948c0d7ae2da0fab445"
# google-api-python-client 2.160.0 (PyPI): 534 Google API discovery documents, the source ``api-google``.
GOOGLEAPI = os.path.join(os.path.expanduser("~"), ".cache", "toolscript-distill", "google_api_python_client-2.160.0-py2.py3-none-any.whl")
GOOGLEAPI_SHA256 = "63d61fb3e4cf3fb31a70a87f45567c22f6dfe87bbfa27252317e3e2c42900db4"
SOURCES = ("debian", "python", "man", "dev", "wordnet", "wordnet-examples", "api", "api-aws", "api-google")
# VECTORS-V3 added WordNet's glosses; its example sentences, all of Debian's descriptions, python's docstrings
# and the dev catalogs were tried and left out (distill/README.md).
DEFAULT_SOURCES = ("debian", "man", "wordnet")
MAN_NAMES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "man-names.txt")
_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _read_packages(path: str) -> bytes:
    if path.endswith(".lz4"):
        data = subprocess.run(["lz4", "-dc", path], capture_output=True, check=True).stdout
    elif path.endswith(".xz"):
        import lzma
        with open(path, "rb") as f:
            data = lzma.decompress(f.read())
    else:
        with open(path, "rb") as f:
            data = f.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != PACKAGES_SHA256:
        sys.exit(f"{path}: sha256 {digest}, expected {PACKAGES_SHA256}: get that Packages file (distill/README.md)")
    return data


def debian(path: str) -> list:
    text = _read_packages(path).decode("utf-8")
    return [line[len("Description: "):] for line in text.split("\n") if line.startswith("Description: ")]


def python_stdlib() -> list:
    lib = sysconfig.get_paths()["stdlib"]
    out = []
    for path in sorted(glob.glob(os.path.join(lib, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, lib)
        parts = rel.split(os.sep)
        if parts[0] in ("site-packages", "test", "idlelib", "lib2to3", "turtledemo") or "tests" in parts:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    out.append(doc.strip().split("\n\n")[0])
    return out


def man() -> list:
    with open(MAN_NAMES, encoding="utf-8") as f:
        return f.read().splitlines()


def man_from_apropos() -> list:
    proc = subprocess.run(["apropos", "-l", "."], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    return [line.split(" - ", 1)[1] for line in proc.stdout.splitlines() if " - " in line]


def dev() -> list:
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "search", "sets", "set00", "catalogs", "*.json"))):
        with open(path, encoding="utf-8") as f:
            for tool in json.load(f)["tools"]:
                out.append(tool.get("description") or "")
    return out


def _deb_member(path: str, sha256: str, wanted: str) -> bytes:
    """One file of a .deb (an ar archive holding data.tar.*), after checking the .deb's sha256."""
    import io
    import tarfile
    with open(path, "rb") as f:
        data = f.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        sys.exit(f"{path}: sha256 {digest}, expected {sha256}: get that package (distill/README.md)")
    offset = 8  # "!<arch>\n", then 60-byte member headers: name 16, ..., size 10 at 48
    while offset < len(data):
        name = data[offset:offset + 16].decode("ascii").strip().rstrip("/")
        size = int(data[offset + 48:offset + 58].decode("ascii").strip())
        body = data[offset + 60:offset + 60 + size]
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                member = tar.extractfile("./" + wanted.lstrip("/"))
                return member.read()
        offset += 60 + size + (size & 1)
    sys.exit(f"{path}: no data.tar member")


_WORDNET_MARKER = re.compile(r"\([a-z]+\)$")  # adjective position markers: "galore(ip)"
_QUOTED = re.compile(r'"([^"]*)"')


def wordnet_synsets(path: str) -> list:
    """(lemmas, definition, examples) of every WordNet synset, in the files' order (verb, noun, adj, adv)."""
    out = []
    for part in ("verb", "noun", "adj", "adv"):
        text = _deb_member(path, WORDNET_SHA256, f"/usr/share/wordnet/data.{part}").decode("utf-8")
        for line in text.split("\n"):
            if not line or line.startswith("  ") or " | " not in line:
                continue  # the licence header and the final newline
            head, gloss = line.split(" | ", 1)
            fields = head.split()
            count = int(fields[3], 16)
            lemmas = [_WORDNET_MARKER.sub("", fields[4 + 2 * n]).replace("_", " ") for n in range(count)]
            definition = gloss.split('"', 1)[0].strip().rstrip(";").strip()
            out.append((lemmas, definition, [e.strip() for e in _QUOTED.findall(gloss)]))
    return out


def wordnet(path: str = WORDNET) -> list:
    """Each synset as 'lemma, lemma: definition' -- what ties an everyday word to the words that explain it."""
    return [f"{', '.join(lemmas[:3])}: {definition}" for lemmas, definition, _ in wordnet_synsets(path) if definition]


def wordnet_examples(path: str = WORDNET) -> list:
    """WordNet's example sentences ("his years in prison have barbarized the young man"): words in use."""
    return [example for _, _, examples in wordnet_synsets(path) for example in examples]


_TAG = re.compile(r"<[^>]*>")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKDOWN = re.compile(r"[*`]+")


def _checked_wheel(path: str, sha256: str, fix: str):
    """The wheel at ``path`` opened as a zip, after checking it is the pinned one (else exit saying ``fix``)."""
    import zipfile
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != sha256:
        sys.exit(f"{path}: sha256 {digest}, expected {sha256}: {fix}")
    return zipfile.ZipFile(path)


def _botocore_models(path: str) -> list:
    """(service, model) of each service's newest API model in the botocore wheel, in service order."""
    import gzip
    newest = {}
    with _checked_wheel(path, BOTOCORE_SHA256, "pip download --no-deps botocore==1.35.99") as wheel:
        for name in wheel.namelist():
            parts = name.split("/")
            if len(parts) == 5 and parts[1] == "data" and parts[4] in ("service-2.json", "service-2.json.gz"):
                if parts[3] > newest.get(parts[2], ("", ""))[0]:
                    newest[parts[2]] = (parts[3], name)
        out = []
        for service in sorted(newest):
            data = wheel.read(newest[service][1])
            if newest[service][1].endswith(".gz"):
                data = gzip.decompress(data)
            out.append((service, json.loads(data.decode("utf-8"))))
    return out


def google_operations(path: str = "") -> list:
    """(method path, description) of every method of every Google discovery document: "users.messages.list", ..."""
    out = []

    def walk(resource: dict) -> None:
        for method in (resource.get("methods") or {}).values():
            text = _MD_LINK.sub(r"\1", _TAG.sub(" ", method.get("description") or ""))
            text = _SPACE.sub(" ", _MARKDOWN.sub("", text)).strip()
            if text:
                # "gmail.users.messages.list" -> "list.messages": the method, then the resource it acts on
                out.append((".".join(reversed(method.get("id", "").split(".")[-2:])), text))
        for child in (resource.get("resources") or {}).values():
            walk(child)

    with _checked_wheel(path or GOOGLEAPI, GOOGLEAPI_SHA256, "pip download --no-deps google-api-python-client==2.160.0") as wheel:
        for name in sorted(wheel.namelist()):
            if "/discovery_cache/documents/" in name and name.endswith(".json"):
                walk(json.loads(wheel.read(name).decode("utf-8")))
    return out


def api_operations(path: str = "") -> list:
    """(operation name, its documentation's text) of every AWS operation: "CancelJob", "Cancels a job. ..."."""
    out = []
    for _, model in _botocore_models(path or BOTOCORE):
        for name, operation in sorted(model.get("operations", {}).items()):
            text = _SPACE.sub(" ", _TAG.sub(" ", operation.get("documentation") or "")).strip()
            if text:
                out.append((name, text))
    return out


def api_pairs(sources: tuple = ("api-aws", "api-google")) -> list:
    """(name words, first sentence) of each operation, deduplicated: ("cancel job", "Cancels a job.")."""
    operations = (api_operations() if "api-aws" in sources else []) + (google_operations() if "api-google" in sources else [])
    seen = {}
    for name, text in operations:
        sentence = clean(text)
        if sentence:
            words = " ".join(word.lower() for word in _CAMEL.findall(name.replace(".", " ")))
            seen.setdefault((words, sentence.lower()), (words, sentence))
    return sorted(seen.values())


def clean(text: str) -> str:
    """One sentence: the first of the text, whitespace collapsed; '' when it is too short or too long."""
    text = _SPACE.sub(" ", text).strip()
    text = _SENTENCE_END.split(text, maxsplit=1)[0]
    words = len(text.split())
    return text if 3 <= words <= 32 else ""


def sample(sentences: list, count: int) -> list:
    """The ``count`` cleaned, distinct sentences whose lower-case text has the lowest sha256 (0 = all).

    A fixed pseudo-random share, so the teacher's pass fits its time box without favouring any part of
    the alphabet or any kind of package.
    """
    distinct = {}
    for text in sentences:
        sentence = clean(text)
        if sentence:
            distinct.setdefault(sentence.lower(), sentence)
    keys = sorted(distinct, key=lambda key: hashlib.sha256(key.encode("utf-8")).hexdigest())
    return [distinct[key] for key in (keys[:count] if count else keys)]


def held_aside(sentence: str) -> bool:
    """Whether a sentence is in the fixed 1/16 that experiments leave out of the fit (distill/fidelity.py)."""
    return hashlib.sha256(sentence.lower().encode("utf-8")).hexdigest()[0] == "0"


def build(sources: list, packages: str = PACKAGES, debian_count: int = DEBIAN_COUNT, wordnet_path: str = WORDNET) -> list:
    raw = []
    for source in sources:
        if source == "debian":
            raw.extend(sample(debian(packages), debian_count))
        elif source == "python":
            raw.extend(python_stdlib())
        elif source == "man":
            raw.extend(man())
        elif source == "dev":
            raw.extend(dev())
        elif source in ("api", "api-aws"):
            raw.extend(text for _, text in api_operations())
        if source in ("api", "api-google"):
            raw.extend(text for _, text in google_operations())
        elif source == "wordnet":
            raw.extend(wordnet(wordnet_path))
        elif source == "wordnet-examples":
            raw.extend(wordnet_examples(wordnet_path))
    seen = {}
    for text in raw:
        sentence = clean(text)
        if sentence:
            seen.setdefault(sentence.lower(), sentence)
    return sorted(seen.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", default=",".join(DEFAULT_SOURCES), help=f"comma-separated, of {', '.join(SOURCES)}")
    parser.add_argument("--packages", default=PACKAGES, help="Debian bookworm main/binary-amd64 Packages (.lz4, .xz or plain)")
    parser.add_argument("--debian", type=int, default=DEBIAN_COUNT,
                        help="Debian descriptions kept, a fixed pseudo-random share (0 = all)")
    parser.add_argument("--wordnet", default=WORDNET, help="wordnet-base_1:3.0-37_all.deb (apt-get download wordnet-base)")
    parser.add_argument("--man-from-apropos", action="store_true",
                        help="write this machine's man-page NAME lines (distill/man-names.txt)")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    if args.man_from_apropos:
        lines = sorted({clean(line) for line in man_from_apropos()} - {""})
        with open(args.output, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {args.output}: {len(lines)} lines")
        return 0
    sentences = build(args.sources.split(","), args.packages, args.debian, args.wordnet)
    data = ("\n".join(sentences) + "\n").encode("utf-8")
    with open(args.output, "wb") as f:
        f.write(data)
    print(f"wrote {args.output}: {len(sentences)} sentences, sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
