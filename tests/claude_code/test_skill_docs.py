"""The Claude Code skill: SKILL.md and its references say only what the real CLI does.

The model reads these files to use toolscript, so a wrong option, tool name or
output costs a failed call in every session.  Checked here:

* SKILL.md's frontmatter (stdlib parse of its ``key: value`` lines): ``name`` is
  the directory name, ``description`` is present and under 300 characters, the
  body is under 50 lines; the four references exist and SKILL.md links to them;
  every relative link resolves.  ``skills-ref`` (the Agent Skills reference
  validator) validates the directory when it is installed.
* Every ``toolscript ...`` command in a ``bash``/``sh``/``console`` block or in
  inline code parses with ``toolscript.cli.frame.build_parser`` and reaches a handler,
  and commands.md mentions every command, action and option the parser has.
* Every ``console`` block is a transcript: each ``$ `` command is run through
  bash (``toolscript`` on PATH) against an in-process gateway with only the
  built-ins, whose workspace is the demo project below, and its stdout must
  match the lines shown.  In the shown output a line ``...`` stands for any
  number of lines and ``...`` inside a line for any text.
* Every built-in tool id (``builtin__x.y``) and script name
  (``tools.builtin.x_y``) the docs mention exists.
"""

import argparse
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

import pytest

from conftest import REPO_ROOT, missing_prerequisite
from toolscript.cli import frame as cli
from toolscript.config.load import Config
from toolscript.gateway.client import GatewayClient
from toolscript.gateway.http_api import serve
from toolscript.gateway.service import Gateway

SKILL_DIR = os.path.join(REPO_ROOT, "plugins", "toolscript", "skills", "toolscript")
SKILL_MD = os.path.join(SKILL_DIR, "SKILL.md")
REFERENCES = ["commands.md", "examples.md", "configuration.md", "troubleshooting.md"]
DOCS = [SKILL_MD] + [os.path.join(SKILL_DIR, "references", name) for name in REFERENCES]

MAX_DESCRIPTION = 300  # characters
MAX_BODY_LINES = 50
MIN_COMMANDS = 60  # toolscript commands across the docs; guards against a parser that finds none
SHELL_LANGS = {"bash", "sh", "shell", "console"}
INTERNAL_COMMANDS = {"hook", "hooks-mcp"}  # run by the plugin (its hooks, its hook server), not by the model

# The project the transcripts run in (the gateway's workspace).  The docs' outputs
# depend on exactly these files; examples.md lists them.
DEMO_FILES: Dict[str, bytes] = {
    "README.md": b"# Demo\n\nA small project for the toolscript examples.\n",
    "docs/guide.md": b"# User guide\n\nRun `make run`, then open http://localhost:8000.\n",
    "src/app.py": b"from util import add\n\n\ndef main():\n    print(add(2, 3))  # TODO: read the numbers from argv\n\n\nmain()\n",
    "src/util.py": b"def add(a, b):\n    return a + b  # TODO: check the types\n",
    "data/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
}


# --- reading the docs -------------------------------------------------------------


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def frontmatter(text: str) -> Tuple[Dict[str, str], str]:
    """``(fields, body)`` of a SKILL.md: the ``key: value`` lines between the ``---`` fences."""
    lines = text.split("\n")
    assert lines[0] == "---", "SKILL.md must start with a '---' frontmatter line"
    end = lines.index("---", 1)
    fields: Dict[str, str] = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        assert sep and key.strip() and not line[0].isspace(), f"not a 'key: value' line: {line!r}"
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        fields[key.strip()] = value
    return fields, "\n".join(lines[end + 1 :])


class Block(NamedTuple):
    doc: str  # file name, for messages
    lang: str
    line: int  # 1-based line of the first content line
    lines: List[str]


def fenced_blocks(path: str) -> List[Block]:
    blocks: List[Block] = []
    lang: Optional[str] = None
    start = 0
    body: List[str] = []
    for number, line in enumerate(read(path).split("\n"), 1):
        if line.startswith("```"):
            if lang is None:
                lang, start, body = line[3:].strip().lower(), number + 1, []
            else:
                blocks.append(Block(os.path.relpath(path, SKILL_DIR), lang, start, body))
                lang = None
        elif lang is not None:
            body.append(line)
    assert lang is None, f"{path}: unclosed code block at line {start - 1}"
    return blocks


def prose(path: str) -> str:
    """The text outside fenced blocks."""
    return re.sub(r"^```.*?^```[^\n]*$", "", read(path), flags=re.S | re.M)


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]+)\1")


