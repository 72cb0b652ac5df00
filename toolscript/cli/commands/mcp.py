"""``toolscript mcp``: code mode for any MCP client, as an MCP server on stdin/stdout."""

import argparse
import json
import os
import secrets
import sys
import threading
from typing import Any, Optional

from toolscript import __version__, log, paths
from toolscript.config import keys as configkeys
from toolscript.errors import UserError

logger = log.get("mcp")

DESCRIPTION = """\
Serve toolscript's code mode to any MCP client (Claude Desktop, Cursor, Codex,
Claude Code without the plugin) on stdin/stdout, as three tools:
  search_tools   find the tools a task needs among every configured server's
  get_types      typed Python stubs of the few that fit
  run_script     run one Python script calling them, in the sandbox of 'exec'
The tools ask Claude Code to keep them loaded while it defers the others.

Add one line to the client's MCP config:
  {"mcpServers": {"toolscript": {"command": "toolscript", "args": ["mcp"]}}}

The tools are served by the session's gateway: --gateway-url, else
$TOOLSCRIPT_GATEWAY_URL when it answers, else the gateway of --session or
$CLAUDE_CODE_SESSION_ID (started if none runs), else a gateway of its own.
A gateway it started stops when the client closes the connection.  Its file
built-ins read --workspace (default: the current directory; started in /, as
desktop clients do, an empty one).  Nothing but MCP messages is written to
stdout; diagnostics go to stderr.

examples:
  toolscript mcp
  toolscript mcp --session my-session --workspace ~/src/project
  claude --mcp-config '{"mcpServers":{"toolscript":{"command":"toolscript","args":["mcp"]}}}'
"""

GATEWAY_WAIT_SECONDS = 30.0  # how long a tool call waits for the gateway this process is starting
# How long the gateway we started gets to exit once the client has gone, before we exit ourselves; it
# finishes on its own after that (clients signal a server they close and do not wait long for it).
STOP_WAIT_SECONDS = 2.0
REQUIRE_ISOLATION_KEY = "requireIsolation"


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", metavar="DIR",
                        help="the directory a gateway this starts lets file built-ins read (default: the current one, unless that is /)")
    parser.set_defaults(handler=run)


class GatewayHandle:
    """The gateway the tools use: found or started in the background, stopped at the end if we started it.

    Starting in the background lets ``initialize`` and ``tools/list`` (which
    need no gateway) answer at once; the first tool call waits for it.
    """

    def __init__(self, *, url: Optional[str], probe: bool, session: Optional[str], workspace: str,
                 config_paths: Optional[list]) -> None:
        self.url = url  # a gateway named by the caller: used as it is
        self.probe = probe  # the URL came from the environment: fall back to a session's gateway when it does not answer
        self.session = session
        self.workspace = workspace
        self.config_paths = config_paths
        self.started = False
        self.error: Optional[str] = None
        self._client: Any = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._connect, name="mcp-gateway", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _connect(self) -> None:
        from toolscript.gateway import launch
        from toolscript.gateway.client import GatewayClient, redact

        try:
            if self.url and self.probe and not _answers(self.url):
                logger.info("mcp: $TOOLSCRIPT_GATEWAY_URL does not answer; using a gateway of the session instead")
                self.url = None
            if not self.url:
                info, reused = launch.start_or_reuse(
                    self.session, workspace=self.workspace, cwd=os.getcwd(), config_paths=self.config_paths, exit_with=os.getpid(),
                )
                self.url, self.started = info["url"], not reused
                logger.info("mcp: %s gateway pid %s", "reusing" if reused else "started", info["pid"])
            self._client = GatewayClient(self.url, timeout=60.0)
            logger.info("mcp: gateway %s", redact(self.url))
        except UserError as exc:
            self.error = str(exc)
            logger.error("mcp: no gateway: %s", exc)
        finally:
            self._ready.set()

    def client(self) -> Any:
        """The gateway's client, once it is up; ``UserError`` saying why there is none."""
        if not self._ready.wait(GATEWAY_WAIT_SECONDS):
            raise UserError(f"the gateway is still starting after {GATEWAY_WAIT_SECONDS:g}s; try again in a moment")
        if self.error is not None:
            raise UserError(f"no gateway: {self.error}")
        return self._client

    def close(self) -> None:
        """Stop the gateway if this process started it."""
        from toolscript.gateway import launch

        self._ready.wait(GATEWAY_WAIT_SECONDS)
        if self.started and self.url:
            try:
                pid = launch.stop(self.session, self.url, wait=STOP_WAIT_SECONDS, force=False)
                logger.info("mcp: stopped gateway pid %s", pid)
            except UserError as exc:
                logger.warning("mcp: could not stop the gateway: %s", exc)


