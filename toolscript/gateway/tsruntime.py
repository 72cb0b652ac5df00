"""The TypeScript runtime module the gateway serves at ``/runtime/tools.ts``.

``exec --lang ts`` scripts ``import { tools, ToolError } from "toolscript"``;
Deno's import map points that name at ``<gateway>/runtime/tools.ts``, so the
module comes from the gateway, never from disk.  It is ``runtime.ts``
(package data beside this file) with the gateway's name map written into its
``NAMES`` line.  The module finds the gateway from its own ``import.meta.url``,
so the script needs no environment variable (and no ``--allow-env``).
"""

import json
import pkgutil
from typing import Any, Dict

from toolscript.errors import UserError

# The one line of runtime.ts that carries the name map; typescript_runtime replaces it.
NAMES_LINE = 'const NAMES: any = JSON.parse("{}");'


def typescript_runtime(names: Dict[str, Any]) -> str:
    """``runtime.ts`` with ``names`` in its ``NAMES`` line.

    ``names`` is what ``/runtime/names`` answers: ``{"servers": {server_attr:
    {fn_attr: {"id": "server__tool", "args": {py_name: json_name}}}},
    "unavailable": {server_attr: reason}}``.  The map reaches the module as one
    JSON string literal (ASCII only, so U+2028 cannot end a line) parsed at
    run time, so no name can break or change the code.
    """
    source = pkgutil.get_data("toolscript.gateway", "runtime.ts")
    if source is None:
        raise UserError("toolscript is incomplete: toolscript/gateway/runtime.ts is missing; reinstall it")
    data = {key: names.get(key) if isinstance(names, dict) and isinstance(names.get(key), dict) else {} for key in ("servers", "unavailable")}
    literal = json.dumps(json.dumps(data, ensure_ascii=False, separators=(",", ":")), ensure_ascii=True)
    return source.decode("utf-8").replace(NAMES_LINE, f"const NAMES: any = JSON.parse({literal});", 1)
