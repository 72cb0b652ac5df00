"""``toolscript doctor``: check the installation, config, servers, gateway and plugin.

Each check returns one or more ``Check`` lines: ``ok``, ``warn`` or ``fail``,
a one-line detail, and for anything not ``ok`` the command (or step) that
fixes it.  Checks never raise: an unexpected exception becomes a ``fail``
line for that check.  They run in parallel, so the slow one (connecting to
every configured server) sets the pace and the rest add nothing.

Checks, in report order:

    python     the interpreter and where this toolscript runs from (checkout or zipapp)
    config     the config files, server count, warnings and the first error
    server:N   each enabled server connects and lists its tools (``servers=False`` skips)
    gateway    this session's gateway: reachable, token accepted, version, server states
    claude     the ``claude`` CLI on PATH and its version (absent is a warning)
    plugin     installed_plugins.json (v1 and v2) lists ``toolscript@<market>``
    state      the private state directory: exists or can be created, ours, 0700, writable
    exec       the isolation ``exec`` scripts run under: the kernel layer in force (Landlock,
               bubblewrap, namespaces, or only the in-process guard) and what it does not stop
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import toolscript
from toolscript import __version__, log
from toolscript.config import load as configuration
from toolscript.errors import UserError
from toolscript.gateway.state import DEFAULT_SESSION
from toolscript.cli.output import format_table
from toolscript.paths import state_dir_path
from toolscript.gateway.servers import HIDDEN_BY_CONFIG, describe_count
from toolscript.claude_code.skills import claude_config_dir, install_applies, plugin_entries  # shared with skill discovery

logger = log.get("doctor")

OK, WARN, FAIL = "ok", "warn", "fail"
MIN_PYTHON = (3, 9)
CLAUDE_TIMEOUT = 5.0  # seconds for ``claude --version``
GATEWAY_TIMEOUT = 3.0  # seconds for the gateway's /health
PLUGIN_NAME = "toolscript"
DEFAULT_MARKET = "toolscript"  # used in the fix text when no marketplace.json says otherwise


@dataclass
class Check:
    """One line of the report."""

    check: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""
    # Extra keys for --json (the exec check's "isolation" report); the text report shows none.
    data: Optional[Dict[str, Any]] = None

    def as_dict(self) -> Dict[str, Any]:
        line: Dict[str, Any] = {"check": self.check, "status": self.status, "detail": self.detail, "fix": self.fix}
        line.update(self.data or {})
        return line


# -- running everything ---------------------------------------------------------------------


def run_checks(
    *,
    config_paths: Optional[List[str]] = None,
    gateway_url: Optional[str] = None,
    session: Optional[str] = None,
    servers: bool = True,
    environ: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
) -> List[Check]:
    """Every check, in parallel; the lines in a fixed order."""
    env = os.environ if environ is None else environ
    cwd = os.getcwd() if cwd is None else cwd
    loaded = _load_config(config_paths, cwd, env)
    # First, and alone: finding the gateway reads the state directory through
    # gateway.state, which tightens its mode; this check reports it as it was.
    state = guarded("state", lambda: [check_state_dir(env)])
    jobs: List[Tuple[str, Callable[[], List[Check]]]] = [
        ("python", lambda: [check_python()]),
        ("config", lambda: [check_config(loaded)]),
        ("servers", lambda: check_servers(loaded, connect=servers)),
        ("gateway", lambda: [check_gateway(gateway_url, session, env, config_paths)]),
        ("claude", lambda: [check_claude(env)]),
        ("plugin", lambda: [check_plugin(env, cwd)]),
        ("state", lambda: state),
        ("exec", lambda: [check_exec_isolation(loaded)]),
        ("memory", lambda: [check_memory(config_paths, cwd, env)]),
    ]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(guarded, name, job) for name, job in jobs]
        return [line for future in futures for line in future.result()]


def guarded(name: str, job: Callable[[], List[Check]]) -> List[Check]:
    """``job()``, or one ``fail`` line for ``name`` if it raised."""
    try:
        return job()
    except Exception as exc:
        logger.debug("doctor check %s raised", name, exc_info=True)
        return [Check(name, FAIL, f"the check itself failed: {type(exc).__name__}: {exc}", "run with DEBUG=1 for the traceback and report it")]


def exit_code(results: Sequence[Check]) -> int:
    return 1 if any(r.status == FAIL for r in results) else 0


def render(results: Sequence[Check]) -> List[str]:
    """The report for people: aligned status, check and detail; each fix indented below."""
    labels = {OK: "ok", WARN: "warn", FAIL: "FAIL"}
    table = format_table([(labels.get(r.status, r.status), r.check, r.detail) for r in results])
    lines: List[str] = []
    indent = " " * (max((len(labels.get(r.status, r.status)) for r in results), default=4) + 2)
    for line, result in zip(table, results):
        lines.append(line)
        if result.fix and result.status != OK:
            lines.append(f"{indent}fix: {result.fix}")
    failed = sum(r.status == FAIL for r in results)
    warned = sum(r.status == WARN for r in results)
    if failed or warned:
        parts = [f"{failed} failed"] if failed else []
        parts += [f"{warned} warning" + ("s" if warned != 1 else "")] if warned else []
        lines.append(", ".join(parts) + f" (of {len(results)} checks)")
    else:
        lines.append(f"all {len(results)} checks passed")
    return lines


def _command(*words: str, config_paths: Optional[List[str]] = None, session: Optional[str] = None) -> str:
    """A toolscript command line to paste, carrying the --config/--session in use."""
    argv = ["toolscript"]
    if config_paths:
        argv += ["--config", ",".join(config_paths)]
    argv += list(words)
    if session:
        argv += ["--session", session]
    return " ".join(shlex.quote(word) for word in argv)


# -- 1. python ---------------------------------------------------------------------------------


def running_from() -> str:
    """Where this toolscript's code is: ``zipapp PATH`` or the package directory."""
    package_dir = os.path.dirname(os.path.abspath(toolscript.__file__))
    parent = os.path.dirname(package_dir)
    if os.path.isfile(parent) and zipfile.is_zipfile(parent):
        return f"zipapp {parent}"
    return package_dir


