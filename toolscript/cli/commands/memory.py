"""``toolscript memory ...``: the cross-session memory by hand (the hooks do the same on their own)."""

import argparse
import os
import sys
import time
from typing import Any, Dict, List, Optional

from toolscript import log
from toolscript.cli.args import add_action
from toolscript.cli.output import echo, format_table, print_json
from toolscript.errors import UserError
from toolscript.log import one_line

logger = log.get("memory")

DESCRIPTION = """\
The plugin's hooks record each session's work (one line per tool action, the
answers, a summary at the end) in a SQLite database under the data directory
(TOOLSCRIPT_DATA_DIR, config "memory.dataDir", default ~/.toolscript), secrets
redacted and <private>...</private> never stored, and bring related work back
at SessionStart and with each prompt.  These commands do the same by hand.
Memories belong to a project (the git root of the working directory, or the
directory); commands look at this project's unless --all-projects, by id too:
show, timeline and forget say when an id is another project's and leave it.

examples:
  toolscript memory search "flaky login test"
  toolscript memory list --limit 10
  toolscript memory show 42
  toolscript memory inject --query "fix the clustering bug"
  toolscript memory forget --from-session 3f1c... --yes
  toolscript memory export --output memories.jsonl
  toolscript memory add "Releases are tagged vX.Y.Z from main"
  toolscript memory import --from-claude-code

"memory": {"enabled": false} in a project's .toolscript.json turns memory off
for that project (honoured before the file is trusted): nothing is recorded or
injected, add, capture and import refuse, the memory tools fail saying so;
search, list, show, export and forget still reach what is stored.
"""

