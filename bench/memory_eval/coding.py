#!/usr/bin/env python3
"""Memory retrieval on coding-session memories (bench/memory_eval/coding/): the set built for this project.

    .venv/bin/python bench/memory_eval/coding.py [--split dev|heldout] [--json OUT] [--misses N]

Tune on ``dev`` (the default); ``heldout`` is asked for by name, once, for the report after tuning.

Each file holds projects, their sessions (date and time) and the memories a session captured, written the
way toolscript's capture writes them (``Ran `cmd`: outcome``, ``Edited path: `old` -> `new```, answers,
notes), some labelled ``#label``; and questions a user would ask in a later session, each with the labels
of the memories that answer it::

    project /home/ana/src/shop
    session 2026-02-02 09:10 shop-1
    - Bash | | Ran `pytest -q`: 1 failed, ... #cart-fail
    - Edit | src/shop/cart.py | Edited src/shop/cart.py: `a` -> `b` #cart-fix
    ? single | why did the cart test fail? | cart-fail cart-fix

Between the written memories each session gets the routine work every session has (reads, searches, git
status, test runs that pass), generated from a fixed seed with the project's own file names, so a question
has to find its memory among a few hundred.  Categories: single (one fact), multi (facts of two memories),
temporal (when, last, first), paraphrase (asked in other words than the memory's).
"""

import argparse
import calendar
import os
import random
import sys
from datetime import datetime
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import evallib  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "coding")
CATEGORIES = (("single", "single"), ("multi", "multi"), ("temporal", "temporal"), ("paraphrase", "paraphrase"))
ROUTINE_PER_SESSION = (14, 24)
KINDS = {"response": "response", "note": "note", "summary": "summary"}


def _routine(rng: random.Random, files: List[str]) -> Tuple[str, str, List[str]]:
    """(tool, content, files) of one routine action."""
    path = rng.choice(files) if files else "README.md"
    choice = rng.randrange(9)
    if choice == 0:
        return "Read", "Read %s" % path, [path]
    if choice == 1:
        return "Bash", "Ran `git status`: On branch main, nothing to commit, working tree clean", []
    if choice == 2:
        return "Bash", "Ran `git diff --stat`: %d files changed, %d insertions(+), %d deletions(-)" % (
            rng.randint(1, 6), rng.randint(3, 120), rng.randint(0, 40)), []
    if choice == 3:
        word = rng.choice(["TODO", "FIXME", "def main", "import logging", "config", "raise", "return None"])
        return "Grep", "Searched for `%s` in %s" % (word, os.path.dirname(path) or "."), []
    if choice == 4:
        return "Bash", "Ran `ls %s`: %d entries" % (os.path.dirname(path) or ".", rng.randint(3, 30)), []
    if choice == 5:
        return "Bash", "Ran `git log --oneline -5`: 5 commits shown", []
    if choice == 6:
        return "Bash", "Ran `git add -A && git commit -m \"wip\"`: 1 commit created", []
    if choice == 7:
        return "Glob", "Searched for `**/*%s` in ." % os.path.splitext(path)[1], []
    return "Read", "Read %s (lines %d-%d)" % (path, rng.randint(1, 80), rng.randint(81, 300)), [path]


def parse(path: str, seed: int = 31) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    rng = random.Random(seed)
    units: List[Dict[str, Any]] = []
    questions: List[Dict[str, Any]] = []
    labels: Dict[str, str] = {}
    project = ""
    session = ""
    clock = 0.0
    last: Dict[str, float] = {}
    files: Dict[str, List[str]] = {}
    pending: List[Tuple[str, Dict[str, Any]]] = []

    def add(tool: str, content: str, paths: List[str], kind: str) -> str:
        nonlocal clock
        clock += rng.randint(20, 240)
        key = "%s#%d" % (session, len(units))
        units.append({"key": key, "project": project, "session": session, "created": clock, "content": content,
                      "kind": kind, "tool": tool if kind == "action" else "", "files": paths})
        last[project] = clock
        return key

    def routine(n: int) -> None:
        for _ in range(n):
            tool, content, paths = _routine(rng, files.get(project, []))
            add(tool, content, paths, "action")

    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("project "):
            project = line.split(" ", 1)[1].strip()
        elif line.startswith("session "):
            _, day, hour, session = line.split()
            clock = float(calendar.timegm(datetime.strptime(day + " " + hour, "%Y-%m-%d %H:%M").timetuple()))
            routine(rng.randint(2, 5))
        elif line.startswith("- "):
            tool, paths, text = [part.strip() for part in line[2:].split("|", 2)]
            label = ""
            if " #" in text:
                text, label = [part.strip() for part in text.rsplit(" #", 1)]
            path_list = [p for p in paths.split() if p]
            files.setdefault(project, []).extend(p for p in path_list if p not in files[project])
            kind = KINDS.get(tool, "action")
            routine(rng.randint(*ROUTINE_PER_SESSION) // 5)
            key = add(tool, text, path_list, kind)
            if label:
                labels[project + " " + label] = key
        elif line.startswith("? "):
            category, question, wanted = [part.strip() for part in line[2:].split("|", 2)]
            pending.append((project, {"question": question, "category": category, "labels": wanted.split()}))
    for project, q in pending:
        evidence = []
        for label in q.pop("labels"):
            if project + " " + label not in labels:
                raise SystemExit("%s: question %r names an unknown label %r" % (path, q["question"], label))
            evidence.append(labels[project + " " + label])
        q.update(project=project, evidence=evidence, now=last[project] + 2 * 86400)
        questions.append(q)
    return units, questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout"), default="dev")
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--systems", default=",".join(evallib.SYSTEMS))
    parser.add_argument("--misses", type=int, default=0)
    args = parser.parse_args()
    units, questions = parse(os.path.join(HERE, args.split + ".txt"))
    evallib.progress(f"{args.split}: {len(units)} memories, {len(questions)} questions")
    evallib.run_and_report(units, questions, args, CATEGORIES, split=args.split)


if __name__ == "__main__":
    main()
