"""Putting imported servers into a toolscript config file: what changes, what conflicts, and the write.

``toolscript config import`` reads another client's servers
(``toolscript.config.importers``) and hands them here.  A server whose name
the file already has with the same entry is "unchanged"; with a different
entry it is a conflict, replaced only with ``--force`` (without it nothing at
all is written, so a file is never left half-imported).  Every other key of
the file stays as it was.  The file is written atomically (a temporary file
and a rename) after its previous content is copied to ``<file>.bak`` beside
it; a symbolic link is followed, so a dotfile kept elsewhere is updated where
it lives.  A new file is created 0600: Claude Desktop and Codex configs often
hold literal secrets, and they are copied as they are.
"""

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from toolscript import paths
from toolscript.config.importers import Imported
from toolscript.errors import UserError

ADDED, REPLACED, UNCHANGED, CONFLICT, SKIPPED = "added", "replaced", "unchanged", "conflict", "skipped"


@dataclass
class Plan:
    """What an import would do to one config file."""

    target: str  # the file, as the user knows it (absolute)
    real: str  # where its bytes live (the target of a link)
    old: Optional[bytes]  # its content before, None when it does not exist
    document: Dict[str, Any]  # the whole file after the import
    servers: List[Imported]  # each with its status

    @property
    def conflicts(self) -> List[Imported]:
        return [s for s in self.servers if s.status == CONFLICT]

    @property
    def changes(self) -> List[Imported]:
        return [s for s in self.servers if s.status in (ADDED, REPLACED)]

    def content(self) -> bytes:
        return render(self.document)


def render(document: Dict[str, Any]) -> bytes:
    """A config document as toolscript writes it: two-space JSON, non-ASCII kept, a final newline."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def plan(servers: List[Imported], target: str, force: bool) -> Plan:
    """Each server's status against ``target``'s current content, and the document to write.

    ``target`` must be a toolscript config file (strict JSON, an object); one
    that does not parse raises ``UserError``: nothing is imported into a file
    whose meaning is unclear.
    """
    real = os.path.realpath(target)
    old = _read(real)
    document: Dict[str, Any] = {}
    if old is not None and old.strip():
        try:
            parsed = json.loads(old.decode("utf-8-sig"))
        except (ValueError, RecursionError) as exc:
            where = f":{exc.lineno}:{exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            raise UserError(f"{target}{where}: not valid JSON, so nothing was imported into it; fix it "
                            "('toolscript config validate' shows where) and import again") from None
        if not isinstance(parsed, dict):
            raise UserError(f"{target}: the top level is not a JSON object, so nothing was imported into it")
        document = parsed
    existing = document.get("mcpServers", {})
    if not isinstance(existing, dict):
        raise UserError(f"{target}: mcpServers is not a JSON object, so nothing was imported into it")
    merged = dict(existing)
    for server in servers:
        if server.entry is None:
            server.status = SKIPPED
        elif server.name not in existing:
            server.status = ADDED
            merged[server.name] = server.entry
        elif existing[server.name] == server.entry:
            server.status = UNCHANGED
        elif force:
            server.status = REPLACED
            merged[server.name] = server.entry  # keeps its place in the file
        else:
            server.status = CONFLICT
    if "mcpServers" in document:
        after = {key: (merged if key == "mcpServers" else value) for key, value in document.items()}
    else:
        after = {"mcpServers": merged, **document}
    return Plan(target=target, real=real, old=old, document=after, servers=list(servers))


def write(planned: Plan) -> Optional[str]:
    """Write the planned document (atomically, after a ``.bak`` copy of the old content); the backup's path, or None."""
    backup = None
    directory = os.path.dirname(planned.real)
    try:
        os.makedirs(directory, exist_ok=True)
        mode = 0o600
        if planned.old is not None:
            mode = os.stat(planned.real).st_mode & 0o777
            backup = planned.real + ".bak"
            paths.write_private(backup, planned.old, mode=mode)
        paths.write_private(planned.real, planned.content(), mode=mode)
    except OSError as exc:
        raise UserError(f"cannot write {planned.target}: {exc.strerror or exc}; nothing was imported") from exc
    return backup


def approve_written(planned: Plan, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Approve a project file the import wrote; None when approved, else why not.

    The import is the user's own act, so what it wrote counts without a
    separate ``toolscript trust``.  But content the file held before counts
    only if the user had approved it: a file that came with the repository and
    was never approved is not approved now either.
    """
    from toolscript.config import trust

    if planned.old is not None and trust.status(planned.real, planned.old, environ) != trust.TRUSTED:
        return (f"{planned.target} held content you had not approved before this import, so it is still not trusted: "
                "review all of it with 'toolscript trust'")
    trust.approve(planned.real, planned.content(), environ)
    return None


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from exc