def check_python(version_info: Sequence[int] = tuple(sys.version_info[:3]), executable: Optional[str] = None) -> Check:
    version = ".".join(str(part) for part in version_info[:3])
    where = executable or sys.executable or "unknown interpreter"
    detail = f"Python {version} ({where}); toolscript {__version__} from {running_from()}"
    if tuple(version_info[:2]) < MIN_PYTHON:
        return Check("python", FAIL, detail, "run toolscript with Python 3.9 or newer: python3.9 toolscript.pyz ... (or newer)")
    return Check("python", OK, detail)


# -- 2. config ---------------------------------------------------------------------------------


@dataclass
class _Loaded:
    config: Optional["configuration.Config"]
    error: Optional[BaseException]
    paths: List[str]  # the files looked for
    named: Optional[List[str]] = None  # --config, to repeat in fix commands


def _load_config(config_paths: Optional[List[str]], cwd: str, env: Mapping[str, str]) -> _Loaded:
    try:
        looked = config_paths if config_paths is not None else configuration.default_config_paths(cwd=cwd, environ=env)
    except Exception:
        looked = []
    try:
        return _Loaded(configuration.load_config(config_paths, cwd=cwd, environ=env), None, looked, config_paths)
    except Exception as exc:  # ConfigError is reported; anything else fails the check (guarded)
        return _Loaded(None, exc, looked, config_paths)


