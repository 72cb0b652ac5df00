"""toolscript.tools.ecmaregex: JSON Schema patterns searched in linear time, with ECMA-262 meaning.

The catastrophic patterns run in a child process with a deadline: Python's
``re`` cannot be interrupted, so a regression would otherwise hang the test
run instead of failing it.  The official JSON-Schema-Test-Suite's pattern
cases are in tests/tools/jsonschema_suite (see its LICENSE).
"""

import json
import os
import random
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from toolscript.tools import ecmaregex
from toolscript.tools.ecmaregex import Budget, RegexError, compile_pattern
from toolscript.tools.schema import validate

SUITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jsonschema_suite")


# --- patterns that take Python's re exponential time ----------------------------------

CATASTROPHIC = [
    # (pattern, argument): re.search takes 12 s on the first, far past 30 s on the others
    ("^(a+)+$", "a" * 28 + "!"),
    ("(a|aa)+$", "a" * 50 + "!"),
    ("^(\\w+\\s?)*$", "a" * 41 + "!"),
    ("^(\\w+\\s?)*$", "word " * 10 + "a" * 40 + "!"),
]

_CATASTROPHIC_CHILD = r"""
import json, sys
from toolscript.tools.schema import validate
cases = json.loads(sys.argv[1])
answers = []
for pattern, text in cases:
    answers.append(validate({"name": text}, {"properties": {"name": {"pattern": pattern}}}))
    answers.append(validate({text: 1}, {"patternProperties": {pattern: {"type": "string"}}, "additionalProperties": False}))
print(json.dumps(answers))
"""


@pytest.mark.timeout(120)
def test_catastrophic_patterns_are_checked_quickly():
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    try:
        proc = subprocess.run([sys.executable, "-c", _CATASTROPHIC_CHILD, json.dumps(CATASTROPHIC)],
                              capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("checking a catastrophic pattern did not finish within 60 s")
    assert proc.returncode == 0, proc.stderr
    answers = json.loads(proc.stdout)
    for (pattern, text), by_pattern, by_name in zip(CATASTROPHIC, answers[::2], answers[1::2]):
        assert by_pattern == ["/name: does not match pattern " + json.dumps(pattern)]
        assert by_name == ["/" + text + ": unexpected property"]  # the name matches no pattern


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pattern", ["^(a+)+$", "(a|aa)+$", "^(\\w+\\s?)*$", "(x+x+)+y", "^(a|a?)+$", "(.*a){12}"])
def test_long_strings_stay_linear(pattern):
    regex = compile_pattern(pattern)
    assert regex.search("a" * 100_000 + "!") is (pattern == "(.*a){12}")


# --- the official test suite ----------------------------------------------------------------


def _suite_cases():
    for name in sorted(os.listdir(SUITE_DIR)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(SUITE_DIR, name), encoding="utf-8") as f:
            for group in json.load(f):
                for case in group["tests"]:
                    yield pytest.param(group["schema"], case["data"], case["valid"], id=f"{name}: {group['description']}: {case['description']}")


@pytest.mark.parametrize("schema, data, valid", list(_suite_cases()))
def test_official_suite_pattern_cases(schema, data, valid):
    assert (validate(data, schema) == []) is valid


# --- the same answers as re, where ECMA-262 and Python agree ---------------------------------

_ALPHABET = "ab1 _\n"


def _random_pattern(rng, depth=0):
    """(ECMA source, Python source) of a random pattern over a small alphabet."""
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        atom = rng.choice(["a", "b", "1", " ", ".", "[ab]", "[^a]", "[a-b1]", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S",
                           "[\\d ]", "\\x61", "\\u0062", "[]", "[^]", "_"])
        python = {"[]": "(?!)", "[^]": "[\\s\\S]"}.get(atom, atom)
        return atom, python
    if roll < 0.45:
        return rng.choice([("^", "\\A"), ("$", "\\Z"), ("\\b", "\\b"), ("\\B", "\\B")])
    if roll < 0.6:
        parts = [_random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3))]
        return "".join(p[0] for p in parts), "".join(p[1] for p in parts)
    if roll < 0.7:
        parts = [_random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3))]
        opener = rng.choice(["(", "(?:"])
        return opener + "|".join(p[0] for p in parts) + ")", opener + "|".join(p[1] for p in parts) + ")"
    inner = _random_pattern(rng, depth + 1)
    if inner[0] in ("^", "$", "\\b", "\\B"):
        return inner
    low = rng.randint(0, 2)
    quantifier = rng.choice(["*", "+", "?", "{%d}" % low, "{%d,}" % low, "{%d,%d}" % (low, low + rng.randint(0, 2))])
    quantifier += rng.choice(["", "", "?"])
    return "(?:" + inner[0] + ")" + quantifier, "(?:" + inner[1] + ")" + quantifier


def test_matches_python_re_on_random_patterns():
    rng = random.Random(20240611)
    compared = 0
    for _ in range(1500):
        ecma, python = _random_pattern(rng)
        regex = compile_pattern(ecma)
        expected = re.compile(python)
        for _ in range(8):
            text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 8)))
            if not text and "\\B" in ecma:
                continue  # Python's \B never matches in an empty string, ECMA-262's does
            assert regex.search(text) is (expected.search(text) is not None), (ecma, python, text)
            compared += 1
    assert compared > 11000


