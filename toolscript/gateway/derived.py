"""What the gateway derives from its catalog for code mode, kept current.

Search and the sandbox runtime's names are made of one part per server
(``ServerPart``: the server's search index part with its tool vectors, and
its functions' names), built when the server's tool list arrives or changes,
on the thread that changed the catalog (a server's own connection thread)
and before the server counts as ready; a part is built again only when its
server's tools change.  The parts are then put together into one immutable
``Artifacts`` object for the catalog's version -- cheap: what depends on the
whole catalog is worked out as queries ask for it (``toolscript.search.parts``)
-- which is swapped in whole.

A request reads the newest complete ``Artifacts``: while a changed server's
part is being built it gets the previous version (never half of one), and
only before the very first version is there does it wait for it (the first
request or the first change builds it).  So no search waits for an index
to be built; whoever waited for the servers to settle (discovery answers
do) finds them searchable.  Tool lists the gateway's own thread adopts
while it starts the servers (cached ones) are derived by the worker
instead (``deferred``), so they never hold up the start; a request that
comes before the worker has derived them waits for it, as it would have
waited for the server to settle.

The whole catalog's stubs (``get-types`` without a filter) name their types
across all servers, so they are made for the whole catalog: by one worker
thread once a burst of changes has settled, or by the first request that
wants them sooner.  Filtered stubs (``get-types --filter``) are generated on
demand: they are a small subset and cheap.
"""

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from toolscript import log
from toolscript.gateway.catalog import Catalog, ServerTools
from toolscript.search.index import SearchIndex
from toolscript.search.parts import IndexPart
from toolscript.stubs.names import python_arg_names, python_names, server_attributes
from toolscript.stubs.python import python_stubs, usage_example
from toolscript.stubs.typescript import typescript_declarations

logger = log.get("gateway.derived")

# The whole catalog's stubs wait for the catalog to stay unchanged this long: servers
# coming up one after another would otherwise have them made again for each one.
STUBS_QUIET_SECONDS = 0.5
LANGUAGES = ("python", "ts")


@dataclass(frozen=True)
class ServerPart:
    """What one server's tools give search and the runtime, built once per tool list."""

    server: str
    fingerprint: str  # the catalog's fingerprint of the tools it was built from
    tools: List[Dict[str, Any]]  # each entry as the JSON API describes it
    index: IndexPart
    functions: Dict[str, Dict[str, Any]]  # function attr -> {"id", "args"}: the runtime's map of this server
    attrs: List[str]  # each tool's function attribute, in order


def build_part(group: ServerTools, previous: Optional[ServerPart] = None) -> ServerPart:
    """The part of ``group``; the tool vectors ``previous`` (the server's earlier part) computed are reused."""
    tools = [entry.describe() for entry in group.entries]
    index = IndexPart(tools, vector_cache=previous.index.vector_cache if previous is not None else None)
    # A server's function names depend on its own tools only (stubs.names.python_names).
    local = python_names(tools)
    attrs = [local[tool["id"]][1] for tool in tools]
    functions = {attr: {"id": tool["id"], "args": python_arg_names(tool)} for tool, attr in zip(tools, attrs)}
    return ServerPart(group.server, group.fingerprint, tools, index, functions, attrs)


@dataclass(frozen=True)
class Artifacts:
    """Everything derived from one catalog version but the whole catalog's stubs.  Never changed once built."""

    version: int
    tools: List[Dict[str, Any]]
    index: SearchIndex
    attributes: Dict[str, Tuple[str, str]]  # tool id -> (server attr, function attr), whole catalog
    names: Dict[str, Any]
    servers: Dict[str, str]  # server name -> its attr, for the servers with tools
    parts: Tuple[ServerPart, ...]


def assemble(version: int, parts: List[ServerPart]) -> Artifacts:
    """The artifacts of a catalog version from its servers' parts, in catalog order."""
    servers = server_attributes([part.server for part in parts])
    attributes: Dict[str, Tuple[str, str]] = {}
    runtime: Dict[str, Dict[str, Any]] = {}
    for part in parts:
        server_attr = servers[part.server]
        for tool, attr in zip(part.tools, part.attrs):
            attributes[tool["id"]] = (server_attr, attr)
        runtime[server_attr] = part.functions
    return Artifacts(
        version=version,
        tools=[tool for part in parts for tool in part.tools],
        index=SearchIndex.from_parts([part.index for part in parts]),
        attributes=attributes,
        names={"servers": runtime},
        servers=servers,
        parts=tuple(parts),
    )