def _complete(text: str) -> bool:
    """Whether ``text`` is a whole shell line: no open quote, no trailing backslash."""
    if text.endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return False
    return True


class Step(NamedTuple):
    line: int
    command: str  # the shell text, heredoc included
    first: str  # the command line itself (continuations joined, no heredoc body)
    output: List[str]  # what a console transcript shows after it


def steps(block: Block) -> List[Step]:
    """The commands of a shell block (and, in a console block, the output after each).

    A command continues over lines while a quote is open or a line ends in a
    backslash; a heredoc's body runs to its terminator.  In a console block only
    lines starting with ``$ `` are commands; in bash blocks every line that is
    not blank or a comment is.
    """
    result: List[Step] = []
    console = block.lang == "console"
    lines = block.lines
    i = 0
    while i < len(lines):
        line = lines[i]
        start = i
        if console:
            if not line.startswith("$ "):
                if result:
                    result[-1].output.append(line)
                    i += 1
                    continue
                raise AssertionError(f"{block.doc}:{block.line + i}: console block must start with a '$ ' command")
            text = line[2:]
        else:
            if not line.strip() or line.lstrip().startswith("#"):
                i += 1
                continue
            text = line
        while not _complete(text) and i + 1 < len(lines):
            i += 1
            text = (text[:-1] if text.endswith("\\") else text + "\n") + lines[i]
        first = text.replace("\\\n", " ")
        command = text
        heredoc = _HEREDOC.search(text)
        if heredoc:
            terminator = heredoc.group(2)
            while i + 1 < len(lines):
                i += 1
                command += "\n" + lines[i]
                if lines[i] == terminator:
                    break
            else:
                raise AssertionError(f"{block.doc}:{block.line + start}: heredoc without its {terminator} line")
        result.append(Step(block.line + start, command, first, []))
        i += 1
    return result


def toolscript_invocations(shell_line: str) -> List[List[str]]:
    """The argv of every ``toolscript`` command in one shell line (``$(...)`` included)."""
    found: List[List[str]] = []
    # Command substitutions are checked on their own and replaced by a placeholder word.
    while "$(" in shell_line:
        start = shell_line.index("$(")
        depth, end = 0, start + 1
        for end in range(start + 1, len(shell_line)):
            depth += {"(": 1, ")": -1}.get(shell_line[end], 0)
            if depth == 0:
                break
        found += toolscript_invocations(shell_line[start + 2 : end])
        shell_line = shell_line[:start] + "SUBSTITUTED" + shell_line[end + 1 :]
    shell_line = _HEREDOC.sub(" ", shell_line)
    shell_line = re.sub(r"\s\d?>>?\s*(&\d|\S+)", " ", shell_line)  # output redirections
    lexer = shlex.shlex(shell_line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = list(lexer)
    commands: List[List[str]] = [[]]
    for word in words:
        if word in ("|", "||", "&&", ";", "&"):
            commands.append([])
        else:
            commands[-1].append(word)
    for command in commands:
        # Skip what may precede the program: VAR=value, env [-u VAR] [VAR=value].
        while command and (re.match(r"[A-Za-z_][A-Za-z0-9_]*=", command[0]) or command[0] == "env"):
            if command[0] == "env" and len(command) > 1 and command[1] == "-u":
                del command[1:3]
            del command[0]
        if command and command[0] == "toolscript":
            found.append(command[1:])
    return found


class Command(NamedTuple):
    where: str
    text: str
    argv: List[str]


def doc_commands(path: str) -> List[Command]:
    """Every toolscript command in one doc: shell blocks and inline code."""
    commands: List[Command] = []
    for block in fenced_blocks(path):
        if block.lang not in SHELL_LANGS:
            continue
        for step in steps(block):
            for argv in toolscript_invocations(step.first):
                commands.append(Command(f"{block.doc}:{step.line}", step.first, argv))
    name = os.path.relpath(path, SKILL_DIR)
    for match in re.finditer(r"`(toolscript [^`]+)`", prose(path)):
        for argv in toolscript_invocations(match.group(1)):
            commands.append(Command(f"{name} (inline)", match.group(1), argv))
    return commands


def all_commands() -> List[Command]:
    return [command for path in DOCS for command in doc_commands(path)]


def parse(argv: List[str]) -> Tuple[Optional[argparse.Namespace], str]:
    """``(namespace, "")`` when argv parses and names a runnable command, else ``(None, why)``."""
    err = io.StringIO()
    out = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            namespace = cli.build_parser(argv).parse_args(argv)
    except SystemExit as exc:
        if exc.code == 0 and {"-h", "--help", "--version"} & set(argv):
            return argparse.Namespace(), ""
        return None, (err.getvalue() or out.getvalue()).strip() or f"exit {exc.code}"
    if getattr(namespace, "handler", None) is None:
        return None, "no command or action given (it would only print help)"
    return namespace, ""


# --- frontmatter, size, links ----------------------------------------------------------


def test_frontmatter_name_and_description():
    fields, _ = frontmatter(read(SKILL_MD))
    assert fields.get("name") == os.path.basename(SKILL_DIR) == "toolscript"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fields["name"])
    description = fields.get("description", "")
    assert description.strip(), "the description is all the model sees before loading the skill"
    assert len(description) < MAX_DESCRIPTION, f"description is {len(description)} characters"
    assert "Use when" in description, "the description must say when to use the skill"
    assert set(fields) <= {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}


