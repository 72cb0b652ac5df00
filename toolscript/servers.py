"""Which of a server's tools toolscript shows, and why the others are hidden.

One rule for every place that counts tools (``servers check``, ``doctor``,
``gateway status``, ``list-servers``): a tool is hidden when the server's
``includeTools``/``excludeTools`` leave it out, or when it can only be called
as a task (``execution.taskSupport: "required"``), which toolscript does not
do.  Reporting the hidden ones with their reason keeps the counts explainable:
``12 tools (1 hidden: needs tasks)``.
"""

from typing import Any, Dict, List, Tuple

from toolscript.config import ServerConfig

HIDDEN_BY_CONFIG = "includeTools/excludeTools"
HIDDEN_NEEDS_TASKS = "needs tasks"


def visible_tools(server: ServerConfig, tools: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    """The tools toolscript offers, and how many are hidden for each reason."""
    shown: List[Dict[str, Any]] = []
    hidden: Dict[str, int] = {}
    for tool in tools:
        reason = hidden_reason(server, tool)
        if reason is None:
            shown.append(tool)
        else:
            hidden[reason] = hidden.get(reason, 0) + 1
    return shown, hidden


def hidden_reason(server: ServerConfig, tool: Dict[str, Any]) -> Any:
    """Why ``tool`` is hidden, or None when it is shown."""
    if not server.allows_tool(str(tool.get("name", ""))):
        return HIDDEN_BY_CONFIG
    execution = tool.get("execution")
    if isinstance(execution, dict) and execution.get("taskSupport") == "required":
        return HIDDEN_NEEDS_TASKS
    return None


def describe_count(shown: int, hidden: Dict[str, int]) -> str:
    """``"12 tools"`` or ``"12 tools (1 hidden: needs tasks)"``."""
    text = f"{shown} tool" + ("" if shown == 1 else "s")
    total = sum(hidden.values())
    if total:
        reasons = ", ".join(f"{count} {reason}" if len(hidden) > 1 else reason for reason, count in sorted(hidden.items()))
        text += f" ({total} hidden: {reasons})"
    return text