CURRENT_SESSION = "current_session"  # <data dir>/current_session: the session `memory session start` began


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", title="actions")
    scope = argparse.ArgumentParser(add_help=False)
    scope.add_argument("--cwd", metavar="DIR", help="the project is this directory's (default: the current directory)")
    scope.add_argument("--all-projects", action="store_true", help="every project's memories, not only this one's")
    sid = argparse.ArgumentParser(add_help=False)
    sid.add_argument("--session-id", metavar="ID", help="the session (default: $CLAUDE_SESSION_ID, $CLAUDE_CODE_SESSION_ID, "
                                                         "else the one 'memory session start' began)")

    session = add_action(actions, "session", common, "start or end a session (idempotent)", _SESSION_HELP, _session)
    session.add_argument("what", choices=("start", "end"), help="start: record it and print its id; end: summarise and close it")
    for extra in (sid, scope):
        for action in extra._actions:
            if action.dest not in ("help", "all_projects"):
                session._add_action(action)

    capture = add_action(actions, "capture", common, "record a memory", _CAPTURE_HELP, _capture)
    capture.add_argument("--content", required=True, help="the text; - reads stdin")
    capture.add_argument("--kind", choices=("note", "action", "response", "summary"), default="note", help="default: note")
    capture.add_argument("--tool", default="", help="the tool an action used")
    capture.add_argument("--files", default="", metavar="A,B", help="files it touched")
    _inherit(capture, sid, scope, skip=("all_projects",))

    response = add_action(actions, "capture-response", common, "record Claude's answer (what the Stop hook does)",
                          _RESPONSE_HELP, _capture_response)
    response.add_argument("--content", default=None, help="the answer; - reads stdin (default: $RESPONSE_SUMMARY)")
    _inherit(response, sid, scope, skip=("all_projects",))

    inject = add_action(actions, "inject", common, "the related-work markdown a prompt would get", _INJECT_HELP, _inject)
    inject.add_argument("--query", default=None, help="the prompt (default: $USER_PROMPT; empty: the project's recent work)")
    inject.add_argument("--budget", type=int, default=None, metavar="TOKENS", help="size limit (default 600, config memory.injectBudget)")
    _inherit(inject, sid, scope, skip=("all_projects",))

    brief = add_action(actions, "brief", common, "at most 200 tokens of related work (what an edit gets)", _BRIEF_HELP, _brief)
    brief.add_argument("--query", default=None, help="what is being done (default: $TOOL_DESCRIPTION)")
    brief.add_argument("--budget", type=int, default=None, metavar="TOKENS", help="size limit (default 200)")
    _inherit(brief, sid, scope, skip=("all_projects",))

    search = add_action(actions, "search", common, "memories matching words, best first", _SEARCH_HELP, _search)
    search.add_argument("query", nargs="+", help="words to look for")
    search.add_argument("--limit", type=int, default=10)
    _inherit(search, scope)

    listing = add_action(actions, "list", common, "the newest memories", _LIST_HELP, _list)
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--from-session", metavar="ID", dest="only_session", help="only this session's")
    _inherit(listing, scope)

    show = add_action(actions, "show", common, "memories in full, by id", _SHOW_HELP, _show)
    show.add_argument("ids", nargs="+", type=int, metavar="ID")
    _inherit(show, scope)

    timeline = add_action(actions, "timeline", common, "what happened around a memory", _TIMELINE_HELP, _timeline)
    timeline.add_argument("id", type=int, metavar="ID")
    timeline.add_argument("--before", type=int, default=5)
    timeline.add_argument("--after", type=int, default=5)
    _inherit(timeline, scope)

    forget = add_action(actions, "forget", common, "delete memories by id, session or project", _FORGET_HELP, _forget)
    forget.add_argument("ids", nargs="*", type=int, metavar="ID")
    forget.add_argument("--from-session", metavar="ID", dest="only_session", help="every memory of this session")
    forget.add_argument("--project", metavar="DIR", help="every memory of this project")
    forget.add_argument("--yes", action="store_true", help="really delete (without it: say how many would go, exit 1)")
    _inherit(forget, scope)

    export = add_action(actions, "export", common, "memories as JSON lines", _EXPORT_HELP, _export)
    export.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    _inherit(export, scope)

    imported = add_action(actions, "import", common, "memories from JSON lines, or Claude Code's memory files", _IMPORT_HELP, _import)
    imported.add_argument("file", nargs="?", help="a file written by 'memory export'; - reads stdin")
    imported.add_argument("--from-claude-code", action="store_true",
                          help="import the project's Claude Code auto memory (MEMORY.md and its topic files)")
    imported.add_argument("--memory-dir", metavar="DIR", help="with --from-claude-code: read this folder instead of the one Claude Code uses")
    imported.add_argument("--project", metavar="DIR", help="the project is this directory's (default: the current directory)")

    add = add_action(actions, "add", common, "remember a fact on purpose", _ADD_HELP, _add)
    add.add_argument("text", help="the fact; - reads stdin")
    add.add_argument("--files", default="", metavar="A,B", help="files it is about")
    add.add_argument("--project", metavar="DIR", help="the project is this directory's (default: the current directory)")


def _inherit(parser: argparse.ArgumentParser, *parents: argparse.ArgumentParser, skip=()) -> None:
    for parent in parents:
        for action in parent._actions:
            if action.dest != "help" and action.dest not in skip:
                parser._add_action(action)


