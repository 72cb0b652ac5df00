"""The SKILL.md frontmatter parser (``toolscript.claude_code.frontmatter``).

Each YAML form SKILL.md files use, the errors (each naming its line), and
hostile input that must be parsed or refused without hanging.
"""

from typing import Any, Dict

import pytest

from toolscript.claude_code import frontmatter
from toolscript.claude_code.frontmatter import FrontmatterError


def parse_frontmatter(text: str) -> Dict[str, Any]:
    """The frontmatter of a SKILL.md as a dict (``{}`` when there is none), as discovery reads it."""
    lines, _ = frontmatter.split(text)
    return {} if lines is None else frontmatter.parse(lines)


def fm(body: str) -> Dict[str, Any]:
    """parse_frontmatter of ``body`` between --- fences."""
    return parse_frontmatter("---\n" + body + "---\nthe body\n")


# --- the parser: each scalar form ------------------------------------------------------------


def test_plain_single_and_double_quoted_scalars():
    assert fm("a: plain words here\nb: 'single ''quoted'' # not a comment'\nc: \"double \\\"quoted\\\"\"\n") == {
        "a": "plain words here",
        "b": "single 'quoted' # not a comment",
        "c": 'double "quoted"',
    }


def test_double_quoted_escapes():
    assert fm('a: "tab\\tnl\\nbs\\\\ x\\x41 u\\u00e9 U\\U0001F600 slash\\/"\n') == {"a": "tab\tnl\nbs\\ xA u\u00e9 U\U0001F600 slash/"}


def test_plain_value_may_contain_colon_space_as_claude_code_reads_it():
    # Strict YAML refuses this; Claude Code lists the whole text, and SKILL.md files do it a lot.
    assert fm("description: Use when: the user asks\n") == {"description": "Use when: the user asks"}


def test_plain_and_quoted_scalars_over_several_lines_are_folded():
    assert fm("a: first\n  second\n\n  third\nb: \"one\n  two\\\n  three\"\nc: 'x\n\n  y'\n") == {
        "a": "first second\nthird",
        "b": "one twothree",
        "c": "x\ny",
    }


def test_scalar_types_bool_null_int_converted_other_strings_kept():
    assert fm("t: true\nT: True\nf: false\nn: null\ntilde: ~\nempty:\ni: 42\nneg: -7\nfl: 1.5\nyes: yes\nq: 'true'\n") == {
        "t": True, "T": True, "f": False, "n": None, "tilde": None, "empty": None, "i": 42, "neg": -7,
        "fl": "1.5", "yes": "yes", "q": "true",
    }


@pytest.mark.parametrize(
    "header, expected",
    [
        ("|", "line one\n  indented\n\nline three\n"),  # clip: one final newline
        ("|-", "line one\n  indented\n\nline three"),  # strip: none
        ("|+", "line one\n  indented\n\nline three\n\n\n"),  # keep: every trailing one
        (">", "line one\n  indented\n\nline three\n"),  # folded; more-indented line kept as is
        (">-", "line one\n  indented\n\nline three"),
        (">+", "line one\n  indented\n\nline three\n\n\n"),
    ],
)
def test_block_scalars_with_chomping(header, expected):
    text = f"a: {header}\n  line one\n    indented\n\n  line three\n\n\nnext: 1\n"
    assert fm(text) == {"a": expected, "next": 1}


def test_folded_block_joins_lines_and_keeps_paragraphs():
    assert fm("description: >\n  Use this skill\n  when deploying.\n\n  Second paragraph.\nname: x\n") == {
        "description": "Use this skill when deploying.\nSecond paragraph.\n",
        "name": "x",
    }


def test_block_scalar_indentation_indicator_and_comment():
    assert fm("a: |2 # a comment\n    four spaces\n  two spaces\n") == {"a": "  four spaces\ntwo spaces\n"}


def test_comments_anywhere_but_inside_quotes():
    assert fm("# leading comment\na: x # trailing\n  # indented comment\nb: 'y # kept' # dropped\nc: z#kept\n") == {
        "a": "x", "b": "y # kept", "c": "z#kept",
    }


def test_flow_and_block_lists_and_nested_mappings():
    text = (
        "flow: [a, 'b, c', \"d\", 3, ]\n"
        "map: {x: 1, 'y': two}\n"
        "empty: []\n"
        "block:\n  - one\n  - two\n"
        "same_indent:\n- p\n- q\n"
        "objects:\n  - k: v\n    k2: v2\n  - - n1\n    - n2\n"
        "metadata:\n  author: me\n  tags:\n    - t\n"
        "multi: [a,\n  b]\n"
    )
    assert fm(text) == {
        "flow": ["a", "b, c", "d", 3],
        "map": {"x": 1, "y": "two"},
        "empty": [],
        "block": ["one", "two"],
        "same_indent": ["p", "q"],
        "objects": [{"k": "v", "k2": "v2"}, ["n1", "n2"]],
        "metadata": {"author": "me", "tags": ["t"]},
        "multi": ["a", "b"],
    }


