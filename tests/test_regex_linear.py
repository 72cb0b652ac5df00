"""The patterns that read prompts, memories and queries stay linear on long runs of one kind of character.

Written the plain way, each of these is quadratic: a run with no match is tried from each of its
characters to its end (4,000 spaces in a prompt take 0.35 s in the
suggestion hook, 4,000 digits in a memory 1 s, 100,000 spaces in an answer
10 s of the Stop hook, 4,000 characters of blank lines in a prompt 0.2 s, 20,000 letters in a search query 2.6 s).  The timeouts below are many times what the linear patterns
take (milliseconds) and far below what the quadratic ones would (hours).
The linear patterns match what the plain ones do (the cases below, and the
suggestion and memory tests that use them).  Search's identifier pattern is
tested through search itself, in tests/search/test_signals.py.
"""

import pytest

from toolscript.memory import capture, context
from toolscript.claude_code import suggest_local


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", [" " * 400_000, "\t" * 400_000, "." * 400_000, "x" * 400_000])
def test_clause_split_is_linear(text):
    assert suggest_local._CLAUSE.split("read it" + text + "then post it")


@pytest.mark.timeout(60)
def test_clause_split_is_linear_on_blank_lines_that_lead_nowhere():
    # A blank stretch of newlines and spaces with no conjunction after it (0.2 s at the 4,000-character prompt cap).
    assert suggest_local._CLAUSE.split("read it" + "\n " * 200_000)[:1] == ["read it"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["a_" * 200_000, "x" * 400_000, "~." * 200_000])
def test_path_pattern_is_linear(text):
    assert suggest_local._PATH.findall(text) == []


@pytest.mark.timeout(60)
def test_volatile_numbers_pattern_is_linear():
    assert context._VOLATILE_NUMBERS.sub("#", "1" * 400_000 + " passed") == "1" * 400_000 + " passed"


@pytest.mark.timeout(60)
def test_trailing_blanks_pattern_is_linear():
    assert capture._TRAILING_BLANKS.sub("\n", " " * 400_000 + "x") == " " * 400_000 + "x"


def test_the_patterns_still_match_what_they_did():
    assert suggest_local._CLAUSE.split("read #incidents on slack and then write a postmortem. Done") == [
        "read #incidents on slack", "write a postmortem", " Done"]
    assert suggest_local._CLAUSE.split("x;\n and y") == ["x", "", "", "y"]  # a newline's end may start " and "
    assert suggest_local._CLAUSE.split("p5.js 1.5.0!? ok") == ["p5.js 1.5.0", " ok"]
    assert suggest_local._PATH.findall("see src/app.py and owner/repo, not this") == ["src/app.py", "owner/repo"]
    assert context._VOLATILE_NUMBERS.sub("#", "12 passed in 0.31s, 3.5 ms, v1.2.3s") == "12 passed in #, #, v#.#"
    assert capture._TRAILING_BLANKS.sub("\n", "a  \t\nb \n\n c\t") == "a\nb\n\n c\t"


# Redaction runs on every stored text: each rule is tried only where its trigger word is, anchored
# there, with bounded repeats, so a long run of triggers (or of what follows one) costs linear time.
# Each case below leaves nothing to redact, or redacts what it should, in well under the timeout.
REDACTION_RUNS = [
    ('password="' * 40_000, None),
    ('\\"password\\": \\"' * 25_000, None),
    ("--password " * 36_000, "unchanged"),
    ("mysql -p" * 50_000, None),
    ("mysql " + "-x " * 130_000, "unchanged"),
    ("mysql " + "\\" * 400_000, "unchanged"),
    ("htpasswd -b " * 33_000, None),
    ("curl -u a:" * 40_000, None),
    ("docker " * 57_000, "unchanged"),
    ("machine h" + " login u" * 50_000, "unchanged"),
    (":5432:" * 66_000, "unchanged"),
    ("1:" * 200_000, "unchanged"),
    (("7" * 20 + ":A") * 18_000, "unchanged"),
    ("q~" * 200_000, "unchanged"),
    (("0123456789abcdef" * 2 + "-us") * 11_000, "unchanged"),
    ("Authorization: " * 26_000, None),
    ("Cookie: " * 50_000, "unchanged"),
    ("api_key" * 57_000, "unchanged"),
    ("pass " * 80_000, "unchanged"),
    ("-----BEGIN RSA PRIVATE KEY-----" * 13_000, "[redacted]"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text, expected", REDACTION_RUNS, ids=[t[:16] for t, _ in REDACTION_RUNS])
def test_redaction_is_linear_on_long_runs_of_triggers(text, expected):
    from toolscript.memory.redact import redact

    out = redact(text)
    if expected == "unchanged":
        assert out == text
    elif expected is not None:
        assert out == expected
    else:
        assert "[redacted]" in out


def test_the_redaction_rules_find_what_they_are_for():
    from toolscript.memory.redact import redact

    assert redact("mysql -u root -pS3cret9 db") == "mysql -u root -p[redacted] db"
    assert redact("7214459981:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3") == "[redacted]"
    assert redact("h.example:5432:db:user:pw9x") == "h.example:5432:db:user:[redacted]"
    assert redact("x abc8Q~AbCdEfGhIjKlMnOpQrStUvWxYz0123456") == "x [redacted]"