def _answers(url: str) -> bool:
    """True when the gateway at ``url`` answers ``/health``."""
    from toolscript.gateway.client import GatewayClient

    try:
        return isinstance(GatewayClient(url, timeout=2.0).get("/health"), dict)
    except UserError:
        return False


def _require_isolation(named: Optional[list]) -> bool:
    """The config's ``requireIsolation`` (later files win), as ``exec`` reads it."""
    required = False
    for path, value in configkeys.read_key(REQUIRE_ISOLATION_KEY, named, None, None):
        if not isinstance(value, bool):
            raise UserError(f"{path}: requireIsolation: expected true or false, got {json.dumps(value)}; fix it (toolscript config validate)", exit_code=2)
        required = value
    return required


def gateway_handle(args: argparse.Namespace) -> GatewayHandle:
    """Which gateway the tools use (see DESCRIPTION)."""
    from toolscript.gateway.state import text_session

    workspace = os.path.realpath(os.path.expanduser(args.workspace or os.getcwd()))
    if not os.path.isdir(workspace):
        raise UserError(f"--workspace {args.workspace}: no such directory; create it first or name an existing one", exit_code=2)
    if not args.workspace and workspace == os.path.realpath(os.sep):
        # Desktop clients start their servers in /: that must not hand the model every file on the disk.
        workspace = paths.ensure_private_dir(os.path.join(paths.state_dir(), "empty-workspace"))
        logger.warning("mcp: started in %s; the file built-ins see an empty directory: pass --workspace DIR to share one", os.sep)
    env_url = os.environ.get("TOOLSCRIPT_GATEWAY_URL") if not args.session else None
    named = args.session or os.environ.get("CLAUDE_CODE_SESSION_ID")
    session = text_session(named) if named else f"mcp-{os.getpid()}-{secrets.token_hex(4)}"
    return GatewayHandle(url=args.gateway_url or env_url, probe=not args.gateway_url, session=session,
                         workspace=workspace, config_paths=args.config_paths)


def run(args: argparse.Namespace) -> int:
    from toolscript.codemode import process
    from toolscript.gateway.codemode_tools import INSTRUCTIONS, CodeModeTools, HttpBackend
    from toolscript.mcp.server.stdio import serve_stdio

    handle = gateway_handle(args)
    backend = HttpBackend(handle.client, require_isolation=_require_isolation(args.config_paths))
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol stream
    if sys.stdin.isatty():
        print("toolscript mcp: an MCP server on stdin/stdout for an MCP client to start; see 'toolscript mcp --help' (Ctrl-D ends it)",
              file=sys.stderr)
    handle.start()
    try:
        with process.terminate_on_signals():  # a second signal must not cut the gateway's stop short
            try:
                serve_stdio(CodeModeTools(backend), server_name="toolscript", server_version=__version__, instructions=INSTRUCTIONS,
                            list_changed=False, stdin=sys.stdin.buffer, stdout=protocol_out)
            finally:
                handle.close()
    except process.Terminated as stop:
        logger.info("mcp: stopped by %s", process.signal_name(stop.signum))
    return 0
