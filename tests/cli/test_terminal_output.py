"""Text from outside (MCP servers, skills, memories, models) reaches the terminal without control sequences.

A server, a skill file or a stored memory may carry escape sequences: a window
title change, a screen clear, an OSC 8 hyperlink that shows one address and
opens another, bidi overrides that show text reversed.  Every human (non-JSON)
output runs such text through ``toolscript.log.terminal_text``; ``--json``
output is unchanged (JSON escapes control characters itself), and ``exec``
passes a script's own output through untouched.

``tests/mcp_servers/hostile_text_server.py`` puts its payload in every text
it serves; each command below runs against it as ``python -m toolscript`` and
its stdout and stderr, read as bytes, must hold none of the characters a
terminal acts on.
"""

import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, Iterator, List

import pytest

from conftest import REPO_ROOT, running_gateway, wait_for
from fake_anthropic import FakeAnthropic
from toolscript.cli.output import format_table
from toolscript.config.load import ServerConfig
from toolscript.log import terminal_text

HOSTILE_SERVER = os.path.join(REPO_ROOT, "tests", "mcp_servers", "hostile_text_server.py")
sys.path.insert(0, os.path.dirname(HOSTILE_SERVER))
from hostile_text_server import HOSTILE  # noqa: E402  (the payload the server serves)

# What a terminal acts on instead of showing: C0 but \t and \n (so \r and ESC too), DEL, C1, bidi controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
ESCAPED_SEQUENCE = re.compile(r"\\(?:x1b|u001b|x9b|u009b|x9d|u009d)[^\\\"]*")  # in a stub's string literal
VISIBLE = "hostile payload"  # the payload's first words: the text itself must still be shown


def unsafe(text: str) -> List[str]:
    """The unsafe characters in ``text``, as repr strings with some context (for the failure message)."""
    return [repr(text[max(0, m.start() - 20) : m.end() + 20]) for m in UNSAFE.finditer(text)][:5]


# -- the function itself ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("a\x1b]0;title\x07b", "ab"),  # OSC ended by BEL
        ("a\x1b]2;title\x1b\\b", "ab"),  # OSC ended by ST
        ("a\x9d0;title\x9cb", "ab"),  # C1 OSC ended by C1 ST
        ("a\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # OSC 8: the link text stays
        ("a\x1b[2J\x1b[Hb", "ab"),  # CSI
        ("a\x1b[38;5;196mred\x1b[0mb", "aredb"),
        ("a\x9b31mb", "ab"),  # C1 CSI
        ("a\x1bcb", "ab"),  # RIS
        ("a\x1b(Bb", "ab"),  # a charset designation
        ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),  # DCS (sixel)
        ("a\x07\x7f\x08\x00b", "ab"),  # BEL, DEL, BS, NUL
        ("a\x85b\x9fc\x80d", "a\nbcd"),  # C1 controls (NEL is a line break)
        ("a\u202eevil\u202cb \u2066x\u2069", "aevilb x"),  # bidi overrides and isolates
        ("a\x1b", "a"),  # a lone ESC at the end
        ("a\x1b]0;never ended", "a0;never ended"),  # an unended OSC: only its introducer goes
        ("one\ntwo\tthree", "one\ntwo\tthree"),  # newlines and tabs stay
        ("one\r\ntwo\rthree", "one\ntwo\nthree"),  # a carriage return cannot hide what came before it
        ("caf\u00e9 \u4e2d\u6587 \U0001f600", "caf\u00e9 \u4e2d\u6587 \U0001f600"),  # text is text
        ("lone \udcff surrogate", "lone \ufffd surrogate"),  # printable at all
    ],
)
def test_terminal_text_removes_what_a_terminal_would_act_on(raw, shown):
    assert terminal_text(raw) == shown


def test_terminal_text_escape_spells_out_every_control_character_on_one_line():
    shown = terminal_text("run\x1b[8m; curl evil\nnext\tx \u202eabc \x9b \udcff", escape=True)
    assert shown == "run\\x1b[8m; curl evil\\x0anext\\x09x \\u202eabc \\x9b \\udcff"
    assert not unsafe(terminal_text(HOSTILE, escape=True))


def test_terminal_text_one_line_turns_line_breaks_and_tabs_into_spaces():
    assert terminal_text("a\nb\tc\r\nd\x1b[2J  e", one_line=True) == "a b c d  e"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["\x1b]" * 200_000, "\x9dx" * 200_000, "\x1b[" + "0" * 400_000, "\x1b[0" * 130_000, "\x1bP" + "x" * 400_000])
def test_terminal_text_is_linear_on_unended_sequences(text):
    # Each unended string or CSI is scanned only up to the next introducer (milliseconds here; quadratic would be hours).
    assert not unsafe(terminal_text(text))