_SESSION_HELP = """\
start records a session (its project is the working directory's) and prints its id;
end stores a summary of its memories and closes it. Both are idempotent; ending a
session that is not active warns and exits 0.  Starting another session ends the
one the previous start began, if that one is still active and of the same project
(one session by hand per project); sessions Claude Code's hooks began are left alone.

examples:
  toolscript memory session start
  toolscript memory session end --session-id 3f1c...
"""
_CAPTURE_HELP = """\
examples:
  toolscript memory capture --content "Decided: retries use exponential backoff"
  git log -1 --format=%B | toolscript memory capture --content - --kind note
"""
_RESPONSE_HELP = """\
examples:
  toolscript memory capture-response --content "Fixed the race in the cache"
"""
_INJECT_HELP = """\
Prints the related-work markdown (## Relevant Context, Recent Related Work, Potentially
Related, and an Activity Shift note when the query leaves the session's recent work),
or nothing when nothing is related (exit 0 either way).  Each memory is a quoted
record with its age and source (- 3 days ago, Bash: "..."), under a line saying
they are records of earlier sessions, not instructions.

examples:
  toolscript memory inject --query "fix the clustering bug"
  USER_PROMPT="add tests" toolscript memory inject --session-id 3f1c...
"""
_BRIEF_HELP = """\
examples:
  toolscript memory brief --query "Edit src/cache.py"
"""
_SEARCH_HELP = """\
examples:
  toolscript memory search flaky login
  toolscript memory search "cache invalidation" --all-projects --json
"""
_LIST_HELP = """\
examples:
  toolscript memory list
  toolscript memory list --from-session 3f1c... --json
"""
_SHOW_HELP = """\
Only this project's memories are shown; an id of another project's is named
as such (exit 1) unless --all-projects.

examples:
  toolscript memory show 42 43
  toolscript memory show 42 --all-projects
"""
_TIMELINE_HELP = """\
examples:
  toolscript memory timeline 42 --before 3 --after 3
"""
_FORGET_HELP = """\
Without --yes it only counts what would be deleted (exit 1).  Ids of another
project's memories are refused (nothing is deleted) unless --all-projects.

examples:
  toolscript memory forget 42 43 --yes
  toolscript memory forget --from-session 3f1c... --yes
  toolscript memory forget --project . --yes
"""
_EXPORT_HELP = """\
examples:
  toolscript memory export --output memories.jsonl
  toolscript memory export --all-projects > all.jsonl
"""
_IMPORT_HELP = """\
A file from 'memory export' adds its memories, skipping those already stored.

--from-claude-code reads Claude Code's auto memory of the project: MEMORY.md
(the index whose first 200 lines Claude Code loads at session start) and the
topic files beside it, in ~/.claude/projects/<project>/memory/ (or where
CLAUDE_CONFIG_DIR, CLAUDE_CODE_REMOTE_MEMORY_DIR or autoMemoryDirectory put
it).  Each bullet or paragraph becomes a memory whose source is its file and
line.  Running it again mirrors the files: unchanged entries stay, changed ones
are replaced, removed ones are forgotten.  The hooks never inject an entry
Claude Code already loaded from MEMORY.md.

examples:
  toolscript memory import memories.jsonl
  toolscript memory import --from-claude-code
  toolscript memory import --from-claude-code --project ~/src/app --json
"""
_ADD_HELP = """\
Stores one fact as a note of the project (source "user"), redacted like every
memory; the same fact again is not stored twice.  The model does the same with
the memory.remember tool.

examples:
  toolscript memory add "Releases are tagged vX.Y.Z from main"
  toolscript memory add "The staging DB is reset nightly" --project ~/src/app --json
"""


# -- shared pieces -----------------------------------------------------------------------------------


def _settings(args: argparse.Namespace) -> Dict[str, Any]:
    from toolscript.config import keys as configkeys

    settings, problems = configkeys.memory_settings(args.config_paths, _cwd(args))
    for problem in problems:
        logger.warning("%s (ignored; the default applies)", problem)
    return settings


def _cwd(args: argparse.Namespace) -> str:
    # add and import name the project with --project; forget's --project is what to delete, not where to look.
    for option in ("cwd", "project") if getattr(args, "action", "") in ("add", "import") else ("cwd",):
        given = getattr(args, option, None)
        if given:
            if not os.path.isdir(given):
                raise UserError(f"--{option} {given}: no such directory", exit_code=2)
            return os.path.abspath(given)
    return os.getcwd()


def _require_enabled(args: argparse.Namespace) -> None:
    """Refuse to store anything in a project whose memory is turned off (one line that says how to turn it on)."""
    from toolscript.memory import OFF_MESSAGE, enabled

    if not enabled(_settings(args)):
        raise UserError(OFF_MESSAGE, exit_code=1)


def _project(args: argparse.Namespace) -> Optional[str]:
    from toolscript.memory import project_root

    return None if getattr(args, "all_projects", False) else project_root(_cwd(args))


def _open(args: argparse.Namespace):
    from toolscript.claude_code.memory_hooks import open_configured

    return open_configured(_settings(args))