def check_config(loaded: _Loaded) -> Check:
    validate = _command("config", "validate", config_paths=loaded.named)
    if loaded.error is not None:
        if not isinstance(loaded.error, configuration.ConfigError):
            raise loaded.error
        problems = loaded.error.problems or [str(loaded.error)]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Check("config", FAIL, problems[0] + more, f"{validate}  (lists every problem; fix them in the file named)")
    config = loaded.config
    assert config is not None
    if config.untrusted and not config.untrusted_servers():
        # A file with servers gets a line per server (check_servers); one with only settings gets it here.
        return Check("config", WARN, config.untrusted[0].reason(), f"{config.untrusted[0].fix()}  (in a terminal: it shows the file, then asks)")
    imported = [s for s in config.servers.values() if s.imported is not None]
    from_claude = ""
    if imported:
        from_claude = f"{len(imported)} server{'s' if len(imported) != 1 else ''} from Claude Code ({', '.join(dict.fromkeys(s.imported.shown for s in imported if s.imported))})"
    if not config.files and imported:
        detail = f"no toolscript config file; {from_claude}"
        if config.warnings:
            count = len(config.warnings)
            return Check("config", WARN, f"{detail}; {count} warning{'s' if count != 1 else ''}: {config.warnings[0]}", validate)
        return Check("config", OK, detail)
    if not config.files:
        looked = ", ".join(loaded.paths) or "nothing"
        detail = f"no config file (looked for {looked}); built-in tools only"
        if config.warnings:
            return Check("config", WARN, f"{detail}; {config.warnings[0]}", validate)
        return Check(
            "config", OK,
            detail + '; to add MCP servers create ./.toolscript.json with {"mcpServers": {"name": {"command": "...", "args": [...]}}}',
        )
    disabled = sum(1 for s in config.servers.values() if s.disabled)
    enabled = len(config.servers) - disabled - len(imported)
    files = ", ".join(config.files)
    detail = f"{enabled} server{'s' if enabled != 1 else ''}" + (f" (+{disabled} disabled)" if disabled else "") + f" from {files}"
    if from_claude:
        detail += f"; {from_claude}"
    if config.warnings:
        count = len(config.warnings)
        return Check("config", WARN, f"{detail}; {count} warning{'s' if count != 1 else ''}: {config.warnings[0]}", validate)
    return Check("config", OK, detail)


# -- 3. servers --------------------------------------------------------------------------------


def check_servers(loaded: _Loaded, connect: bool = True) -> List[Check]:
    """A line per enabled server; ``connect=False`` (--no-servers) reports only what the config says.

    A server of an unapproved project file is a warning line of its own: never started, never probed.
    """
    untrusted = _untrusted_lines(loaded)
    return untrusted + _check_servers(loaded, connect) if untrusted else _check_servers(loaded, connect)


def _untrusted_lines(loaded: _Loaded) -> List[Check]:
    if loaded.config is None:
        return []
    return [
        Check(f"server:{name}", WARN, f"not started: {file.reason()}",
              f"the user runs '{file.fix()}' in a terminal in this directory: it shows what the file runs, then asks")
        for name, file in loaded.config.untrusted_servers().items()
    ]


def _check_servers(loaded: _Loaded, connect: bool) -> List[Check]:
    if not connect:
        unstartable = [s for s in loaded.config.enabled_servers() if s.config_error] if loaded.config else []
        lines = [_unstartable(s, loaded) for s in unstartable]
        return lines + [Check("servers", OK, "not checked (--no-servers)")]
    if loaded.config is None:
        return [Check("servers", WARN, "not checked: the configuration did not load", "fix the config first: " + _command("config", "validate", config_paths=loaded.named))]
    servers = loaded.config.enabled_servers()
    if not servers:
        return [Check("servers", OK, "no MCP servers configured")]
    from toolscript.gateway import toolcache
    from toolscript.gateway.servers import probe_all  # the MCP client, only when there is something to probe

    # A server Claude Code also runs is not started when its tool list is cached: Claude Code's copy may be
    # running, and a second one can break a server that allows one running copy.
    cached: Dict[str, Dict[str, Any]] = {}
    for server in servers:
        listing = toolcache.load(server) if server.lazy and not server.config_error else None
        if listing is not None:
            cached[server.name] = listing
    to_probe = [s for s in servers if not s.config_error and s.name not in cached]
    logger.info("doctor: connecting to %d server(s)", len(to_probe))
    # A server whose config names an unset ${VAR} is reported, never started.
    probed = iter(probe_all(to_probe))
    lines = []
    for server in servers:
        name = server.name
        fix = _command("servers", "check", name, config_paths=loaded.named)
        if server.config_error:
            lines.append(_unstartable(server, loaded))
            continue
        if name in cached:
            lines.append(_cached_line(server, cached[name]))
            continue
        report = next(probed)
        if server.imported is not None:
            report["detailSource"] = f"; from {server.describe_source()}"
        if report.get("ok"):
            info = report.get("server") or {}
            who = " ".join(str(v) for v in (info.get("name"), info.get("version")) if v) or "unnamed server"
            detail = f"{report.get('transport')}, {report.get('protocolVersion')}, {who}, {_tool_count(report)}, {report.get('seconds', 0):.2f}s"
            lines.append(Check(f"server:{name}", OK, detail + report.get("detailSource", "")))
        else:
            error = " ".join(str(report.get("error") or "failed").split())
            if report.get("needsAuth"):
                fix = _command("auth", name, config_paths=loaded.named)
            elif report.get("fix"):  # the server lacks a variable: re-running the same check would fail the same way
                error = error.replace("; " + " ".join(str(report["fix"]).split()), "")  # said once, as the fix
                fix = f"{report['fix']}; then: {fix}"
            lines.append(Check(f"server:{name}", FAIL, f"{report.get('transport')}: {error}{report.get('detailSource', '')}", fix))
    return lines