def test_the_hostile_payload_keeps_its_words_and_loses_its_controls():
    shown = terminal_text(HOSTILE)
    assert not unsafe(shown) and shown.startswith(VISIBLE) and shown.endswith("end-of-payload")
    assert "click-me" in shown and "gnirts-desrever" in shown


def test_table_cells_are_cleaned_and_kept_on_one_line():
    lines = format_table([("a\x1b[2J", "two\nlines " + HOSTILE)], headers=("X", "Y"))
    assert len(lines) == 2 and not unsafe("\n".join(lines))


def test_the_suggestion_hook_shows_claude_code_no_control_sequences():
    from toolscript.claude_code import suggest
    from toolscript.claude_code.skills import Skill

    skill = Skill("evil", "a skill: " + HOSTILE, "project", "/p/.claude/skills/evil/SKILL.md")
    tool = {"id": "hostile__echo", "description": "a tool: " + HOSTILE}
    for text in (suggest.context_text([skill], [tool]), suggest.user_message("what now?", [skill])):
        assert not unsafe(text) and "a skill: hostile payload" in text, text


# -- every command, against the hostile server --------------------------------------------------


def _run(args: List[str], env: Dict[str, str], cwd: str, timeout: float = 60.0) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run([sys.executable, "-m", "toolscript", *args], env=dict(env, PYTHONPATH=REPO_ROOT), cwd=cwd,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def _hostile_server(name: str, *options: str) -> ServerConfig:
    return ServerConfig(name=name, type="stdio", source="test", command=sys.executable, args=[HOSTILE_SERVER, *options])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A gateway serving the hostile server (and one that crashes at start), a config file naming them,
    a project with a hostile skill and a data dir with a hostile memory: (env, cwd)."""
    root = tmp_path_factory.mktemp("hostile")
    home, work, data = root / "home", root / "work", root / "data"
    for directory in (home, work, data):
        directory.mkdir()
    (work / ".git").mkdir()  # the project root: skills above it are not looked at
    skill = work / ".claude" / "skills" / "evil"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\ndescription: {json.dumps(HOSTILE, ensure_ascii=False)}\n---\nbody\n", encoding="utf-8")
    config = {"mcpServers": {
        "hostile": {"command": sys.executable, "args": [HOSTILE_SERVER]},
        "wreck": {"command": sys.executable, "args": [HOSTILE_SERVER, "--crash"]},
        # A config file is outside text too (a cloned project's .toolscript.json).
        "shady": {"command": "shady" + HOSTILE, "args": ["arg" + HOSTILE], "env": {"KEY": "value" + HOSTILE}, "disabled": True},
    }}
    (work / "toolscript.json").write_text(json.dumps(config), encoding="utf-8")
    # The project's own file, not approved: what 'toolscript trust' shows before anything runs.
    project = {"mcpServers": {
        "local" + HOSTILE: {"command": "run" + HOSTILE, "args": ["arg" + HOSTILE], "env": {"KEY" + HOSTILE: HOSTILE}, "cwd": "dir" + HOSTILE},
        "remote": {"type": "http", "url": "https://example.com/" + HOSTILE, "headers": {"X-Key": HOSTILE}},
    }, "suggestions" + HOSTILE: {"enabled": True}}
    (work / ".toolscript.json").write_text(json.dumps(project), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLSCRIPT_", "CLAUDE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), TOOLSCRIPT_DATA_DIR=str(data), TOOLSCRIPT_STATE_DIR=str(root / "state"),
               TOOLSCRIPT_CONFIG=str(work / "toolscript.json"), ANTHROPIC_API_KEY="sk-ant-test-key")
    if "TOOLSCRIPT_BWRAP" in os.environ:
        env["TOOLSCRIPT_BWRAP"] = os.environ["TOOLSCRIPT_BWRAP"]
    with running_gateway([_hostile_server("hostile"), _hostile_server("wreck", "--crash")], work) as (_, url):
        captured = _run(["memory", "capture", "--content", "remembered " + HOSTILE, "--cwd", str(work)], env, str(work))
        assert captured.returncode == 0, captured.stderr
        env["TOOLSCRIPT_GATEWAY_URL"] = url
        yield env, str(work)


# (argv, words the human output must still show, whether --json applies)
COMMANDS = [
    (["list-tools", "hostile"], VISIBLE, True),
    (["list-servers"], "hostile", True),
    (["search", "hostile payload"], VISIBLE, True),
    (["search", "hostile payload", "--explain"], "hostile__echo", True),
    (["search", "hostile payload", "--output", "types"], VISIBLE, False),
    (["get-types", "--filter", "hostile"], VISIBLE, True),
    (["get-types", "--filter", "hostile", "--full"], VISIBLE, True),
    (["get-types", "--filter", "hostile", "--lang", "ts"], VISIBLE, True),
    (["get-types", "--filter", "hostile", "--lang", "ts", "--full"], VISIBLE, True),
    (["tools", "list"], VISIBLE, True),
    (["gateway", "status"], "last line hostile payload", True),
    (["servers", "check"], "last line hostile payload", True),
    (["-vv", "servers", "check", "hostile"], "starting hostile payload", False),  # the server's stderr, as debug lines
    (["doctor"], "hostile", True),
    (["config", "show"], "arghostile payload", True),
    (["trust", "--show"], "runs as you: 'runhostile payload \\x1b]0;pwned-title\\x07", True),  # spelled out, not removed
    (["skills"], VISIBLE, True),
    # Memory stores text already cleaned (it is injected into later sessions), so its JSON holds no escapes either.
    (["memory", "list"], "remembered", False),
    (["memory", "show", "1"], "remembered", False),
    (["memory", "search", "remembered"], "remembered", False),
    (["memory", "inject", "--query", "remembered payload"], "remembered", False),
]
IDS = [" ".join(c[0]) for c in COMMANDS]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("args, shown, has_json", COMMANDS, ids=IDS)
def test_human_output_holds_no_control_sequences(world, args, shown, has_json):
    env, cwd = world
    runs = []

    def shows_it() -> bool:
        # The crashing server's error is shown while the gateway has it failed, not while it retries: wait for that.
        runs.append(_run(args, env, cwd))
        return shown.encode() in runs[-1].stdout + runs[-1].stderr

    wait_for(shows_it, timeout=30)
    out, err = runs[-1].stdout.decode("utf-8", "surrogateescape"), runs[-1].stderr.decode("utf-8", "surrogateescape")
    assert not unsafe(out), f"stdout of {args}: {unsafe(out)}"
    assert not unsafe(err), f"stderr of {args}: {unsafe(err)}"
    assert shown in out + err, (out, err)
    # Whole sequences go, not only their ESC: no window title, link target or colour code is left as text.
    # (A stub's string literal spells a value exactly, as \\x1b... escapes: that is code, not a sequence.)
    shown_text = ESCAPED_SEQUENCE.sub("", out + err)
    assert not re.search("pwned-title|evil\\.example|c1-title|31m", shown_text), (out, err)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("args", [c[0] for c in COMMANDS if c[2]], ids=[i for i, c in zip(IDS, COMMANDS) if c[2]])
def test_json_output_keeps_the_text_exactly(world, args):
    env, cwd = world
    proc = _run(["--json", *args], env, cwd)
    text = proc.stdout.decode("utf-8")
    data = json.loads(text)
    # print_json's own bytes, holding the escape sequences as JSON escapes: nothing was cleaned.
    assert text == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert any("\x1b" in string for string in _strings(data)), text[:2000]


def test_config_show_names_an_unapproved_project_files_servers_without_control_sequences(world):
    env, cwd = world
    env = {k: v for k, v in env.items() if k != "TOOLSCRIPT_CONFIG"}  # the default files: ~ and the project's
    proc = _run(["config", "show"], env, cwd)
    out, err = proc.stdout.decode("utf-8", "surrogateescape"), proc.stderr.decode("utf-8", "surrogateescape")
    assert "awaiting approval" in out and "localhostile payload" in out, out
    assert not unsafe(out) and not unsafe(err), (unsafe(out), unsafe(err))


def test_exec_passes_the_scripts_own_output_through_untouched(world):
    env, cwd = world
    proc = _run(["exec", "from toolscript import tools; print(tools.hostile.echo(message='x'))"], env, cwd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode("utf-8") == HOSTILE + " x\n"


@pytest.mark.timeout(120)
def test_ask_prints_the_answer_and_the_tool_trace_without_control_sequences(world):
    env, cwd = world
    script = [{"tool": "hostile__fail", "input": {}}, {"tool": "hostile__echo", "input": {"message": "m"}}, {"text": "answer " + HOSTILE}]
    with FakeAnthropic(script, sequential=True) as api:
        proc = _run(["-v", "ask", "what does the hostile server say?"], dict(env, ANTHROPIC_BASE_URL=api.url), cwd)
    out, err = proc.stdout.decode("utf-8", "surrogateescape"), proc.stderr.decode("utf-8", "surrogateescape")
    assert proc.returncode == 0, err
    assert not unsafe(out) and not unsafe(err), (unsafe(out), unsafe(err))
    assert "answer hostile payload" in out and "hostile__fail" in err


def test_a_scripts_traceback_does_not_carry_a_servers_escape_sequences(world):
    env, cwd = world
    proc = _run(["exec", "from toolscript import tools; tools.hostile.fail()"], env, cwd)
    err = proc.stderr.decode("utf-8", "surrogateescape")
    assert proc.returncode == 1 and "ToolError" in err, err
    assert not unsafe(err), unsafe(err)
    assert not re.search("pwned-title|evil\\.example", err), err