def _data_dir(args: argparse.Namespace) -> str:
    from toolscript.memory import store

    data = _settings(args).get("dataDir")
    return os.path.expanduser(data) if data else store.data_dir()


def _session_id(args: argparse.Namespace) -> str:
    given = getattr(args, "session_id", None) or os.environ.get("CLAUDE_SESSION_ID") or os.environ.get("CLAUDE_CODE_SESSION_ID")
    return given or _current_session(args)


def _content(value: Optional[str]) -> str:
    return sys.stdin.read() if value == "-" else (value or "")


def _row(memory: Any) -> Dict[str, Any]:
    from toolscript.memory.automemory import source

    return {"id": memory.id, "session": memory.session, "project": memory.project, "kind": memory.kind, "tool": memory.tool,
            "source": source(memory), "files": list(memory.files), "content": memory.content, "created": memory.created,
            "createdIso": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(memory.created))}


def _print_memories(args: argparse.Namespace, memories: List[Any], scores: Optional[List[float]] = None, empty: str = "") -> None:
    if args.json:
        rows = [_row(m) for m in memories]
        if scores is not None:
            for row, score in zip(rows, scores):
                row["score"] = round(score, 3)
        print_json(rows)
        return
    if not memories:
        print(empty)
        return
    from toolscript.memory.context import relative_date

    now = time.time()
    table = [[m.id, relative_date(m.created, now), m.kind, one_line(m.content, 100)] for m in memories]
    for line in format_table(table, ["id", "when", "kind", "memory"]):
        print(line)


# -- actions -----------------------------------------------------------------------------------------


def _session(args: argparse.Namespace) -> int:
    """``memory session start|end``: a session by hand, for work that no Claude Code hook records.

    start is idempotent for a session id (the same id again changes nothing).
    A start of another session ends the one the previous start by hand began
    (``CURRENT_SESSION``) when that one is still active and of the same
    project, as ``memory session end`` would: one session by hand per project
    at a time.  Sessions the hooks began are Claude Code's own (two windows
    on one project are two live sessions) and are never ended here.
    """
    import uuid

    from toolscript.memory import project_root, session_key

    project = project_root(_cwd(args))
    with _open(args) as db:
        if args.what == "start":
            session = _session_id(args) if getattr(args, "session_id", None) else str(uuid.uuid4())
            previous = _current_session(args)
            created = db.start_session(session, project)
            ended = None
            if previous and session_key(previous) != session_key(session):
                before = db.session(previous)
                if before is not None and before.status == "active" and before.project == project:
                    _end(db, previous, project)
                    ended = previous
            _write_current(args, session)
            logger.info("memory session: %s %s (project %s)%s", "started" if created else "already had", session, project,
                        f"; ended {ended}, which the previous start by hand began" if ended else "")
            if args.json:
                print_json({"session": session, "project": project, "created": created, "ended": ended})
            else:
                print(session)
            return 0
        session = _session_id(args)
        if not session or db.session(session) is None or db.session(session).status != "active":
            logger.warning("No active session to end%s", f" ({session})" if session else "")
            if args.json:
                print_json({"session": session or None, "ended": False})
            return 0
        summary = _end(db, session, project)
        _clear_current(args, session)
        logger.info("memory session: ended %s (project %s)%s", session, project, ", summary stored" if summary else "")
        if args.json:
            print_json({"session": session, "ended": True, "summary": summary})
        return 0


def _end(db: Any, session: str, project: str) -> Optional[str]:
    """Store the session's summary (when it has memories to sum up) and mark it completed; the summary's text."""
    from toolscript.memory import capture

    summary = capture.session_summary(db.recent(session=session, limit=500))
    if summary is not None:
        db.add(session=session, project=project, kind="summary", content=summary.content, files=summary.files)
    db.end_session(session)
    return summary.content if summary is not None else None


def _current_session(args: argparse.Namespace) -> str:
    """The session the last ``memory session start`` began (and no ``end`` closed), or ""."""
    try:
        with open(os.path.join(_data_dir(args), CURRENT_SESSION), encoding="utf-8") as f:
            return f.read(200).strip()
    except OSError:
        return ""


