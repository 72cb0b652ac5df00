"""What memory injects: relative dates, the inject markdown, budgets, de-duplication, activity shift, brief."""

import random
import re
import time
from typing import List

import pytest

from toolscript.memory import Memory

from toolscript.memory.context import (
    BRIEF_HEADER, PREAMBLE, activity_shift, brief, estimate_tokens, inject, relative_date, render_brief, render_inject,
)




DAY = 86400.0
PROJECT = "/home/dev/proj"


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    """Calendar days in a fixed zone, so day-boundary cases mean the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# 2026-11-24 15:00:00 UTC
NOW = 1795532400.0


def mem(id, content, *, ago=0.0, kind="action", tool="Bash", files=(), session="old"):
    return Memory(id, session, PROJECT, kind, tool, list(files), content, NOW - ago)


class FakeStore:
    """search() and recent() per the Store contract, over a list; like the real store, a query word
    of 3+ characters matches words that start with it."""

    def __init__(self, memories):
        self.memories = list(memories)
        self.calls = []

    def search(self, query, *, project=None, session=None, kinds=None, limit=10):
        self.calls.append(("search", query, project, session))
        words = set(re.findall(r"[a-z0-9]+", query.lower()))
        out = []
        for m in self.memories:
            if project is not None and m.project != project:
                continue
            if session is not None and m.session != session:
                continue
            if kinds is not None and m.kind not in kinds:
                continue
            have = set(re.findall(r"[a-z0-9]+", (m.content + " " + " ".join(m.files)).lower()))
            hits = [w for w in words if w in have or (len(w) >= 3 and any(h.startswith(w) for h in have))]
            if hits:
                out.append((m, len(hits) / float(len(words))))
        out.sort(key=lambda p: (-p[1], -p[0].created, p[0].id))
        return out[:limit]

    def recent(self, *, project=None, session=None, limit=20, exclude_session=None):
        self.calls.append(("recent", project, session, exclude_session))
        out = [m for m in self.memories
               if (project is None or m.project == project) and (session is None or m.session == session)
               and (exclude_session is None or m.session != exclude_session)]
        out.sort(key=lambda m: (-m.created, -m.id))
        return out[:limit]


# -- relative dates ---------------------------------------------------------


@pytest.mark.parametrize("ago, expected", [
    (0, "Just now"), (60, "Just now"), (-3600, "Just now"),  # future = clock skew
    (3 * 3600, "Today"), (14 * 3600, "Today"),               # 01:00 today
    (16 * 3600, "Yesterday"), (38 * 3600, "Yesterday"),      # 23:00 and 01:00 yesterday
    (40 * 3600, "2 days ago"), (3 * DAY, "3 days ago"), (6 * DAY, "6 days ago"),
    (7 * DAY, "1 week ago"), (13 * DAY, "1 week ago"), (14 * DAY, "2 weeks ago"), (30 * DAY, "4 weeks ago"),
    (31 * DAY, "1 month ago"), (90 * DAY, "3 months ago"), (365 * DAY, "1 year ago"), (800 * DAY, "2 years ago"),
])
def test_relative_date(ago, expected):
    assert relative_date(NOW - ago, NOW) == expected


def test_relative_date_counts_calendar_days_around_midnight():
    midnight = 1795478400.0  # 2026-11-24 00:00 UTC
    assert relative_date(midnight - 600, midnight + 600) == "Yesterday"  # 23:50 seen at 00:10
    assert relative_date(midnight + 550, midnight + 600) == "Just now"
    assert relative_date(midnight + 10, midnight + 23 * 3600) == "Today"
    assert relative_date(midnight - DAY - 10, midnight + 10) == "2 days ago"


def test_relative_date_odd_values_do_not_raise():
    assert relative_date(float("nan"), NOW) == "Just now"
    assert relative_date(1e300, NOW) == "Just now"
    assert isinstance(relative_date(-1e300, NOW), str)


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


# -- render_inject -----------------------------------------------------------


def test_inject_shape_has_its_headers_and_quoted_bullets():
    related = [
        (mem(1, "Implemented HDBSCAN clustering in multi_space.rs", ago=DAY, tool="Edit",
             files=["src/multi_space.rs"]), 0.9),
        (mem(2, "Fixed embedding dimension validation", ago=3 * DAY), 0.7),
        (mem(3, "Rust error handling patterns", ago=14 * DAY, kind="note", tool=""), 0.5),
    ]
    recent = [mem(10 + i, "Edited src/cluster/birch.rs: BIRCH integration for clustering", ago=600 + i,
                  tool="Edit", files=["src/cluster/birch.rs"], session="now") for i in range(4)]
    out = render_inject("write tests for the installer on windows", related, recent, now=NOW)
    assert out == "\n".join([
        "## Relevant Context",
        PREAMBLE,
        "",
        "### Recent Related Work",
        '- Yesterday, Edit: "Implemented HDBSCAN clustering in multi_space.rs"',
        '- 3 days ago, Bash: "Fixed embedding dimension validation"',
        "",
        "### Potentially Related",
        '- 2 weeks ago, note: "Rust error handling patterns"',
        "",
        "### Note: Activity Shift Detected",
        'Your current query about "tests, installer, windows" has low similarity to recent work on '
        '"cluster, birch, integration".',
        "Recent context: birch.rs",
    ])


def test_nothing_relevant_is_empty_output():
    assert render_inject("anything", [], [], now=NOW) == ""
    weak = [(mem(1, "Ran `ls`", ago=DAY), 0.05)]
    assert render_inject("anything", weak, [], now=NOW) == ""


def test_memories_with_no_text_are_not_shown():
    related = [(mem(1, "", ago=DAY), 0.9), (mem(2, " \n ", ago=DAY), 0.9)]
    assert render_inject("anything", related, [], now=NOW) == ""
    assert render_brief("anything", related, now=NOW) == ""


def test_weak_or_old_matches_go_to_potentially_related():
    related = [(mem(1, "Edited a.py: strong but old", ago=30 * DAY, tool="Edit", files=["a.py"]), 0.6),
               (mem(2, "Ran `make docs`: weak but new", ago=3600), 0.19)]
    out = render_inject("docs", related, [], now=NOW)
    assert "### Recent Related Work" not in out
    assert out.splitlines()[3:] == ["### Potentially Related",
                                    '- 4 weeks ago, Edit: "Edited a.py: strong but old"',
                                    '- Today, Bash: "Ran `make docs`: weak but new"']


def test_strong_is_relative_to_the_best_hit():
    # Store scores for "parser strict mode default empty input" (mostly query-word coverage):
    # the edits name the two words that matter and are recent related work, not "weaker".
    related = [(mem(1, "The parser now accepts a strict flag.", ago=3 * DAY, kind="response", tool=""), 0.771)]
    related += [(mem(2 + i, "Edited src/parser.py: `def parse%d(x):` -> `def parse%d(x, strict=False):`" % (i, i),
                     ago=3 * DAY + i, tool="Edit", files=["src/parser.py"]), 0.234) for i in range(4)]
    related.append((mem(9, "Ran `pytest -q`: 6 passed", ago=3 * DAY), 0.114))
    out = render_inject("parser strict mode default empty input", related, [], now=NOW)
    assert out == ("## Relevant Context\n" + PREAMBLE + "\n\n### Recent Related Work\n"
                   "- 3 days ago, Claude's answer: \"The parser now accepts a strict flag.\"\n"
                   '- 3 days ago, Edit: "Edited src/parser.py" (4 times)')
    # Only weak hits: none of them is promoted.
    weak = [(m, 0.18) for m, _ in related[:2]]
    assert "### Recent Related Work" not in render_inject("parser", weak, [], now=NOW)


def test_repeated_edits_of_one_file_are_one_bullet():
    related = [(mem(i, "Edited src/x.py: change %d" % i, ago=i * 60 + 300, tool="Edit", files=["src/x.py"]), 0.8)
               for i in range(5)]
    related.append((mem(9, "Ran `pytest -q`: 12 passed in 0.31s", ago=400), 0.6))
    related.append((mem(10, "Ran `pytest -q`: 12 passed in 0.29s", ago=500), 0.6))
    out = render_inject("x.py tests", related, [], now=NOW)
    assert '- Today, Edit: "Edited src/x.py" (5 times)' in out
    assert '- Today, Bash: "Ran `pytest -q`: 12 passed in 0.31s" (2 times)' in out
    assert out.count("- ") == 2


def test_files_are_named_when_the_line_does_not_name_them():
    related = [(mem(1, "Replaced the retry loop", ago=DAY, tool="Edit", files=["pkg/net/retry.py"]), 0.9)]
    assert '- Yesterday, Edit: "Replaced the retry loop" (files: retry.py)' in render_inject("retry", related, [], now=NOW)


def test_budget_cuts_whole_bullets_lowest_priority_first():
    related = [(mem(i, "Edited module_%d.py: reworked the parser state machine for case %d" % (i, i),
                    ago=DAY + i, tool="Edit", files=["module_%d.py" % i]), 0.9) for i in range(5)]
    related += [(mem(20 + i, "Old note %d about the parser" % i, ago=60 * DAY, kind="note", tool=""), 0.5)
                for i in range(3)]
    full = render_inject("parser", related, [], now=NOW, budget_tokens=2000)
    bullets = [line for line in full.splitlines() if line.startswith("- ")]
    assert len(bullets) == 8
    for budget in range(0, 200, 7):
        out = render_inject("parser", related, [], now=NOW, budget_tokens=budget)
        assert estimate_tokens(out) <= budget
        for line in out.splitlines():
            if line.startswith("- "):
                assert line in bullets  # whole bullets only, never a cut one
        if "### Potentially Related" in out:  # older matches only after every recent one
            assert sum(line.startswith("- Yesterday") for line in out.splitlines()) == 5
    assert render_inject("parser", related, [], now=NOW, budget_tokens=10) == ""


def test_order_is_stable_and_output_deterministic():
    related = [(mem(i, "Ran `make %d`" % i, ago=DAY), 0.5) for i in range(6)]
    one = render_inject("make", related, [], now=NOW)
    two = render_inject("make", list(reversed(related)), [], now=NOW)
    assert one == two
    assert [l for l in one.splitlines() if l.startswith("- ")] == [
        '- Yesterday, Bash: "Ran `make %d`"' % i for i in range(5)]


def test_long_memory_lines_are_cut_at_a_word():
    text = "Ran `pytest` " + " ".join("word%d" % i for i in range(200))
    out = render_inject("pytest", [(mem(1, text, ago=DAY), 0.9)], [], now=NOW)
    bullet = out.splitlines()[4]
    assert bullet.endswith('…"') and len(bullet) < 220
    assert re.search(r' word\d+…"$', bullet)


# -- activity shift ----------------------------------------------------------

CLUSTER_WORK = [
    mem(1, "Edited src/cluster/hdbscan.rs: min_cluster_size now defaults to 5", tool="Edit",
        files=["src/cluster/hdbscan.rs"], session="now"),
    mem(2, "Ran `cargo test hdbscan` (Run the clustering tests): test result: ok. 12 passed", session="now"),
    mem(3, "Edited src/cluster/birch.rs: BIRCH threshold from the config", tool="Edit",
        files=["src/cluster/birch.rs"], session="now"),
    mem(4, "Ran `cargo clippy`: no warnings", session="now"),
    mem(5, "Called search_code(query=hdbscan stability) -> 3 matches", tool="mcp__github__search_code",
        session="now"),
]


@pytest.mark.parametrize("prompt", [
    "add a test for hdbscan when min cluster size is larger than the input",
    "the birch threshold should come from the cluster config, not a constant",
    "why does the clustering test fail on an empty dataset?",
    "run clippy again and fix the warnings in hdbscan.rs",
    "yes",  # too short to judge
    "go on",
])
def test_no_shift_on_the_same_topic(prompt):
    assert activity_shift(prompt, CLUSTER_WORK) is None


@pytest.mark.parametrize("prompt, about", [
    ("write the README section about installing on Windows", "README, section, installing"),
    ("set up the GitHub Actions release workflow for publishing wheels", "GitHub, Actions, release"),
    ("what's the weather like in Paris tomorrow?", "weather, Paris, tomorrow"),
])
def test_shift_on_a_new_topic_says_what_recent_work_was(prompt, about):
    note = activity_shift(prompt, CLUSTER_WORK)
    assert note is not None
    first, second = note.split("\n")
    assert first.startswith('Your current query about "%s" has low similarity to recent work on "' % about)
    assert 'has low similarity to recent work on "' in first
    assert "hdbscan" in first or "cluster" in first
    assert second == "Recent context: hdbscan.rs, birch.rs"


def test_no_shift_without_enough_recent_work():
    assert activity_shift("write the README section about Windows", CLUSTER_WORK[:2]) is None
    assert activity_shift("write the README section about Windows", []) is None


def test_shift_note_without_files_quotes_the_newest_work():
    work = [mem(i, "Called weather_forecast(city=Oslo) -> 3 degrees, rain", tool="mcp__weather__forecast",
                session="now") for i in range(3)]
    note = activity_shift("refactor the database migrations module", work)
    assert note is not None
    assert note.splitlines()[1] == 'Recent context: "Called weather_forecast(city=Oslo) -> 3 degrees, rain"'


# -- brief -------------------------------------------------------------------


def test_brief_is_small_and_has_one_to_three_bullets():
    related = [(mem(i, "Edited src/f%d.py: %s" % (i, "long words " * 40), ago=DAY * i, tool="Edit",
                    files=["src/f%d.py" % i]), 0.9 - i / 100.0) for i in range(10)]
    out = render_brief("src/f1.py", related, now=NOW)
    lines = out.splitlines()
    assert lines[0] == BRIEF_HEADER
    assert 1 <= len(lines) - 1 <= 3 and all(l.startswith("- ") for l in lines[1:])
    assert estimate_tokens(out) <= 200
    assert estimate_tokens(render_brief("x", related, now=NOW, budget_tokens=5000)) <= 200
    assert render_brief("x", related, now=NOW, budget_tokens=20) == ""
    assert render_brief("x", [], now=NOW) == ""


# -- glue ----------------------------------------------------------------------


def test_inject_glue_searches_other_sessions_and_checks_the_shift():
    store = FakeStore([
        mem(1, "Edited src/parser.py: handle empty input", ago=DAY, tool="Edit", files=["src/parser.py"],
            session="s1"),
        mem(2, "Edited src/parser.py: the same session's own edit", ago=60, tool="Edit", files=["src/parser.py"],
            session="s2"),
    ] + [m._replace(session="s2", id=100 + m.id, created=NOW - 300) for m in CLUSTER_WORK])
    out = inject(store, "Please fix the parser for empty input!", project=PROJECT, session="s2", now=NOW)
    assert '- Yesterday, Edit: "Edited src/parser.py: handle empty input"' in out
    assert "same session" not in out
    # This session just edited parser.py: the prompt continues its work, no shift.
    assert "### Note: Activity Shift Detected" not in out
    # The prompt as written: the store analyses it the way it analysed the memories.
    assert ("search", "Please fix the parser for empty input!", PROJECT, None) in store.calls


def test_inject_finds_what_memory_search_finds_for_names_and_short_words(tmp_path):
    """The hook's query words go through the store's own analysis: no stem the index never held ("Nate" -> "nat")."""
    from toolscript.memory.store import open_store

    with open_store(str(tmp_path / "memory.db")) as store:
        store.add(session="s1", project=PROJECT, kind="note", content="Nate: I adopted two turtles last month", created=NOW - DAY)
        store.add(session="s1", project=PROJECT, kind="note", content="Dave: we share a game night on Fridays", created=NOW - DAY)
        store.add(session="s1", project=PROJECT, kind="action", content="Ran `pip install -e .`: installed toolscript",
                  created=NOW - DAY)
        for prompt, wanted in (("What pets does Nate have?", "turtles"), ("When is Dave's game night?", "game night"),
                               ("installing the packages", "installed toolscript")):
            searched = [m.content for m, _ in store.search(prompt, project=PROJECT)]
            assert searched and wanted in searched[0], prompt
            out = inject(store, prompt, project=PROJECT, session="s2", now=NOW)
            assert wanted in out, prompt


def test_inject_glue_with_no_query_shows_earlier_sessions_recent_work():
    store = FakeStore([mem(1, "Ran `make release`: published 1.2.0", ago=2 * DAY, session="s1"),
                       mem(2, "Ran `ls`", ago=10, session="s2")])
    out = inject(store, "", project=PROJECT, session="s2", now=NOW)
    assert out == ("## Relevant Context\n" + PREAMBLE + "\n\n### Recent Related Work\n"
                   '- 2 days ago, Bash: "Ran `make release`: published 1.2.0"')
    assert inject(FakeStore([]), "", project=PROJECT, session="s2", now=NOW) == ""


def test_brief_glue():
    store = FakeStore([mem(1, "Ran `make release`: failed, missing token", ago=3 * DAY, session="s1")])
    assert brief(store, "make release", project=PROJECT, session="s2", now=NOW) == (
        BRIEF_HEADER + '\n- 3 days ago, Bash: "Ran `make release`: failed, missing token"')
    assert brief(store, "", project=PROJECT, session="s2", now=NOW) == ""
    assert brief(store, "make release", project=PROJECT, session="s1", now=NOW) == ""


# -- properties ----------------------------------------------------------------

_WORDS = ("parser cluster hdbscan readme windows release token retry cache index query test build deploy "
          "migration schema api client server socket thread lock file path config").split()


def _random_memory(rng, i):
    kind = rng.choice(["action", "action", "response", "summary", "note"])
    tool = rng.choice(["Edit", "Write", "Bash", "mcp__gh__search", ""]) if kind == "action" else ""
    files = [rng.choice(["a.py", "src/b.rs", "/abs/c.md", "d"]) for _ in range(rng.randint(0, 2))]
    content = rng.choice([
        "", " ", "\n\n", "x" * rng.randint(1, 3000), "line one\nline two\n- bullet\n## header",
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 60))), "\udcff odd \x00 bytes \u2028",
    ])
    return Memory(i, rng.choice(["s1", "s2", ""]), PROJECT, kind, tool, files, content,
                  NOW - rng.uniform(-100, 400 * DAY))


def _valid_markdown(out):
    if out == "":
        return True
    lines = out.split("\n")
    assert lines[:2] == ["## Relevant Context", PREAMBLE]
    section = None
    for line in lines[2:]:
        if line.startswith("### "):
            section = line
        elif line.startswith("- "):
            assert section in ("### Recent Related Work", "### Potentially Related")
            assert RECORD.fullmatch(line), line  # a quoted record, never an empty one
        elif line:
            assert section == "### Note: Activity Shift Detected"
    return True


# - <age>, <source>: "<text without double quotes>" (n times) (files: a, b)
RECORD = re.compile(r'- [A-Z0-9][a-z0-9 ]+, [^":]+: "[^"\n]+"(?: \(\d+ times\))?(?: \(files: [^"()]+\))?')


def test_any_memories_give_valid_markdown_within_budget():
    rng = random.Random(11)
    for round_ in range(300):
        memories = [_random_memory(rng, i) for i in range(rng.randint(0, 30))]
        related = [(m, rng.choice([0.0, 0.1, 0.3, 0.5, 0.9, 1.0, float("nan")])) for m in memories]
        recent = sorted(memories, key=lambda m: -m.created)
        query = " ".join(rng.choice(_WORDS + ["", "the", "yes"]) for _ in range(rng.randint(0, 12)))
        budget = rng.choice([0, 5, 30, 60, 150, 600, 5000])
        out = render_inject(query, related, recent, now=NOW, budget_tokens=budget)
        assert estimate_tokens(out) <= budget
        assert _valid_markdown(out)
        assert out == render_inject(query, related, recent, now=NOW, budget_tokens=budget)
        b = render_brief(query, related, now=NOW, budget_tokens=budget)
        assert estimate_tokens(b) <= min(budget, 200)
        assert len(b.splitlines()) <= 4
