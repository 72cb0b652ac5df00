"""The gateway's tool catalog: every tool of every server under one id space.

A tool's gateway-wide id is ``server__tool`` (server names cannot contain
``__``, so the first ``__`` splits an id unambiguously).  Built-in tools
appear as server ``builtin``.  The catalog is rebuilt whenever an upstream
connects, fails or reports ``tools/list_changed``; listeners (the MCP
endpoint, and ``derived``'s search index and stubs) hear about each real
change, on the thread that rebuilt it.  Each version also lists its tools
server by server with a fingerprint per server, so what is derived from
one server's tools is derived again only when they change.  A server that fails keeps its last known tools listed, so a call
fails fast with the reason instead of the tool vanishing and reappearing.
"""

import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

from toolscript import log

if TYPE_CHECKING:
    from toolscript.tools.contract import ToolSpec

logger = log.get("gateway.catalog")

SEPARATOR = "__"
BUILTIN_SERVER = "builtin"


def tool_id(server: str, name: str) -> str:
    return f"{server}{SEPARATOR}{name}"


def split_id(identifier: str) -> Tuple[str, str]:
    """``("server", "tool")`` from ``"server__tool"``; the server is ``""`` if there is no separator."""
    server, sep, name = identifier.partition(SEPARATOR)
    return (server, name) if sep else ("", identifier)


def builtin_tools(setting: Union[bool, List[str]]) -> Dict[str, "ToolSpec"]:
    """The built-in tools (server ``builtin``) the ``builtinTools`` setting enables: the general ones, then memory's."""
    from toolscript.memory.tools import memory_specs
    from toolscript.tools.builtin import builtin_specs, select_builtins

    specs = builtin_specs()
    specs.update((spec.name, spec) for spec in memory_specs())
    return select_builtins(setting, specs)


@dataclass
class Entry:
    id: str
    server: str
    name: str
    tool: Dict[str, Any]  # the MCP Tool object as the server gave it

    def describe(self) -> Dict[str, Any]:
        """What the JSON API and the CLI show for a tool."""
        info: Dict[str, Any] = {"id": self.id, "server": self.server, "name": self.name}
        for key in ("title", "description", "inputSchema", "outputSchema", "annotations"):
            if key in self.tool:
                info[key] = self.tool[key]
        info.setdefault("description", "")
        return info

    def as_mcp_tool(self) -> Dict[str, Any]:
        """The tool as the gateway's MCP endpoint lists it: renamed to its id, otherwise verbatim."""
        tool = dict(self.tool)
        tool["name"] = self.id
        return tool


@dataclass(frozen=True)
class ServerTools:
    """One server's entries in a catalog version, and a fingerprint of them (their JSON): equal when the tools are."""

    server: str
    entries: Tuple[Entry, ...]
    fingerprint: str


def server_tools(server: str, entries: List[Entry]) -> ServerTools:
    fingerprint = json.dumps([[e.id, e.tool] for e in entries], sort_keys=True, default=str)
    return ServerTools(server, tuple(entries), fingerprint)


@dataclass(frozen=True)
class Snapshot:
    """One version of the catalog.  Never changed once published: read it as a whole."""

    version: int
    by_id: Dict[str, Entry]
    fingerprint: Tuple[Tuple[str, str], ...]  # (server, its fingerprint) per server with tools
    servers: Tuple[ServerTools, ...] = ()  # every server with tools, in catalog order

    def entries(self, servers: Optional[List[str]] = None) -> List[Entry]:
        entries = list(self.by_id.values())
        return entries if servers is None else [e for e in entries if e.server in servers]

    def get(self, identifier: str) -> Optional[Entry]:
        return self.by_id.get(identifier)


class Catalog:
    """The current snapshot of all tools, rebuilt from its sources on demand.

    Rebuilds are serialised (read the sources, then publish, under one lock),
    so a rebuild that read the sources earlier can never publish after one
    that read them later.  Readers take ``snapshot()`` once and use it
    throughout, so a name map and the entries it points at agree.
    """

    def __init__(self, sources: Callable[[], List[Tuple[str, List[Dict[str, Any]]]]]) -> None:
        # ``sources`` returns (server name, MCP tool dicts) pairs, in display order.  A
        # server's list is read as it was the last time while it is the same list
        # object of the same length: give a new list when a server's tools change.
        self._sources = sources
        self._snapshot = Snapshot(0, {}, ())
        self._read: Dict[str, Tuple[List[Dict[str, Any]], int, ServerTools]] = {}
        self._listeners: List[Callable[[], None]] = []
        self._rebuilding = threading.Lock()  # one rebuild at a time
        self._listeners_lock = threading.Lock()
        self.rebuild()

    def snapshot(self) -> Snapshot:
        """The current version, whole (a plain reference read: atomic)."""
        return self._snapshot

    def rebuild(self) -> bool:
        """Re-read the sources; tell listeners and return True if anything changed."""
        with self._rebuilding:
            by_id: Dict[str, Entry] = {}
            groups: Dict[str, ServerTools] = {}
            read: Dict[str, Tuple[List[Dict[str, Any]], int, ServerTools]] = {}
            for server, tools in self._sources():
                known = self._read.get(server)
                if known is not None and known[0] is tools and known[1] == len(tools):
                    group = known[2]  # the list it read last time: not read again (a big one takes a while)
                else:
                    own: Dict[str, Entry] = {}
                    for tool in tools:
                        entry = Entry(tool_id(server, tool["name"]), server, tool["name"], tool)
                        own.setdefault(entry.id, entry)
                    group = server_tools(server, list(own.values()))
                read[server] = (tools, len(tools), group)
                kept = [e for e in group.entries if by_id.setdefault(e.id, e) is e]
                if server in groups or len(kept) < len(group.entries):
                    # A name listed twice, or ids another server took first: the entries the catalog keeps.
                    group = server_tools(server, list(groups[server].entries if server in groups else ()) + kept)
                if group.entries:
                    groups[server] = group
            self._read = read
            fingerprint = tuple((group.server, group.fingerprint) for group in groups.values())
            if fingerprint == self._snapshot.fingerprint:
                return False
            snapshot = Snapshot(self._snapshot.version + 1, by_id, fingerprint, tuple(groups.values()))
            self._snapshot = snapshot
        logger.debug("catalog version %d: %d tools", snapshot.version, len(by_id))
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:
                logger.exception("a catalog listener failed")
        return True

    def entries(self, servers: Optional[List[str]] = None) -> List[Entry]:
        return self._snapshot.entries(servers)

    def get(self, identifier: str) -> Optional[Entry]:
        return self._snapshot.get(identifier)

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        with self._listeners_lock:
            self._listeners.append(callback)

        def remove() -> None:
            with self._listeners_lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)

        return remove