def _cached_line(server: "configuration.ServerConfig", listing: Dict[str, Any]) -> Check:
    """The line of a Claude Code server whose tool list is cached: reported from the list, not started."""
    from toolscript.gateway.servers import visible_tools

    shown, hidden = visible_tools(server, listing["tools"])
    found = listing.get("serverInfo")
    info: Dict[str, Any] = found if isinstance(found, dict) else {}
    who = " ".join(str(v) for v in (info.get("name"), info.get("version")) if v) or "unnamed server"
    detail = (f"{server.type}, {who}, {describe_count(len(shown), hidden)} (listed before; not started now: Claude Code "
              f"runs its own copy, toolscript starts one when a script calls it); from {server.describe_source()}")
    return Check(f"server:{server.name}", OK, detail)


def _unstartable(server: "configuration.ServerConfig", loaded: _Loaded) -> Check:
    """The fail line of a server that cannot start as configured (an unset ${VAR})."""
    check = _command("servers", "check", server.name, config_paths=loaded.named)
    fix = f"export the variable named, or remove it from {server.source}; then: {check}"
    return Check(f"server:{server.name}", FAIL, f"{server.type}: {server.config_error}", fix)


def _tool_count(report: Dict[str, Any]) -> str:
    """``12 tools (1 hidden: needs tasks)`` for a probe report."""
    hidden = report.get("hidden")
    if not isinstance(hidden, dict):  # reports from before probes counted hidden tools by reason
        extra = int(report.get("toolsTotal") or report.get("tools") or 0) - int(report.get("tools") or 0)
        hidden = {HIDDEN_BY_CONFIG: extra} if extra > 0 else {}
    return describe_count(int(report.get("tools") or 0), hidden)


# -- 4. gateway --------------------------------------------------------------------------------