def _write_current(args: argparse.Namespace, session: str) -> None:
    try:
        from toolscript import paths

        paths.write_private(os.path.join(_data_dir(args), CURRENT_SESSION), session + "\n")
    except (OSError, UserError) as exc:
        logger.info("current session not recorded (%s)", exc)


def _clear_current(args: argparse.Namespace, session: str) -> None:
    path = os.path.join(_data_dir(args), CURRENT_SESSION)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read(200).strip() == session:
                os.unlink(path)
    except OSError:
        pass


def _capture(args: argparse.Namespace) -> int:
    from toolscript.memory import project_root

    _require_enabled(args)
    content = _content(args.content)
    files = [f.strip() for f in args.files.split(",") if f.strip()]
    with _open(args) as db:
        memory_id = db.add(session=_session_id(args), project=project_root(_cwd(args)), kind=args.kind, content=content,
                           tool=args.tool, files=files)
    if args.json:
        print_json({"id": memory_id, "stored": memory_id is not None})
    elif memory_id is None:
        print("nothing stored: the content was empty once <private> parts were removed", file=sys.stderr)
    else:
        print(memory_id)
    return 0


def _capture_response(args: argparse.Namespace) -> int:
    from toolscript.memory import capture, project_root

    _require_enabled(args)
    text = _content(args.content) if args.content is not None else os.environ.get("RESPONSE_SUMMARY", "")
    if args.content is None and not text:
        logger.warning("RESPONSE_SUMMARY not set, using empty")
    captured = capture.from_response(text)
    memory_id = None
    if captured is not None:
        with _open(args) as db:
            memory_id = db.add(session=_session_id(args), project=project_root(_cwd(args)), kind=captured.kind,
                               content=captured.content, files=captured.files)
    if args.json:
        print_json({"id": memory_id, "stored": memory_id is not None})
    return 0


def _budget(args: argparse.Namespace, key: str) -> int:
    budget = args.budget if args.budget is not None else int(_settings(args)[key])
    if budget < 0:
        raise UserError("--budget must be 0 or more tokens", exit_code=2)
    return budget


def _inject(args: argparse.Namespace) -> int:
    return _context(args, "inject", "USER_PROMPT", "injectBudget", "shows the project's recent work instead")


def _brief(args: argparse.Namespace) -> int:
    return _context(args, "brief", "TOOL_DESCRIPTION", "briefBudget", "has nothing to look for")


def _context(args: argparse.Namespace, kind: str, variable: str, budget_key: str, without_query: str) -> int:
    """``memory inject`` / ``memory brief``: the query from --query, else the hook's environment variable (USER_PROMPT, TOOL_DESCRIPTION).

    Neither given (or the variable blank) is most likely a hook or script that
    lost its input: one warning says what to pass, and the command goes on.
    An explicit ``--query ""`` is a choice and goes on quietly.
    """
    from toolscript.memory import context, enabled, project_root

    if not enabled(_settings(args)):
        logger.warning("memory %s: memory is turned off for this project, so nothing is %s", kind,
                       "injected" if kind == "inject" else "briefed")
        if args.json:
            print_json({"context": ""})
        return 0
    source = "--query" if args.query is not None else f"${variable}"
    query = args.query if args.query is not None else os.environ.get(variable, "")
    if args.query is None and not query.strip():
        logger.warning("memory %s: no query: pass --query TEXT (or set %s); it %s", kind, variable, without_query)
    project, session, budget = project_root(_cwd(args)), _session_id(args), _budget(args, budget_key)
    with _open(args) as db:
        text = getattr(context, kind)(db, query, project=project, session=session, budget_tokens=budget)
    # What was done, never what was asked: the -v log file keeps this line, and a prompt may hold a secret.
    logger.info("memory %s: %s for a %d-character query from %s, project %s, session %s, budget %d tokens", kind,
                f"{len(text)} characters (~{context.estimate_tokens(text)} tokens) of related work" if text else "nothing related",
                len(query), source, project, session or "-", budget)
    if args.json:
        print_json({"context": text})
    elif text:
        echo(text)
    return 0