def test_crlf_and_bom():
    text = "\ufeff---\r\nname: x\r\ndescription: |\r\n  two\r\n  lines\r\n---\r\nbody\r\n"
    assert parse_frontmatter(text) == {"name": "x", "description": "two\nlines\n"}


def test_no_frontmatter_is_an_empty_dict():
    assert parse_frontmatter("# Just a body\n\nno fences\n") == {}
    assert parse_frontmatter("") == {}
    assert parse_frontmatter("---\n---\nbody") == {}
    assert parse_frontmatter("text\n---\na: b\n---\n") == {}  # the fence must be the first line


@pytest.mark.parametrize(
    "body, line, words",
    [
        ("name: x\n\tdescription: y\n", 3, "tab in the indentation"),
        ("name: x\nname: y\n", 3, "duplicate key 'name'"),
        ("a: ok\ndescription: \"never closed\nb: c\n", 3, "never closed"),
        ("a: 'never closed\n", 2, "never closed"),
        ("a: [x, y\nb: c\n", 2, "never closed"),
        ("a: {x: 1\n", 2, "never closed"),
        ("a: b\n    c: d\nplain line\n", 4, "expected 'key: value'"),
        ("a:\n  b:\n    - x\n   c: 2\n", 5, "unexpected indentation"),
        ("a: &anchor x\n", 2, "anchors, aliases and tags"),
        ("a: *alias\n", 2, "anchors, aliases and tags"),
        ("a: !!str x\n", 2, "anchors, aliases and tags"),
        ('a: "bad \\q escape"\n', 2, "unknown escape \\q"),
        ('a: "bad \\x4"\n', 2, "needs 2 hex digits"),
        ("a: |x\n  y\n", 2, "block scalar header"),
        ("a: 'x' trailing\n", 2, "after the closing quote"),
        ("a: [[nested]]\n", 2, "nested flow collections"),
        ("a: [x,, y]\n", 2, "empty entry"),
        ("a: {k: 1, k: 2}\n", 2, "duplicate key 'k'"),
        ("- a list\n- at the top\n", 2, "must be 'key: value' lines"),
        ("just some text\n", 2, "must be 'key: value' lines"),
        ("a: 1\nb:\n  - x\n  y: 2\n", 5, "unexpected indentation"),
    ],
)
def test_malformed_frontmatter_names_the_line(body, line, words):
    with pytest.raises(FrontmatterError) as caught:
        fm(body)
    message = str(caught.value)
    assert message.startswith(f"line {line}: "), message
    assert words in message, message
    assert "\n" not in message


def test_unclosed_frontmatter_is_an_error_at_line_1():
    with pytest.raises(FrontmatterError, match=r"^line 1: .*never closed"):
        parse_frontmatter("---\nname: x\ndescription: y\n")


# --- the parser: hostile input ------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_hostile_sizes_are_parsed_or_refused_without_hanging():
    # 1 MB on one line, as a plain and as a quoted value.
    assert fm("a: " + "x" * 1_000_000 + "\n") == {"a": "x" * 1_000_000}
    assert len(fm('a: "' + "y" * 1_000_000 + '"\n')["a"]) == 1_000_000
    # 10k keys, and a 10k-line block scalar.
    many = "".join(f"k{i}: v{i}\n" for i in range(10_000))
    assert len(fm(many)) == 10_000
    assert fm("a: |\n" + "  line\n" * 10_000)["a"].count("\n") == 10_000
    # A 1 MB quoted string that never closes, and 10k lines of an unclosed flow list.
    with pytest.raises(FrontmatterError, match="never closed"):
        fm('a: "' + "z" * 1_000_000 + "\nb: c\n")
    with pytest.raises(FrontmatterError, match="never closed"):
        fm("a: [" + "x,\n" * 10_000)


@pytest.mark.timeout(60)
def test_long_flow_collections_are_parsed_in_linear_time():
    # Growing a string one character at a time (or slicing the line per quoted entry)
    # made these take minutes; the hard limit above is the assertion.
    assert fm("a: [" + "x" * 4_000_000 + "]\n") == {"a": ["x" * 4_000_000]}
    assert fm("a: {k: " + "y" * 4_000_000 + "}\n") == {"a": {"k": "y" * 4_000_000}}
    assert fm("a: [" + '"q", ' * 400_000 + "]\n") == {"a": ["q"] * 400_000}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "deep",
    [
        "".join("  " * i + f"k{i}:\n" for i in range(5000)),  # 5000 nested mappings
        "".join("  " * i + "-\n" for i in range(5000)),  # 5000 nested lists
        "a: " + "- " * 5000 + "x\n",  # one line, but no: a value cannot start a block list
        "a:\n  " + "- " * 5000 + "x\n",  # 5000 lists opened on one line
        "a: " + "[" * 5000 + "\n",
    ],
    ids=["mappings", "lists", "dashes-after-key", "dashes-on-one-line", "brackets"],
)
def test_deep_nesting_is_refused_not_recursed(deep):
    try:
        value = fm(deep)
    except FrontmatterError as exc:
        assert str(exc).startswith("line "), exc
    else:
        assert deep.startswith("a: - ") and value == {"a": "- " * 4999 + "- x"}  # a plain scalar, as Claude Code reads it