def check_gateway(
    explicit_url: Optional[str],
    session: Optional[str],
    env: Mapping[str, str],
    config_paths: Optional[List[str]] = None,
) -> Check:
    from toolscript.gateway.client import GatewayClient, GatewayUnavailable, TokenRejected, redact

    in_claude = bool(env.get("CLAUDE_CODE_SESSION_ID"))
    # Only a --session the user typed beats TOOLSCRIPT_GATEWAY_URL, as for every other command.
    url, source = _gateway_url(explicit_url, session, env)
    session = session or env.get("CLAUDE_CODE_SESSION_ID") or None
    session_name = session or DEFAULT_SESSION
    start = _command("gateway", "start", "--detach", config_paths=config_paths, session=session)
    missing = FAIL if in_claude else WARN
    if not url:
        where = " (inside Claude Code, whose SessionStart hook should have started it)" if in_claude else ""
        return Check("gateway", missing, f"no gateway is running for session {session_name!r}{where}", start)
    shown = redact(url)
    if source == "TOOLSCRIPT_GATEWAY_URL":
        restart = f'unset TOOLSCRIPT_GATEWAY_URL, then: eval "$({start})"'
    elif source == "--gateway-url":
        restart = f"{start}  (and use the URL it prints)"
    else:
        restart = start
    try:
        health = GatewayClient(url, timeout=GATEWAY_TIMEOUT).get("/health")
    except TokenRejected:
        return Check("gateway", FAIL, f"the gateway at {shown} (from {source}) refused the token: the URL belongs to another gateway", restart)
    except GatewayUnavailable as exc:
        # A stale state file only means no gateway is running; a URL the user set that does not answer is broken.
        status = missing if source.startswith("the state file") else FAIL
        return Check("gateway", status, f"{_without_hint(str(exc))}; URL from {source}", restart)
    except UserError as exc:
        return Check("gateway", FAIL, f"{shown} (from {source}) did not answer like a toolscript gateway: {exc}", restart)
    if not isinstance(health, dict) or "pid" not in health:
        return Check("gateway", FAIL, f"{shown} (from {source}) did not answer like a toolscript gateway", restart)
    states: Dict[str, Any] = health["servers"] if isinstance(health.get("servers"), dict) else {}
    listed = ", ".join(f"{name} {value}" for name, value in states.items()) or "none configured"
    detail = (
        f"running at {shown} (from {source}; pid {health.get('pid')}, session {health.get('session') or DEFAULT_SESSION!r}, "
        f"toolscript {health.get('version')}, up {health.get('uptimeSeconds')}s); MCP servers: {listed}"
    )
    failed = [name for name, value in states.items() if value == "failed"]
    signed_out = [name for name, value in states.items() if value == "needs-auth"]
    if health.get("configProblem"):
        validate = _command("config", "validate", config_paths=config_paths)
        return Check("gateway", WARN, f"{detail}; a config file changed but cannot be used, so the last good configuration "
                     f"stays in use: {health['configProblem']}", f"fix the file ({validate} lists every problem); the gateway reads it again once it is saved")
    if signed_out:
        return Check("gateway", WARN, detail, f"{_command('auth', signed_out[0], config_paths=config_paths)} (the gateway reconnects by itself once signed in)")
    if failed:
        status_cmd = _command("gateway", "status", session=session)
        check_cmd = _command("servers", "check", failed[0], config_paths=config_paths)
        return Check("gateway", WARN, detail, f"{status_cmd} shows why; {check_cmd} (the gateway keeps retrying it)")
    waiting_keys = health.get("restartToApply")
    if isinstance(waiting_keys, list) and waiting_keys:
        stop = _command("gateway", "stop", session=session)
        waiting = ", ".join(str(key) for key in waiting_keys)
        return Check("gateway", WARN, f"{detail}; changed {waiting}, which applies only when the gateway restarts", f"restart it: {stop} && {start}")
    if health.get("version") and health.get("version") != __version__:
        stop = _command("gateway", "stop", session=session)
        return Check("gateway", WARN, f"{detail}; this toolscript is {__version__}", f"restart it: {stop} && {start}")
    return Check("gateway", OK, detail)


def _gateway_url(explicit_url: Optional[str], session: Optional[str], env: Mapping[str, str]) -> Tuple[Optional[str], str]:
    """The URL the other commands would use (``client.find_url``) and where it came from.

    Without a state directory there is no state file to read, and doctor
    does not create one just to look (``check_state_dir`` reports on it).
    """
    from toolscript.gateway.client import find_url

    from_env = env.get("TOOLSCRIPT_GATEWAY_URL")
    state_file = f"the state file of session {session or env.get('CLAUDE_CODE_SESSION_ID') or DEFAULT_SESSION!r}"
    if not explicit_url and not from_env and not os.path.isdir(state_dir_path(env)):
        return None, state_file
    try:
        url = find_url(explicit_url, session, env)
    except UserError:  # the state directory is unusable; check_state_dir says why
        url = explicit_url or from_env
    if explicit_url:
        return url, "--gateway-url"
    if url and url == from_env:
        return url, "TOOLSCRIPT_GATEWAY_URL"
    return url, state_file