def test_body_is_lean():
    _, body = frontmatter(read(SKILL_MD))
    lines = body.strip("\n").split("\n")
    assert len(lines) < MAX_BODY_LINES, f"SKILL.md body has {len(lines)} lines"


def test_references_exist_and_are_linked():
    text = read(SKILL_MD)
    for name in REFERENCES:
        assert os.path.isfile(os.path.join(SKILL_DIR, "references", name)), name
        assert f"](references/{name})" in text, f"SKILL.md does not link references/{name}"


def test_relative_links_resolve():
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose(path)):
            if "://" in target:
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
            assert os.path.exists(resolved), f"{os.path.relpath(path, SKILL_DIR)} links {target}, which does not exist"


def test_skills_ref_validates_the_skill():
    try:
        import skills_ref
    except ImportError:
        missing_prerequisite(
            "skills-ref is not installed (pip install -r tests/requirements.txt; it needs Python >= 3.11)"
        )
    from pathlib import Path

    assert skills_ref.validate(Path(SKILL_DIR)) == []
    properties = skills_ref.read_properties(Path(SKILL_DIR))
    fields, _ = frontmatter(read(SKILL_MD))
    # Our stdlib frontmatter reading agrees with the reference YAML parser.
    assert (properties.name, properties.description) == (fields["name"], fields["description"])


# --- commands ----------------------------------------------------------------------------


def test_command_extraction():
    line = 'X=1 env -u A toolscript search "a b" --limit 2 | jq . && eval "$(toolscript gateway start --detach)"'
    assert toolscript_invocations(line) == [["gateway", "start", "--detach"], ["search", "a b", "--limit", "2"]]
    assert toolscript_invocations("toolscript exec - <<'EOF'") == [["exec", "-"]]
    assert toolscript_invocations("toolscript servers check 2>&1 | tail -1") == [["servers", "check"]]
    assert toolscript_invocations("from toolscript import tools") == []
    block = Block("x", "console", 1, ["$ toolscript exec - <<'EOF'", "print(1)", "EOF", "1", "$ toolscript exec '", "print(2)'", "2"])
    assert [(s.first, s.output) for s in steps(block)] == [("toolscript exec - <<'EOF'", ["1"]), ("toolscript exec '\nprint(2)'", ["2"])]


def test_every_documented_command_parses():
    commands = all_commands()
    assert len(commands) >= MIN_COMMANDS, f"found only {len(commands)} toolscript commands in the docs"
    for path in DOCS:
        assert doc_commands(path), f"{os.path.relpath(path, SKILL_DIR)} shows no toolscript command"
    failures = []
    for command in commands:
        namespace, why = parse(command.argv)
        if namespace is None:
            failures.append(f"{command.where}: {command.text!r}: {why}")
    assert not failures, "documented commands the CLI rejects:\n" + "\n".join(failures)


def _parser_tree() -> Iterator[Tuple[str, argparse.ArgumentParser]]:
    """``("gateway start", parser)`` for every runnable command and action."""
    for name in cli.COMMANDS:
        if name in INTERNAL_COMMANDS:
            continue
        parser = cli.build_parser([name])
        stack = [(name, _subparser(parser, name))]
        while stack:
            path, sub = stack.pop()
            actions = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            if not actions:
                yield path, sub
            for action in actions:
                for child_name, child in action.choices.items():
                    stack.append((f"{path} {child_name}", child))


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise AssertionError(name)