# --- ECMA-262 meaning where Python's differs -------------------------------------------------


@pytest.mark.parametrize("pattern, text, found", [
    ("^abc$", "abc\n", False),  # $ is the end of the string, not before a final newline
    ("^.$", "\r", False),  # . stops at every line terminator
    ("^.$", "\u2028", False),
    ("^.$", "\u00e9", True),
    ("^\\d$", "\u0660", False),  # \d and \w are ASCII
    ("^\\w$", "\u00e9", False),
    ("^\\s$", "\u00a0", True),  # \s is ECMA's white space
    ("^[]$", "", False),  # [] matches nothing, [^] anything
    ("^[^]$", "\n", True),
    ("^[]a]$", "]a", False),  # [] (nothing), then a and ], unlike Python
    ("^\\u{1F600}$", "\U0001F600", True),
    ("^\\uD83D\\uDE00$", "\U0001F600", True),  # a surrogate pair is one code point
    ("^a{,2}$", "a{,2}", True),  # not a quantifier: literal braces
    ("^\\cJ$", "\n", True),
    ("^[\\d-z]+$", "1-z", True),  # a class escape makes the hyphen literal
    ("^[\\b]$", "\b", True),
    ("^\\p{Lu}\\P{Lu}$", "Ab", True),
    ("^\\p{gc=Nd}$", "\u0660", True),
    ("x*?y+?", "xy", True),
    ("\\bfoo\\b", "a foo.", True),
    ("\\Bfoo", "afoo", True),
])
def test_ecma_meaning(pattern, text, found):
    assert compile_pattern(pattern).search(text) is found


@pytest.mark.parametrize("pattern", ["(", "a)", "[a", "a{2,1}", "*a", "a**", "(?<1x>a)", "(?x)", "[z-a]", "\\", "^*"])
def test_invalid_patterns_are_refused(pattern):
    with pytest.raises(RegexError):
        compile_pattern(pattern)


@pytest.mark.parametrize("pattern", ["\\p{Script=Greek}", "\\Z", "a\\A", "(a)\\2", "x{100000}", "(" * 60 + "a" + ")" * 60])
def test_what_cannot_be_checked_says_so(pattern):
    regex = compile_pattern(pattern)
    assert regex.unchecked
    assert regex.search("a") is None


# --- backreferences and lookaround: re, only when provably cheap ------------------------------


def test_lookahead_and_backreferences_are_checked_by_re_when_cheap():
    password = compile_pattern("^(?=.*[A-Z])(?=.*\\d).{8,}$")
    assert password.search("Secret123") is True
    assert password.search("secret123") is False
    assert compile_pattern("(?<!\\$)\\b\\d+").search("$12 or 7") is True
    assert compile_pattern("^(\\w)\\w*\\1$").search("abca") is True
    assert compile_pattern("^(?<q>['\"]).*\\k<q>$").search("'x\"") is False
    assert compile_pattern("^(\\d)\\1$").search("\u0660\u0660") is False  # translated with ECMA's \d
    assert compile_pattern("(?=\\u00e9)\\b").search("\u00e9") is False  # and ECMA's \b: \u00e9 is no word character


@pytest.mark.timeout(60)
def test_nested_quantifiers_next_to_a_backreference_are_not_run():
    regex = compile_pattern("^(a+)+\\1$")
    assert regex.unchecked and "quantifier" in regex.unchecked
    assert validate("a" * 40 + "!", {"pattern": "^(a+)+\\1$"}) == []  # fails open: the server checks its own schema


@pytest.mark.timeout(60)
def test_a_backtracking_pattern_on_a_long_string_is_not_run():
    regex = compile_pattern("(a*)b*c*\\1x")
    assert regex.unchecked is None
    assert regex.search("aaa") is False
    assert regex.search("a" * 50_000) is None


# --- bounded work -------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_the_budget_bounds_the_work_and_a_cut_off_check_is_no_error():
    regex = compile_pattern("[0-9]")
    budget = Budget(1000)
    assert regex.search("x" * 2000, budget) is None
    schema = {"type": "array", "items": {"pattern": "^[a-z]+$"}}
    long_item = "x" * 4_000_000
    errors = validate([long_item, long_item, long_item, "BAD"], schema)
    assert errors == []  # the call's budget ran out before the last item: not checked, not failed
    assert validate(["BAD"], schema) == ['/0: does not match pattern "^[a-z]+$"']


@pytest.mark.timeout(60)
def test_the_state_cache_stays_bounded():
    regex = compile_pattern("(a|b)*a(a|b){14}")  # 2**15 subset states
    rng = random.Random(7)
    text = "".join(rng.choice("ab") for _ in range(100_000)) + "c"
    regex.search(text, Budget(10 ** 9))
    linear = regex._linear
    assert linear is not None
    assert len(linear.states) <= ecmaregex.MAX_DFA_STATES + 1
    assert linear.transitions <= ecmaregex.MAX_TRANSITIONS + 1
    assert linear.held <= ecmaregex.MAX_DFA_STEPS + ecmaregex.MAX_PROGRAM


def test_a_cut_off_pattern_does_not_decide_not_or_one_of():
    schema = {"not": {"pattern": "(a)\\2"}}  # \2 names no group: unchecked
    assert validate("aa", schema) == []