def _search(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UserError("--limit must be at least 1", exit_code=2)
    query = " ".join(args.query)
    with _open(args) as db:
        found = db.search(query, project=_project(args), limit=args.limit)
    logger.info("memory search: %d match(es) of at most %d for %d word(s), %s", len(found), args.limit, len(query.split()),
                f"project {_project(args)}" if _project(args) else "every project")
    _print_memories(args, [m for m, _ in found], [s for _, s in found], empty=f"No memories match {query!r}.")
    return 0


def _list(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UserError("--limit must be at least 1", exit_code=2)
    with _open(args) as db:
        memories = db.recent(project=None if args.only_session else _project(args), session=args.only_session, limit=args.limit)
    _print_memories(args, memories, empty="No memories yet: the hooks record them as you work.")
    return 0


def _foreign(db: Any, args: argparse.Namespace, ids: List[int]) -> Dict[int, str]:
    """{id: its project} for the ids that exist but belong to another project than the command's (none with --all-projects)."""
    project = _project(args)
    if project is None or not ids:
        return {}
    return {i: owner for i, owner in db.owners(ids).items() if owner != project}


def _foreign_message(foreign: Dict[int, str], what: str) -> str:
    ids = ", ".join(map(str, sorted(foreign)))
    projects = ", ".join(sorted(set(foreign.values())))
    one = len(foreign) == 1
    return (f"memor{'y' if one else 'ies'} {ids} belong{'s' if one else ''} to another project ({projects}); "
            f"{what} with --all-projects, or from that project's directory (--cwd)")


def _show(args: argparse.Namespace) -> int:
    with _open(args) as db:
        foreign = _foreign(db, args, args.ids)
        memories = [m for m in db.get(args.ids) if m.id not in foreign]
    missing = sorted(set(args.ids) - {m.id for m in memories} - set(foreign))
    if args.json:
        print_json([_row(m) for m in memories])
    else:
        for memory in memories:
            from toolscript.memory.automemory import source

            echo(f"#{memory.id}  {memory.kind}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(memory.created))}"
                  f"  session {memory.session or '-'}" + (f"  source {source(memory)}" if memory.tool else ""))
            if memory.files:
                echo("files: " + ", ".join(memory.files))
            echo(memory.content)
            print()
    problems = [_foreign_message(foreign, "show it")] if foreign else []
    if missing:
        problems.append(f"no memory with id {', '.join(map(str, missing))}; see 'toolscript memory list'")
    if problems:
        raise UserError("; ".join(problems), exit_code=1)
    return 0


def _timeline(args: argparse.Namespace) -> int:
    with _open(args) as db:
        if not db.owners([args.id]):
            raise UserError(f"no memory with id {args.id}; see 'toolscript memory list'", exit_code=1)
        foreign = _foreign(db, args, [args.id])
        if foreign:
            raise UserError(_foreign_message(foreign, "see its timeline"), exit_code=1)
        memories = db.timeline(args.id, before=max(0, args.before), after=max(0, args.after))
    _print_memories(args, memories)
    return 0


def _forget(args: argparse.Namespace) -> int:
    from toolscript.memory import project_root

    project = project_root(os.path.abspath(args.project)) if args.project else None
    if not (args.ids or args.only_session or project):
        raise UserError("say what to forget: memory ids, --session ID or --project DIR (with --yes)", exit_code=2)
    with _open(args) as db:
        foreign = _foreign(db, args, args.ids)
        if foreign:
            raise UserError(_foreign_message(foreign, "nothing was deleted; delete it"), exit_code=1)
        if not args.yes:
            count = _count(db, args.ids, args.only_session, project)
            message = f"{count} memor{'y' if count == 1 else 'ies'} would be deleted; run again with --yes to delete"
            if args.json:
                print_json({"deleted": 0, "wouldDelete": count})
            else:
                print(message, file=sys.stderr)
            return 1
        deleted = 0
        if args.ids:
            deleted += db.forget(ids=args.ids)
        if args.only_session:
            deleted += db.forget(session=args.only_session)
        if project:
            deleted += db.forget(project=project)
    if args.json:
        print_json({"deleted": deleted})
    else:
        print(f"deleted {deleted} memor{'y' if deleted == 1 else 'ies'}")
    return 0


def _count(db: Any, ids: List[int], session: Optional[str], project: Optional[str]) -> int:
    chosen = {m.id for m in db.get(ids)} if ids else set()
    if session:
        chosen |= {m.id for m in db.recent(session=session, limit=1_000_000)}
    if project:
        chosen |= {m.id for m in db.recent(project=project, limit=1_000_000)}
    return len(chosen)


def _export(args: argparse.Namespace) -> int:
    with _open(args) as db:
        if args.output:
            from toolscript import paths

            import io

            buffer = io.StringIO()
            count = db.export(buffer, project=_project(args))
            paths.write_private(args.output, buffer.getvalue())
        else:
            count = db.export(sys.stdout, project=_project(args))
    logger.info("exported %d memories", count)
    if args.output:
        if args.json:
            print_json({"exported": count, "file": args.output})
        else:
            print(f"exported {count} memories to {args.output}", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    _require_enabled(args)
    if args.from_claude_code:
        if args.file:
            raise UserError("give a file or --from-claude-code, not both", exit_code=2)
        return _import_claude_code(args)
    if args.memory_dir:
        raise UserError("--memory-dir goes with --from-claude-code", exit_code=2)
    if not args.file:
        raise UserError("say what to import: a file from 'memory export' (- reads stdin), or --from-claude-code", exit_code=2)
    try:
        stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read {args.file}: {exc.strerror or exc}", exit_code=1) from exc
    with stream, _open(args) as db:
        count = db.import_(stream)
    if args.json:
        print_json({"imported": count})
    else:
        print(f"imported {count} memories")
    return 0


def _import_claude_code(args: argparse.Namespace) -> int:
    """``memory import --from-claude-code``: mirror the project's Claude Code memory folder into its memories."""
    from toolscript.memory import automemory, project_root

    cwd = _cwd(args)
    folder = os.path.abspath(args.memory_dir) if args.memory_dir else automemory.folder(cwd)
    if not os.path.isdir(folder):
        raise UserError(f"no Claude Code memory for this project at {folder}: Claude Code writes it when its auto memory "
                        "is on; or name the folder with --memory-dir", exit_code=1)
    project = project_root(cwd)
    with _open(args) as db:
        done = automemory.import_folder(db, folder, project)
    for skipped in done.skipped:
        logger.warning("memory import: skipped %s", skipped)
    logger.info("memory import: %s into project %s", folder, project)
    if args.json:
        print_json(dict(done._asdict(), project=project))
    else:
        print(f"{done.added} added, {done.updated} updated, {done.unchanged} unchanged, {done.removed} removed "
              f"from {len(done.files)} file{'' if len(done.files) == 1 else 's'} in {folder}")
    return 0


def _add(args: argparse.Namespace) -> int:
    """``memory add TEXT``: one fact stored on purpose (source "user")."""
    from toolscript.memory import project_root
    from toolscript.memory.tools import remember

    _require_enabled(args)
    text = _content(args.text)
    files = [f.strip() for f in args.files.split(",") if f.strip()]
    with _open(args) as db:
        result = remember(db, project_root(_cwd(args)), text, source="user", session=_session_id(args), files=files)
    if args.json:
        print_json(result)
    elif result["id"] is None:
        raise UserError("nothing stored: the text was empty once <private> parts were removed", exit_code=1)
    else:
        print(result["id"])
        if not result["stored"]:
            print(f"already remembered as memory {result['id']}: nothing added", file=sys.stderr)
        if result["redacted"]:
            print("a secret in it was redacted before it was stored", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:  # pragma: no cover - every action has its own handler
    raise UserError("say what to do: toolscript memory search|list|show|add|inject|capture|forget|export|import|session (see --help)", exit_code=2)