def _without_hint(message: str) -> str:
    """A client error without its own advice (this check gives its fix separately)."""
    return message.split("; check ")[0].split("; start one")[0]


# -- 5. claude ---------------------------------------------------------------------------------


def check_claude(env: Mapping[str, str], timeout: float = CLAUDE_TIMEOUT) -> Check:
    found = shutil.which("claude", path=env.get("PATH", os.defpath))
    if not found:
        return Check("claude", WARN, "the claude CLI is not on PATH (only needed for the Claude Code plugin)", "install Claude Code: npm install -g @anthropic-ai/claude-code")
    try:
        proc = subprocess.run(
            [found, "--version"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            timeout=timeout, env=dict(env), text=True, errors="replace",
        )
    except subprocess.TimeoutExpired:
        return Check("claude", WARN, f"{found} --version did not answer within {timeout:g}s", f"run '{found} --version' to see what it waits for")
    except OSError as exc:
        return Check("claude", WARN, f"{found} cannot be run: {exc.strerror or exc}", "reinstall Claude Code: npm install -g @anthropic-ai/claude-code")
    output = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    if proc.returncode != 0:
        last = output[-1] if output else "no output"
        return Check("claude", WARN, f"{found} --version exited with status {proc.returncode}: {last}", "reinstall Claude Code: npm install -g @anthropic-ai/claude-code")
    return Check("claude", OK, f"{output[0] if output else 'unknown version'} ({found})")


# -- 6. plugin ---------------------------------------------------------------------------------


def _marketplace_hint() -> Tuple[str, str]:
    """(marketplace source, marketplace name) for the install instructions."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(toolscript.__file__)))
    manifest = os.path.join(root, ".claude-plugin", "marketplace.json")
    try:
        with open(manifest, encoding="utf-8") as f:
            name = json.load(f).get("name")
        if isinstance(name, str) and name:
            return root, name
    except (OSError, ValueError, AttributeError):
        pass
    return "<toolscript repository: path or GitHub owner/repo>", DEFAULT_MARKET


def _install_fix(market: Optional[str] = None) -> str:
    source, default_market = _marketplace_hint()
    market = market or default_market
    return f"claude plugin marketplace add {shlex.quote(source) if not source.startswith('<') else source} && claude plugin install {PLUGIN_NAME}@{market}"


def check_plugin(env: Mapping[str, str], cwd: Optional[str] = None) -> Check:
    cwd = os.getcwd() if cwd is None else cwd
    path = os.path.join(claude_config_dir(env), "plugins", "installed_plugins.json")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return Check("plugin", WARN, f"plugin not installed ({path} does not exist)", _install_fix())
    except OSError as exc:
        return Check("plugin", WARN, f"cannot read {path}: {exc.strerror or exc}", f"check the file's permissions: ls -l {shlex.quote(path)}")
    try:
        document = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        return Check("plugin", WARN, f"{path}: not valid UTF-8 (byte {exc.start})", "let Claude Code rewrite it: claude plugin list; or reinstall: " + _install_fix())
    except json.JSONDecodeError as exc:
        return Check("plugin", WARN, f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}", "let Claude Code set it aside and rewrite it: claude plugin list; then reinstall: " + _install_fix())
    except RecursionError:
        return Check("plugin", WARN, f"{path}: invalid JSON: nested too deeply", "let Claude Code rewrite it: claude plugin list")
    try:
        plugins = plugin_entries(document)
    except ValueError as exc:
        return Check("plugin", WARN, f"{path}: unexpected format ({exc})", "let Claude Code rewrite it: claude plugin list; or reinstall: " + _install_fix())
    ours = {pid: entries for pid, entries in plugins.items() if pid.partition("@")[0] == PLUGIN_NAME}
    if not ours:
        others = len(plugins)
        return Check("plugin", WARN, f"plugin not installed ({path} lists {others} other plugin{'s' if others != 1 else ''})", _install_fix())
    described, here, versions = [], [], set()
    for plugin_id, entries in ours.items():
        if not entries:
            described.append(f"{plugin_id} (no install entries)")
        for entry in entries:
            scope = entry.get("scope") or "user"
            version = entry.get("version")
            versions.add(str(version) if version is not None else "unknown")
            where = f" {entry['projectPath']}" if scope != "user" and isinstance(entry.get("projectPath"), str) else ""
            described.append(f"{plugin_id} {version if version is not None else '(version unknown)'} ({scope}{where})")
            if install_applies(entry, cwd):
                here.append((plugin_id, entry))
    detail = "installed: " + "; ".join(described)
    first_id = next(iter(ours))
    market = first_id.partition("@")[2] or None
    if not here:
        return Check("plugin", WARN, f"{detail}; none applies to {cwd}", f"claude plugin install {first_id}  (user scope: every project)" if market else _install_fix())
    stale = sorted({str(entry.get("version")) for _, entry in here if entry.get("version") != __version__})
    if stale:
        ids = sorted({plugin_id for plugin_id, _ in here})
        return Check("plugin", WARN, f"{detail}; this toolscript is {__version__}", f"claude plugin update {ids[0]}  (or run the toolscript the plugin bundles)")
    return Check("plugin", OK, detail)


# -- 7. state directory -------------------------------------------------------------------------


def check_state_dir(env: Mapping[str, str]) -> Check:
    path = state_dir_path(env)
    elsewhere = "or set TOOLSCRIPT_STATE_DIR to a private directory of yours"
    if not os.path.lexists(path):
        ancestor = os.path.dirname(os.path.abspath(path))
        while ancestor and not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
            ancestor = os.path.dirname(ancestor)
        if os.path.isdir(ancestor) and os.access(ancestor, os.W_OK | os.X_OK):
            return Check("state", OK, f"{path} does not exist yet; it will be created (0700) on first use")
        return Check("state", FAIL, f"{path} does not exist and cannot be created ({ancestor} is not writable)", f"mkdir -m 700 -p {shlex.quote(path)}, {elsewhere}")
    if not os.path.isdir(path):
        return Check("state", FAIL, f"{path} exists but is not a directory", f"move it away, {elsewhere}")
    problems = []
    fixes = []
    for directory in (path, os.path.join(path, "gateways")):
        if not os.path.isdir(directory):
            continue
        info = os.stat(directory)
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            return Check("state", FAIL, f"{directory} belongs to another user (uid {info.st_uid}); toolscript refuses to use it", "set TOOLSCRIPT_STATE_DIR to a private directory of yours")
        mode = info.st_mode & 0o777
        if mode & 0o077:
            problems.append(f"{directory} is mode {mode:04o}, expected 0700")
            fixes.append(f"chmod 700 {shlex.quote(directory)}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".doctor-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return Check("state", FAIL, f"{path} is not writable: {exc.strerror or exc}", f"chmod u+rwx {shlex.quote(path)}, {elsewhere}")
    if problems:
        return Check("state", WARN, "; ".join(problems) + " (toolscript tightens it on next use)", " && ".join(fixes))
    return Check("state", OK, f"{path} (0700, yours, writable)")


# -- 8. exec isolation ---------------------------------------------------------------------------

# How many of the layer's gaps the one-line detail names; --json has them all.
GAPS_SHOWN = 1


def check_exec_isolation(loaded: _Loaded, report: Optional[Dict[str, Any]] = None) -> Check:
    """The layer ``exec`` scripts run under, from ``sandbox.isolation_report``.

    ok: Landlock is in force.  warn: only bubblewrap (a private mount view)
    or namespaces (no kernel rule on file access at all).  Only the
    in-process guard: warn, or fail when the config sets ``requireIsolation``
    (every exec would then refuse to run).  ``report`` is for tests; by
    default it is the sandbox's own.
    """
    from toolscript.codemode.sandbox import isolation_fix

    required = bool(loaded.config is not None and loaded.config.require_isolation)
    if report is None:
        from toolscript.codemode import sandbox

        try:
            report = sandbox.isolation_report(gateway=True)
        except UserError as exc:  # a forced TOOLSCRIPT_EXEC_LAYER this system lacks
            return Check("exec", FAIL, f"exec cannot run scripts: {exc}", "unset TOOLSCRIPT_EXEC_LAYER, or force a layer this system has")
    layer = report.get("layer")
    mode = str(report.get("mode") or layer)
    listed = report.get("gaps")
    gaps = [str(gap) for gap in listed] if isinstance(listed, list) else []
    data = {"isolation": report}
    shown = "; ".join(gaps[:GAPS_SHOWN]) + (f" (+{len(gaps) - GAPS_SHOWN} more: toolscript doctor --json)" if len(gaps) > GAPS_SHOWN else "")
    detail = f"scripts run under {mode}" + (f"; does not stop: {shown}" if shown else "")
    if "guard-off" in mode:
        return Check("exec", WARN, f"{detail}; the in-process guard is off (TOOLSCRIPT_EXEC_GUARD=off is for tests only)", "unset TOOLSCRIPT_EXEC_GUARD", data)
    if layer == "landlock":
        return Check("exec", OK, detail, "", data)
    if layer in ("bubblewrap", "namespaces"):
        why = "bubblewrap's private mount view confines files" if layer == "bubblewrap" else "only the in-process guard confines file access"
        return Check("exec", WARN, f"{detail}; no Landlock: {why}", isolation_fix(bubblewrap=layer == "namespaces"), data)
    if required:
        return Check("exec", FAIL, f"{detail}; requireIsolation is set, so every exec refuses to run", isolation_fix(), data)
    return Check("exec", WARN, f"{detail}: a guardrail, not a boundary (exec --require-isolation would refuse to run)", isolation_fix(), data)


# -- 9. memory ------------------------------------------------------------------------------------


def check_memory(config_paths: Optional[List[str]], cwd: str, env: Mapping[str, str]) -> Check:
    """The memory database: where, how many memories, and whether this SQLite has FTS5 (else the slower LIKE search)."""
    import sqlite3

    from toolscript.config import keys as configkeys
    from toolscript.memory import store

    settings, problems = configkeys.memory_settings(config_paths, cwd, env)
    data = settings.get("dataDir")
    path = os.path.join(os.path.expanduser(data), "memory.db") if data else store.default_path(env)
    probe = sqlite3.connect(":memory:")
    try:
        fts = store._fts5_available(probe)  # the store's own probe: the answer it acts on
    finally:
        probe.close()
    search = "FTS5 full-text search" if fts else f"no FTS5 in this Python's SQLite {sqlite3.sqlite_version}: search falls back to LIKE (slower past ~10,000 memories)"
    off = env.get("TOOLSCRIPT_MEMORY", "").strip().lower() in ("0", "false", "no", "off") or not settings.get("enabled", True)
    if problems:
        return Check("memory", FAIL, "; ".join(problems), "fix the config's \"memory\" key (toolscript config validate)")
    if off:
        return Check("memory", OK, f"turned off; {search}")
    if not os.path.exists(path):
        return Check("memory", OK if fts else WARN, f"no memories yet ({path} is created on first use); {search}",
                     "" if fts else "use a Python whose SQLite has FTS5 (most do)")
    try:
        with store.open_store(path, readonly=True) as db:
            stats = db.stats()
            damage = db.quick_check()  # every page: a count alone reads few of them
    except store.StoreError as exc:
        return Check("memory", FAIL, str(exc), f"move {shlex.quote(path)} away: a new one is created on next use")
    if damage:
        return Check("memory", FAIL, f"{path} is damaged (SQLite quick_check: {'; '.join(damage[:3])})",
                     f"move {shlex.quote(path)} away: a new one is created on next use")
    detail = f"{stats['memories']} memories in {path}; {search}"
    return Check("memory", OK if fts else WARN, detail, "" if fts else "use a Python whose SQLite has FTS5 (most do)")