def test_commands_reference_covers_the_whole_cli():
    commands_md = os.path.join(SKILL_DIR, "references", "commands.md")
    documented = [c.argv for c in doc_commands(commands_md)]
    text = read(commands_md)
    global_options = {"--json", "--verbose", "--config", "--gateway-url", "--session", "--help", "-h", "-v"}
    missing = []
    for path, parser in _parser_tree():
        words = path.split()
        if not any(argv[: len(words)] == words for argv in documented):
            missing.append(f"no example of 'toolscript {path}'")
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or not action.option_strings:
                continue
            if set(action.option_strings) & global_options:
                continue
            if not any(re.search(re.escape(option) + r"(?![\w-])", text) for option in action.option_strings):
                missing.append(f"'toolscript {path}' option {'/'.join(action.option_strings)} is not documented")
    assert not missing, "\n".join(missing)


# --- transcripts -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A built-in-only gateway over the demo project, and the environment to run the docs' commands in."""
    root = tmp_path_factory.mktemp("skill-docs")
    project = root / "demo"
    for name, data in DEMO_FILES.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "toolscript"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m toolscript "$@"\n')
    shim.chmod(0o755)
    home = root / "home"
    home.mkdir()
    gateway = Gateway(Config(servers={}, files=[], warnings=[]), workspace=str(project))
    server, _ = serve(gateway)
    gateway.start()
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": REPO_ROOT,
        "TOOLSCRIPT_STATE_DIR": str(root / "state"),
        "TOOLSCRIPT_GATEWAY_URL": server.url,
    }
    try:
        yield {"env": env, "cwd": str(project), "url": server.url}
    finally:
        server.shutdown_all()
        gateway.stop()


def output_pattern(lines: List[str]) -> "re.Pattern[str]":
    parts = []
    for line in lines:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(line.rstrip()).replace(re.escape("..."), r"[^\n]*?") + r"\n")
    return re.compile("".join(parts))


def matches(expected: List[str], actual: str) -> bool:
    actual = "".join(line.rstrip() + "\n" for line in actual.splitlines())
    return output_pattern(expected).fullmatch(actual) is not None


def test_output_matching():
    assert matches(["a", "...", "d ... f"], "a\nb\nc\nd e f\n")
    assert matches(["...", "x"], "x\n")
    assert not matches(["a"], "a\nb\n")
    assert not matches(["a ... c"], "a b\nc\n")


def transcripts() -> List[Tuple[str, Step]]:
    found = []
    for path in DOCS:
        for block in fenced_blocks(path):
            if block.lang == "console":
                found += [(f"{block.doc}:{step.line}", step) for step in steps(block)]
    return found


def test_console_transcripts_match_the_real_output(demo):
    if shutil.which("bash") is None:
        missing_prerequisite("bash is not installed; the transcripts are shell commands")
    found = transcripts()
    assert len(found) >= 20, f"only {len(found)} console transcripts"
    assert any(where.startswith("SKILL.md:") and "exec" in step.first for where, step in found), (
        "SKILL.md's main example must be a console transcript so its output is checked"
    )
    failures = []
    for where, step in found:
        proc = subprocess.run(
            ["bash", "-c", step.command],
            env=demo["env"],
            cwd=demo["cwd"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
        if not matches(step.output, proc.stdout):
            failures.append(
                f"{where}: $ {step.first}\n--- shown:\n" + "\n".join(step.output)
                + f"\n--- actual (exit {proc.returncode}):\n{proc.stdout}--- stderr:\n{proc.stderr}"
            )
    assert not failures, "\n\n".join(failures)


# --- tool names ---------------------------------------------------------------------------------


def test_builtin_tool_names_exist(demo):
    names = GatewayClient(demo["url"]).get("/runtime/names")["servers"]["builtin"]
    ids = {entry["id"] for entry in names.values()}
    text = "\n".join(read(path) for path in DOCS)
    mentioned_ids = set(re.findall(r"builtin__[A-Za-z_][\w.]*\w", text))
    # builtin__fs.* style wildcards are prose, not ids.
    unknown = {i for i in mentioned_ids if i not in ids and not i.endswith("__fs")}
    assert not unknown, f"the docs name built-in tools that do not exist: {sorted(unknown)}"
    attributes = set(re.findall(r"tools\.builtin\.([A-Za-z_]\w*)", text))
    # examples.md shows the AttributeError a wrong name gives (list_dir for fs_list_dir).
    unknown = {a for a in attributes if a not in names and a not in ("fs_", "list_dir")}
    assert not unknown, f"the docs call tools.builtin.<name> that do not exist: {sorted(unknown)}"
    assert len(mentioned_ids) >= 4 and len(attributes) >= 4
