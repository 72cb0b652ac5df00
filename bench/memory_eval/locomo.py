#!/usr/bin/env python3
"""Memory retrieval on LoCoMo conversations: Hit@5, R@5, MRR@10 by category, and what the prompt hook injects.

    .venv/bin/python bench/memory_eval/locomo.py [ZIP_OR_DIR] [--json OUT] [--misses N]

ZIP_OR_DIR defaults to ../shared/data/locomo-dev/locomo-dev3.zip beside this checkout (the development set:
3 of LoCoMo's 10 conversations; the data stays there, nothing of it is written into this repository).

Scored as the set's README says: every turn is one memory ("Speaker: text", plus " [image: caption]" when
the turn shared a photo) in the conversation's own project, timestamped with its session's date (plus its
turn's index in seconds, so turns keep their order and each is one memory), the conversation's session as
the memory's session; the ``dia_id`` stays outside the store (bench/memory_eval/evallib.py finds it again
from project and time).  Loaded with ``Store.import_``, the code of ``toolscript memory import``.  Every
question but the adversarial ones (category 5) with evidence is asked in its conversation's project one day
after the last session; categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
"""

import argparse
import calendar
import json
import os
import re
import sys
import zipfile
from datetime import datetime
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import evallib  # noqa: E402

DEV_SET = os.path.join("shared", "data", "locomo-dev", "locomo-dev3.zip")


def default_source() -> str:
    """../shared/data/locomo-dev/locomo-dev3.zip beside the checkout (a worktree: beside an ancestor)."""
    here = evallib.ROOT
    for _ in range(4):
        here = os.path.dirname(here)
        if os.path.exists(os.path.join(here, DEV_SET)):
            return os.path.join(here, DEV_SET)
    return os.path.join(os.path.dirname(evallib.ROOT), DEV_SET)
CATEGORIES = (("1", "multi-hop"), ("2", "temporal"), ("3", "open-domain"), ("4", "single-hop"))
_DIA = re.compile(r"D(\d+):(\d+)")
_SESSION = re.compile(r"^session_(\d+)$")


def conversations(source: str) -> List[Tuple[str, Dict[str, Any]]]:
    """(name, conversation) for every JSON file in a zip or a directory."""
    out = []
    if os.path.isdir(source):
        for name in sorted(os.listdir(source)):
            if name.endswith(".json"):
                with open(os.path.join(source, name), encoding="utf-8") as f:
                    out.append((name[:-5], json.load(f)))
    else:
        with zipfile.ZipFile(source) as archive:
            for name in sorted(archive.namelist()):
                if name.endswith(".json"):
                    out.append((os.path.basename(name)[:-5], json.loads(archive.read(name))))
    return out


def parse_date(text: str) -> float:
    """"1:56 pm on 8 May, 2023" as epoch seconds (read as UTC)."""
    cleaned = " ".join(text.replace(",", ", ").split()).replace(" ,", ",")
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return float(calendar.timegm(datetime.strptime(cleaned, fmt).timetuple()))
        except ValueError:
            continue
    raise ValueError(f"unreadable session date {text!r}")


def dia_key(conversation: str, dia_id: str) -> str:
    match = _DIA.search(dia_id or "")
    return "" if match is None else "%s/D%d:%d" % (conversation, int(match.group(1)), int(match.group(2)))


def build(source: str) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    units: List[Dict[str, Any]] = []
    questions: List[Dict[str, Any]] = []
    for name, data in conversations(source):
        project = "/locomo/" + name
        last = 0.0
        known = set()
        for field in data:
            match = _SESSION.match(field)
            if not match or not isinstance(data[field], list) or f"{field}_date_time" not in data:
                continue
            when = parse_date(data[f"{field}_date_time"])
            last = max(last, when)
            for index, turn in enumerate(data[field]):
                key = dia_key(name, turn.get("dia_id", ""))
                if not key or key in known:
                    continue
                known.add(key)
                text = "%s: %s" % (turn.get("speaker", ""), turn.get("text", ""))
                if turn.get("blip_caption"):
                    text += " [image: %s]" % turn["blip_caption"]
                units.append({"key": key, "project": project, "session": "%s-s%s" % (name, match.group(1)),
                              "created": when + index, "content": text, "kind": "note"})
        for qa in data.get("qa", []):
            category = str(qa.get("category"))
            if category == "5":
                continue
            evidence = []
            for item in qa.get("evidence") or []:
                for part in _DIA.findall(str(item)):
                    key = "%s/D%d:%d" % (name, int(part[0]), int(part[1]))
                    if key in known and key not in evidence:
                        evidence.append(key)
            if evidence:
                questions.append({"question": qa["question"], "project": project, "evidence": evidence,
                                  "category": category, "now": last + 86400})
    return units, questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default=None, help="a LoCoMo zip or a directory of its JSON files")
    parser.add_argument("--json", metavar="OUT", help="also write the figures here")
    parser.add_argument("--systems", default=",".join(evallib.SYSTEMS))
    parser.add_argument("--misses", type=int, default=0, help="print this many questions whose evidence was not injected")
    args = parser.parse_args()
    args.source = args.source or default_source()
    units, questions = build(args.source)
    evallib.progress(f"{len(units)} turns, {len(questions)} questions from {args.source}")
    evallib.run_and_report(units, questions, args, CATEGORIES)


if __name__ == "__main__":
    main()
