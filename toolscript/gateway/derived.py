"""What the gateway derives from its catalog for code mode, kept current.

The search index (with its tool vectors when search has its vectors data),
the Python stubs, the TypeScript declarations and the name map the sandbox
runtime uses are built once per catalog version into one immutable
``Artifacts`` object (a new version re-encodes only the tools that changed),
which is swapped in whole: a reader takes it once and never sees half of one
version and half of another.  One worker
thread per ``Derived`` rebuilds after catalog changes (a burst of changes is
one rebuild), so the agent's next ``search`` or ``get-types`` is answered at
once; a request that arrives before the rebuild finishes builds synchronously.
Filtered stubs (``get-types --filter``) are generated on demand: they are a
small subset and cheap.
"""

import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from toolscript import log, search
from toolscript.gateway.catalog import Catalog, Snapshot
from toolscript.stubs.names import python_arg_names, python_names
from toolscript.stubs.python import python_stubs, usage_example
from toolscript.stubs.typescript import typescript_declarations

logger = log.get("gateway.derived")


@dataclass(frozen=True)
class Artifacts:
    """Everything derived from one catalog version.  Never changed once built."""

    version: int
    tools: List[Dict[str, Any]]
    index: search.SearchIndex
    stubs: Dict[str, str]
    attributes: Dict[str, Tuple[str, str]]  # tool id -> (server attr, function attr), whole catalog
    names: Dict[str, Any]


def build_artifacts(snapshot: Snapshot, previous: Optional[Artifacts] = None) -> Artifacts:
    """The artifacts of ``snapshot``; tool vectors the ``previous`` version already computed are reused."""
    tools = [entry.describe() for entry in snapshot.entries()]
    attributes = python_names(tools)
    return Artifacts(
        version=snapshot.version,
        tools=tools,
        index=search.SearchIndex(tools, vector_cache=previous.index.vector_cache if previous is not None else None),
        stubs={"python": python_stubs(tools), "ts": typescript_declarations(tools)},
        attributes=attributes,
        names=name_map(tools, attributes),
    )


class Derived:
    """Search index, stubs and name map for one catalog, rebuilt on change."""

    def __init__(self, catalog: Catalog, unavailable: Optional[Callable[[], Dict[str, str]]] = None) -> None:
        # ``unavailable`` gives {server name: reason} for configured servers that are not ready.
        self.catalog = catalog
        self._unavailable = unavailable or dict
        self._artifacts: Optional[Artifacts] = None
        self._building = threading.Lock()  # one build at a time
        self._wake = threading.Condition()
        self._pending = False
        self._closed = False
        self._worker: Optional[threading.Thread] = None
        catalog.add_listener(self._changed)

    def _changed(self) -> None:
        with self._wake:
            self._pending = True
            if self._worker is None and not self._closed:
                self._worker = threading.Thread(target=self._work, name="derived-rebuild", daemon=True)
                self._worker.start()
            self._wake.notify()

    def _work(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._pending or self._closed)
                if self._closed:
                    return
                self._pending = False
            try:
                self.current()
            except Exception:
                logger.exception("rebuilding the derived artifacts failed")

    def close(self) -> None:
        """End the worker thread."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()

    def current(self) -> Artifacts:
        """The artifacts of the catalog's current version (built now if they are not yet)."""
        artifacts = self._artifacts
        snapshot = self.catalog.snapshot()
        if artifacts is not None and artifacts.version == snapshot.version:
            return artifacts
        with self._building:
            artifacts = self._artifacts
            snapshot = self.catalog.snapshot()
            if artifacts is None or artifacts.version != snapshot.version:
                artifacts = build_artifacts(snapshot, artifacts)
                self._artifacts = artifacts
                logger.debug("derived artifacts rebuilt for catalog version %d (%d tools)", artifacts.version, len(artifacts.tools))
        return artifacts

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
            code = artifacts.stubs[lang]
        elif lang == "ts":
            code = typescript_declarations(tools, full=full, names=names)
        else:
            code = python_stubs(tools, full=full, names=names)
        usage = usage_example(tools, names=names) if tools and lang == "python" else ""
        return {"lang": lang, "code": code, "usage": usage, "tools": [t["id"] for t in tools]}

    def names(self) -> Dict[str, Any]:
        """The runtime's name map, plus ``unavailable``: {server attr: reason} for servers not ready."""
        artifacts = self.current()
        return dict(artifacts.names, unavailable=unavailable_attrs(artifacts, self._unavailable()))


def name_map(tools: List[Dict[str, Any]], attributes: Dict[str, Any]) -> Dict[str, Any]:
    """The sandbox runtime's map: server attr -> function attr -> tool id and argument renames."""
    servers: Dict[str, Dict[str, Any]] = {}
    for tool in tools:
        server_attr, function_attr = attributes[tool["id"]]
        servers.setdefault(server_attr, {})[function_attr] = {"id": tool["id"], "args": python_arg_names(tool)}
    return {"servers": servers}


def unavailable_attrs(artifacts: Artifacts, reasons: Dict[str, str]) -> Dict[str, str]:
    """``reasons`` keyed by the attribute ``tools.<attr>`` the runtime would use for each server."""
    if not reasons:
        return {}
    known = {tool["server"]: artifacts.attributes[tool["id"]][0] for tool in artifacts.tools}
    # A server with no tools listed gets the attribute it would have if it had one.
    placeholders = [{"id": f"{name}__", "server": name, "name": ""} for name in reasons if name not in known]
    guessed = python_names(artifacts.tools + placeholders) if placeholders else {}
    taken = set(known.values())
    result: Dict[str, str] = {}
    for name, reason in reasons.items():
        attr = known.get(name)
        if attr is None:
            attr = guessed.get(f"{name}__", (name, ""))[0]
            if attr in taken:
                continue
        result[attr] = reason
    return result
