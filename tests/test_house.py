"""The project speaks of itself only: no trace of how it was made in the product, its tests or its docs.

Comments, docstrings, test names and docs say what the code does and why. They do
not name numbered rounds or sessions of past work, contributors' code names, issue
or specification numbers, or documents that live outside the repository: a reader
of the repository cannot follow any of those. (Experiment history belongs in
bench/'s own documents, which this check leaves alone.)
"""

import os
import re
import subprocess

from conftest import REPO_ROOT

# Each pattern, and an example of what it catches (the test below proves each one bites).
FORBIDDEN = [
    (re.compile(r"\bspecs? ?0{0,2}[0-9]{1,2}\b(?!\.[0-9])|\bspec ?#", re.I), "as spec 003 says"),
    (re.compile(r"\b(?:EC|TC|REQ|ERR)-P[0-9]"), "see EC-P6-04"),
    (re.compile(r"\bissues? #?[0-9]+\b", re.I), "since issue 13"),
    (re.compile(r"\bsession [0-9]+\b(?![a-f0-9])", re.I), "tuned in session 18"),
    (re.compile(r"\b(?:round [0-9]+|(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) round)\b", re.I), "fusion round 2"),
    (re.compile(r"\bhelper [A-Z]\b"), "written by helper B"),
    (re.compile(r"ARCHITECTURE\.md|\bshared/notes\b|\bnotes/(?:claude-code|mcp-protocol|peers|performance|landscape[-0-9]*)\.md\b|toolscript-deno-anchor"),
     "see ARCHITECTURE.md"),
]
CHECKED = ("toolscript/", "tests/", "docs/", "README.md")
TEXT_SUFFIXES = (".py", ".md", ".sh", ".ts", ".txt", ".json", ".ini", ".toml")


def findings(text: str):
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, _example in FORBIDDEN:
            match = pattern.search(line)
            if match:
                yield number, match.group(0), line.strip()


def tracked_files():
    listed = subprocess.run(["git", "ls-files", *CHECKED], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    for path in listed.split():
        if path.endswith(TEXT_SUFFIXES) and os.path.isfile(os.path.join(REPO_ROOT, path)) and path != "tests/test_house.py":
            yield path


def test_each_pattern_bites_and_spares_what_is_not_history():
    for pattern, example in FORBIDDEN:
        assert pattern.search(example), (pattern.pattern, example)
    spared = ["the session 3f1c ran", "json schema draft 2020-12", "round trip", "a helper function",
              "issues a token", "specs of tools", "Python 3.9", "notes for the user", "read notes/a.md"]
    for text in spared:
        assert not list(findings(text)), text


def test_no_trace_of_how_the_project_was_made():
    found = []
    for path in tracked_files():
        with open(os.path.join(REPO_ROOT, path), encoding="utf-8", errors="replace") as f:
            for number, match, line in findings(f.read()):
                found.append(f"{path}:{number}: {match!r} in {line[:120]}")
    assert not found, f"{len(found)} references to how the project was made:\n" + "\n".join(found[:80])


def test_the_package_top_holds_only_the_foundations():
    top = sorted(name for name in os.listdir(os.path.join(REPO_ROOT, "toolscript")) if name.endswith(".py"))
    assert len(top) <= 6, f"toolscript/ holds {len(top)} top-level modules; put new ones in the folder of their layer: {top}"


def test_no_module_is_too_long_to_read():
    """No module over 1,200 lines, and one over 1,000 says at its top why it stays whole."""
    too_long = []
    for path in tracked_files():
        if not (path.startswith("toolscript/") and path.endswith(".py")):
            continue
        with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > 1200 or (lines > 1000 and "stays whole" not in text[:3000]):
            too_long.append(f"{path}: {lines} lines")
    assert not too_long, "split these, or say at the top why one stays whole:\n" + "\n".join(too_long)