class Derived:
    """Search index, stubs and name map for one catalog, rebuilt on change."""

    def __init__(self, catalog: Catalog, unavailable: Optional[Callable[[], Dict[str, str]]] = None) -> None:
        # ``unavailable`` gives {server name: reason} for configured servers that are not ready.
        self.catalog = catalog
        self._unavailable = unavailable or dict
        self._artifacts: Optional[Artifacts] = None
        self._building = threading.Lock()  # one build at a time
        self._stubs: Dict[str, Tuple[int, str]] = {}  # lang -> (catalog version, the whole catalog's stubs)
        self._stubs_building = threading.Lock()
        self._wake = threading.Condition()
        self._deferring = threading.local()  # .depth: this thread's deferred() blocks under way
        self._deferring_blocks = 0  # deferred() blocks under way on any thread: the worker waits for them to end
        self._build_wanted = False  # a change the worker is to derive (made in a deferred() block)
        self._owed = 0  # the newest catalog version a deferred() block left to the worker: requests wait for it
        self._stubs_wanted = False  # the catalog changed since the worker last made the whole catalog's stubs
        self._closed = False
        self.parts_built = 0  # server parts built so far (each server's, once per tool list)
        self._worker: Optional[threading.Thread] = None
        catalog.add_listener(self._changed)

    def _changed(self) -> None:
        if getattr(self._deferring, "depth", 0):
            with self._wake:
                self._build_wanted = True
                self._owed = max(self._owed, self.catalog.snapshot().version)
                self._start_worker()
            return
        # On the thread that changed the catalog: the changed servers' parts now, off any request.
        try:
            self._update()
        finally:
            with self._wake:
                self._stubs_wanted = True
                self._start_worker()
                self._wake.notify()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Changes this thread makes inside the block are derived by the worker once it ends, not by this thread.

        For the gateway's own thread while it starts the servers: a tool list
        it adopts (a cached one) must not hold up the start.  Other threads'
        changes (servers connecting meanwhile) are derived as always, and a
        request wants the versions left to the worker (``current``).
        """
        self._deferring.depth = getattr(self._deferring, "depth", 0) + 1
        with self._wake:
            self._deferring_blocks += 1
        try:
            yield
        finally:
            self._deferring.depth -= 1
            with self._wake:
                self._deferring_blocks -= 1
                self._wake.notify()

    def _start_worker(self) -> None:
        # Under self._wake.
        if self._worker is None and not self._closed:
            self._worker = threading.Thread(target=self._work, name="derived-rebuild", daemon=True)
            self._worker.start()

    def _can_build(self) -> bool:
        # Once the start is over: one build for all the lists it adopted.
        return self._build_wanted and not self._deferring_blocks

    def _work(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._closed or self._can_build() or self._stubs_wanted)
                if self._closed:
                    return
                build = self._can_build()
                if build:
                    self._build_wanted = False
                else:
                    # Stubs once the catalog has been still for a moment: a burst of changes is one build of them.
                    self._stubs_wanted = False
                    if self._wake.wait_for(lambda: self._closed or self._can_build() or self._stubs_wanted, STUBS_QUIET_SECONDS):
                        continue  # another change (or the end) came first
            try:
                if build:
                    self._update()
                    with self._wake:
                        self._stubs_wanted = True
                else:
                    artifacts = self.current()
                    for lang in LANGUAGES:
                        self._whole_stubs(artifacts, lang)
            except Exception:
                logger.exception("deriving the catalog's search index and stubs failed")

    def close(self) -> None:
        """End the worker thread."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()

    def _update(self) -> Artifacts:
        """Make the catalog's current version the published one: build the parts it lacks, put them together."""
        with self._building:
            snapshot = self.catalog.snapshot()
            artifacts = self._artifacts
            if artifacts is not None and artifacts.version >= snapshot.version:
                return artifacts  # another thread published this version (or a newer one) meanwhile
            known = {(part.server, part.fingerprint): part for part in artifacts.parts} if artifacts is not None else {}
            latest = {part.server: part for part in artifacts.parts} if artifacts is not None else {}
            parts = []
            for group in snapshot.servers:
                part = known.get((group.server, group.fingerprint))
                if part is None:
                    part = build_part(group, latest.get(group.server))
                    self.parts_built += 1
                parts.append(part)
            artifacts = assemble(snapshot.version, parts)
            self._artifacts = artifacts
            logger.debug("derived artifacts for catalog version %d (%d tools)", artifacts.version, len(artifacts.tools))
            return artifacts

    def current(self) -> Artifacts:
        """The newest complete artifacts (those of the catalog's previous version while a change is being built);
        the first ones, and those of tool lists adopted in a ``deferred`` block, are waited for."""
        artifacts = self._artifacts
        if artifacts is None or artifacts.version < self._owed:
            return self._update()
        return artifacts

    def _whole_stubs(self, artifacts: Artifacts, lang: str) -> str:
        """The stubs of every tool of ``artifacts``, made once per version (a request that wants them first waits)."""
        known = self._stubs.get(lang)
        if known is not None and known[0] == artifacts.version:
            return known[1]
        with self._stubs_building:
            known = self._stubs.get(lang)
            if known is not None and known[0] == artifacts.version:
                return known[1]
            code = typescript_declarations(artifacts.tools) if lang == "ts" else python_stubs(artifacts.tools)
            if known is None or known[0] < artifacts.version:
                self._stubs[lang] = (artifacts.version, code)
            return code

    # -- what the endpoints serve ------------------------------------------------

    def search(self, query: str, *, limit: int, threshold: float, servers: Optional[List[str]], explain: bool = False,
               semantic: bool = True) -> List[Dict[str, Any]]:
        return self.current().index.search(query, limit=limit, threshold=threshold, servers=servers, explain=explain,
                                           semantic=semantic)

    def explain_terms(self, query: str, semantic: bool = True) -> List[Dict[str, Any]]:
        return self.current().index.explain_terms(query, semantic=semantic)

    def types(self, *, lang: str, selection: Optional[List[str]] = None, full: bool = False) -> Dict[str, Any]:
        """Stubs for every tool (pre-generated) or for ``selection`` (servers or tool ids)."""
        artifacts = self.current()
        tools = artifacts.tools
        if selection:
            # Keep the caller's order (search results come best first), then
            # whole servers in catalog order.
            by_id = {t["id"]: t for t in tools}
            picked = [by_id[s] for s in selection if s in by_id]
            servers = set(selection)
            picked += [t for t in tools if t["server"] in servers and t not in picked]
            tools = picked
        # A subset is named with the whole catalog's map, as the runtime is:
        # alone, "foo-bar" would be foo_bar although the runtime calls it foo_bar_2.
        names = artifacts.attributes
        if not selection and not full:
            code = self._whole_stubs(artifacts, lang)
        elif lang == "ts":
            code = typescript_declarations(tools, full=full, names=names)
        else:
            code = python_stubs(tools, full=full, names=names)
        # The example calls the first tool, named by the whole catalog's map: it needs no other tool.
        usage = usage_example(tools[:1], names=names) if tools and lang == "python" else ""
        return {"lang": lang, "code": code, "usage": usage, "tools": [t["id"] for t in tools]}

    def names(self) -> Dict[str, Any]:
        """The runtime's name map, plus ``unavailable``: {server attr: reason} for servers not ready."""
        artifacts = self.current()
        return dict(artifacts.names, unavailable=unavailable_attrs(artifacts, self._unavailable()))


def unavailable_attrs(artifacts: Artifacts, reasons: Dict[str, str]) -> Dict[str, str]:
    """``reasons`` keyed by the attribute ``tools.<attr>`` the runtime would use for each server."""
    if not reasons:
        return {}
    known = artifacts.servers
    # A server with no tools listed gets the attribute it would have if it had one.
    placeholders = [name for name in reasons if name not in known]
    guessed = server_attributes(list(known) + placeholders) if placeholders else {}
    taken = set(known.values())
    result: Dict[str, str] = {}
    for name, reason in reasons.items():
        attr = known.get(name)
        if attr is None:
            attr = guessed.get(name, name)
            if attr in taken:
                continue
        result[attr] = reason
    return result
