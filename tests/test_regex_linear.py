"""The patterns that read prompts, memories and queries stay linear on long runs of one kind of character.

Each of these was quadratic: a run with no match was tried from each of its
characters to its end (4,000 spaces in a prompt took 0.35 s in the
suggestion hook, 4,000 digits in a memory 1 s, 100,000 spaces in an answer
10 s of the Stop hook, 4,000 characters of blank lines in a prompt 0.2 s, 20,000 letters in a search query 2.6 s).  The timeouts below are many times what the linear patterns
take (milliseconds) and far below what the quadratic ones would (hours).
The matches themselves are the old patterns' (the cases below, and the
suggestion and memory tests that use them).  Search's identifier pattern is
tested through search itself, in tests/search/test_signals.py.
"""

import pytest

from toolscript.memory import capture, context
from toolscript import suggest_local


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
