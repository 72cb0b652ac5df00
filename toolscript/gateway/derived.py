"""What the gateway derives from its catalog for code mode, kept current.

The search index, the Python stubs, the TypeScript declarations and the
name map the sandbox runtime uses are built once per catalog version and
served from memory.  A catalog change schedules a rebuild in the background,
so the agent's next ``search`` or ``get-types`` is answered at once; a
request that arrives before the rebuild finishes builds synchronously.
Filtered stubs (``get-types --filter``) are generated on demand: they are a
small subset and cheap.
"""

import threading
from typing import Any, Dict, List, Optional

from toolscript import log, search, typegen

logger = log.get("gateway.derived")


class Derived:
    """Search index, stubs and name map for one catalog, rebuilt on change."""

    def __init__(self, catalog) -> None:
        self.catalog = catalog
        self._lock = threading.Lock()
        self._version = -1
        self._tools: List[Dict[str, Any]] = []
        self._index: Optional[search.SearchIndex] = None
        self._stubs: Dict[str, str] = {}
        self._names: Dict[str, Any] = {}
        self._attributes: Dict[str, Any] = {}  # tool id -> (server attr, function attr), whole catalog
        catalog.add_listener(self._changed)

    def _changed(self) -> None:
        threading.Thread(target=self.current, name="derived-rebuild", daemon=True).start()

    def current(self) -> "Derived":
        """Bring everything up to the catalog's version (no-op when current)."""
        with self._lock:
            version = self.catalog.version
            if version == self._version:
                return self
            tools = [entry.describe() for entry in self.catalog.entries()]
            self._tools = tools
            self._index = search.SearchIndex(tools)
            self._stubs = {
                "python": typegen.python_stubs(tools),
                "ts": typegen.typescript_declarations(tools),
            }
            self._attributes = typegen.python_names(tools)
            self._names = name_map(tools, self._attributes)
            self._version = version
            logger.debug("derived artifacts rebuilt for catalog version %d (%d tools)", version, len(tools))
        return self

    # -- what the endpoints serve ------------------------------------------------

    def search(self, query: str, *, limit: int, threshold: float, servers: Optional[List[str]]) -> List[Dict[str, Any]]:
        self.current()
        return self._index.search(query, limit=limit, threshold=threshold, servers=servers)

    def types(self, *, lang: str, selection: Optional[List[str]] = None, full: bool = False) -> Dict[str, Any]:
        """Stubs for every tool (pre-generated) or for ``selection`` (servers or tool ids)."""
        self.current()
        tools = self._tools
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
        names = self._attributes
        if not selection and not full:
            code = self._stubs[lang]
        elif lang == "ts":
            code = typegen.typescript_declarations(tools, full=full, names=names)
        else:
            code = typegen.python_stubs(tools, full=full, names=names)
        usage = typegen.usage_example(tools, names=names) if tools and lang == "python" else ""
        return {"lang": lang, "code": code, "usage": usage, "tools": [t["id"] for t in tools]}

    def names(self) -> Dict[str, Any]:
        self.current()
        return self._names


def name_map(tools: List[Dict[str, Any]], attributes: Dict[str, Any]) -> Dict[str, Any]:
    """The sandbox runtime's map: server attr -> function attr -> tool id and argument renames."""
    servers: Dict[str, Dict[str, Any]] = {}
    for tool in tools:
        server_attr, function_attr = attributes[tool["id"]]
        servers.setdefault(server_attr, {})[function_attr] = {"id": tool["id"], "args": typegen.python_arg_names(tool)}
    return {"servers": servers}
