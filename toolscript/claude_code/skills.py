"""Which skills Claude Code would list to the model in a Claude Code session (each SKILL.md read with ``frontmatter``).

The suggestion hook may only suggest skills the model can actually invoke, so
``discover()`` follows what the ``claude`` binary does, not what the docs say.
Observed on ``@anthropic-ai/claude-code`` 2.1.330 (scratch HOME, a local
directory marketplace, the request body a fake Messages API received, and
``claude plugin list --json``), 2026-11-24:

* User skills: ``<config dir>/skills/<dir>/SKILL.md``; config dir = ``$CLAUDE_CONFIG_DIR``
  or ``~/.claude``.
* Project skills: ``.claude/skills/<dir>/SKILL.md`` in the project directory AND every
  parent up to the git root (the directory holding ``.git``), inclusive; nothing above
  the git root.  Outside a git repository every parent up to ``/`` counts.  The nearest
  directory wins a name clash.
* A skill is listed under its DIRECTORY name.  A different frontmatter ``name`` is only
  shown beside it (``- dir-a (other-name): ...``), and the Skill tool wants the listed
  name, so ``Skill.name`` is the directory name.
* No ``description`` (or an empty one): the first non-blank body line, without leading
  ``#`` marks, is the description.  A SKILL.md whose frontmatter does not parse is still
  listed (with that body line); we list it too, and add a warning.
* A SKILL.md with no frontmatter at all is listed too, described by its first line.  We
  list it WITHOUT a description: such a file need not be a skill at all (a link, or a
  hard link, to ``~/.netrc``), and its first line would go to the model as is.
* Claude Code follows symlinks anywhere: a skill directory or SKILL.md linked to a file
  outside every skills directory was listed with that file's first line (2.1.330,
  2026-12-07).  We follow a symlink only while it stays inside the skills directory it is
  in (``~/.claude/skills``, a project's ``.claude/skills``, a plugin's ``skills``; the
  directory itself may be a symlink); a skill that resolves outside it is left out and
  reported in ``skipped`` (a debug line in the log), never read.  A cloned project must
  not be able to put a file of the user's into the model's context or onto the screen.
* ``disable-model-invocation: true`` skills are NOT listed to the model; we skip them.
  (``user-invocable: false`` ones are listed, and kept.)
* Same name for a user and a project skill: the USER one is listed (not project > user).
  Plugin skills are ``<plugin>:<dir>`` and cannot clash with those.
* Plugins: every id in ``<config dir>/plugins/installed_plugins.json`` (v1: one object per
  id; v2: a list of per-scope entries) that is enabled and has an install entry for this
  project: user scope, or project/local scope whose ``projectPath`` is the project or
  contains it (the most specific one is read).  An installed plugin that no
  ``enabledPlugins`` mentions is DISABLED (``plugin list`` says ``enabled: false`` and its
  skills are not listed); ``false`` disables it too.  Layers, later wins: user
  ``<config dir>/settings.json``, project ``<project>/.claude/settings.json`` (the project
  directory only: the git root's settings.json did not apply in a subdirectory), local
  ``<project>/.claude/settings.local.json`` then the git root's ``settings.local.json``
  (that one did apply in a subdirectory, and beat the subdirectory's).
* The plugin part of the name is ``.claude-plugin/plugin.json``'s ``name`` (a plugin
  installed as ``plug-a@m`` whose manifest says ``manifest-a`` is listed as
  ``manifest-a:skill``); without a manifest, the id before ``@``.
* A plugin from a ``directory`` marketplace is read from that folder, not from the
  ``installPath`` copy (``plugin list`` shows it as ``readFromFolder``; an edited
  description in the folder was the one listed).
* Not copied: the binary does not load a plugin whose marketplace it does not know
  (``known_marketplaces.json``), nor one from a ``directory`` marketplace whose folder is
  gone; ``discover()`` lists both from their ``installPath`` (a normal install never
  leaves either state behind, and test fixtures need not write marketplace files).
* A hook's own plugin (``$CLAUDE_PLUGIN_ROOT``) is loaded in its session, installed or
  given with ``--plugin-dir`` (whose skills are listed as ``<plugin>:<skill>`` too), so its
  skills are included.
* Skills nested below the project (listed with a path prefix, ``apps/web:deploy``) and the
  binary's built-in skills are not discovered here.

MCP servers may offer skills too (the Skills extension, ``gateway.mcp_skills``): with a
gateway URL, ``discover`` adds the ones the session's gateway lists, named
``<server>:<name>`` with source ``mcp:<server>`` and the ``SKILL.md`` URI as path.  They
are added last and never shadow a skill found on disk: a name already taken becomes
``mcp:<server>:<name>``.  Claude Code does not load them (its Skill tool knows only its own);
the suggestion names them with their server instead.

Everything is bounded: at most ``MAX_SKILL_BYTES`` of each SKILL.md are read (the
frontmatter must end within them), at most ``MAX_SKILL_DIRS`` entries of a skills
directory are looked at, only regular files are opened (a FIFO named SKILL.md cannot
block), and the parser's nesting is capped, so a hostile tree cannot hang the hook.
"""

import json
import os
import stat
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from toolscript import paths
from toolscript.claude_code import frontmatter

MAX_SKILL_BYTES = 64 * 1024  # of one SKILL.md: the frontmatter and the first body lines live here
MAX_SKILL_DIRS = 1000  # entries looked at in one skills directory
MAX_DESCRIPTION = 1024  # characters kept of a description (the Agent Skills format's limit for the field)


class Skill(NamedTuple):
    name: str  # as Claude Code lists it: "skill" for user/project skills, "plugin:skill" for plugin skills
    description: str  # frontmatter ``description`` (or the first body line after one), whitespace-collapsed, <= 1024 chars
    source: str  # "project" | "user" | "plugin" | "mcp:<server>"
    path: str  # absolute path of the SKILL.md (an MCP skill: its URI)


# -- discovery -------------------------------------------------------------------------------


claude_config_dir = paths.claude_config_dir  # doctor reads it from here too


def plugin_entries(document: Any) -> Dict[str, List[Dict[str, Any]]]:
    """``{plugin id: [install entries]}`` from installed_plugins.json, v1 or v2.

    v1 maps each id to one object, v2 to a list of them (one per scope);
    fields are read by key.  Raises ``ValueError`` for an unexpected shape.
    """
    if not isinstance(document, dict) or not isinstance(document.get("plugins"), dict):
        raise ValueError('expected an object with a "plugins" object')
    found: Dict[str, List[Dict[str, Any]]] = {}
    for plugin_id, value in document["plugins"].items():
        entries = value if isinstance(value, list) else [value]
        found[plugin_id] = [entry for entry in entries if isinstance(entry, dict)]
    return found


def discover(
    cwd: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    warnings: Optional[List[str]] = None,
    skipped: Optional[List[str]] = None,
    gateway_url: Optional[str] = None,
) -> List[Skill]:
    """Every skill Claude Code would list to the model in a session started in ``cwd``, sorted by name.

    The project is ``$CLAUDE_PROJECT_DIR`` when set, else ``cwd`` (default: the
    current directory).  ``$CLAUDE_PLUGIN_ROOT`` (set for a plugin's hooks) adds
    that plugin's skills: the session has it loaded, even with ``--plugin-dir``.  A name listed twice keeps the first of: user skills,
    project skills (nearest directory first), plugin skills.  Never raises for
    bad files: each unreadable or malformed one adds a line to ``warnings``
    naming its path (and is logged at info level); missing directories are fine.
    A skill whose SKILL.md resolves outside its skills directory (a symlink) is
    not read: a line naming it goes to ``skipped`` (and the log, at debug level).
    ``gateway_url``: also the skills MCP servers offer through that gateway
    (``mcp_skills``; a gateway that does not answer adds a warning, no skill).
    """
    env = os.environ if env is None else env
    project = os.path.abspath(env.get("CLAUDE_PROJECT_DIR") or (os.getcwd() if cwd is None else cwd))
    found = warnings if warnings is not None else []

    def warn(message: str) -> None:
        found.append(message)
        from toolscript import log  # only when there is something to say: keeps the hook's imports small

        log.get("skills").info("%s", message)

    left_out = skipped if skipped is not None else []

    def skip(message: str) -> None:
        left_out.append(message)
        from toolscript import log

        log.get("skills").debug("%s", message)

    config_dir = claude_config_dir(env)
    project_dirs, git_root = _project_dirs(project)
    chosen: Dict[str, Skill] = {}
    scanned = set()
    roots = [(os.path.join(config_dir, "skills"), "user")]
    roots += [(os.path.join(directory, ".claude", "skills"), "project") for directory in project_dirs]
    for directory, source in roots:
        key = _real(directory)
        if key in scanned:
            continue  # e.g. a project under HOME reaching ~/.claude/skills again
        scanned.add(key)
        for skill in _scan(directory, source, "", warn, skip):
            chosen.setdefault(skill.name, skill)
    plugin_roots = _enabled_plugin_roots(config_dir, project, git_root, warn)
    own = env.get("CLAUDE_PLUGIN_ROOT")
    if own and os.path.isdir(own) and _real(own) not in {_real(root) for root, _ in plugin_roots}:
        # A hook runs from a plugin the session has loaded, installed or not (--plugin-dir):
        # its skills are listed too.  Without a manifest, --plugin-dir names it by its directory.
        plugin_roots.append((own, _plugin_name(own, os.path.basename(os.path.normpath(own)))))
    for root, plugin_name in plugin_roots:
        for skill in _scan(os.path.join(root, "skills"), "plugin", plugin_name + ":", warn, skip):
            chosen.setdefault(skill.name, skill)
    if gateway_url:
        for skill in mcp_skills(gateway_url, warn):
            if skill.name in chosen:  # never shadowing, never dropped: named by its origin in full
                skill = skill._replace(name="mcp:" + skill.name)
            chosen.setdefault(skill.name, skill)
    return sorted(chosen.values(), key=lambda skill: skill.name)


MCP_SKILLS_TIMEOUT = 0.5  # seconds for the gateway's /skills (it answers from memory, not waiting for servers)


def mcp_skills(gateway_url: str, warn: Optional[Callable[[str], None]] = None, wait: float = 0.0) -> List[Skill]:
    """The skills MCP servers offer through the gateway at ``gateway_url`` (``GET /skills``), as ``Skill``s.

    ``wait``: seconds the gateway may wait for servers still connecting.  A
    gateway that cannot be asked gives none (and a line to ``warn``).
    """
    from toolscript.gateway.client import GatewayClient, redact_text

    try:
        answer = GatewayClient(gateway_url, timeout=MCP_SKILLS_TIMEOUT + wait).get("/skills", wait=f"{wait:g}")
    except Exception as exc:  # noqa: BLE001 - any failure costs the MCP skills alone
        if warn is not None:
            warn(f"the gateway's MCP skills could not be listed: {redact_text(str(exc))}")
        return []
    found = []
    for entry in answer.get("skills", []) if isinstance(answer, dict) and isinstance(answer.get("skills"), list) else []:
        if not isinstance(entry, dict):
            continue
        server, name, uri = entry.get("server"), entry.get("name"), entry.get("uri")
        if isinstance(server, str) and isinstance(name, str) and isinstance(uri, str):
            description = entry.get("description")
            found.append(Skill(f"{server}:{name}", _clip(description if isinstance(description, str) else ""),
                               f"mcp:{server}", uri))
    return found


def read_mcp_skill(gateway_url: str, name: str) -> Tuple[Skill, str, bool]:
    """(the MCP skill listed as ``name``, its SKILL.md, whether its content was checked against a digest).

    The gateway reads it from its server and checks it against the listing's
    digest and size; here its frontmatter must name and describe it as the
    listing does, as the Skills extension asks of a host.  Raises UserError.
    """
    from toolscript.errors import UserError
    from toolscript.gateway.client import GatewayClient

    problems: List[str] = []
    listed = mcp_skills(gateway_url, problems.append, wait=5.0)
    if problems:
        raise UserError(problems[0])
    wanted = name[len("mcp:"):] if name.startswith("mcp:") else name
    matches = [skill for skill in listed if skill.name == wanted]
    if not matches:
        known = ", ".join(skill.name for skill in listed) or "none"
        raise UserError(f"no MCP server offers a skill named {name!r} (offered: {known}); 'toolscript skills' lists them")
    skill = matches[0]
    server = skill.source[len("mcp:"):]
    answer = GatewayClient(gateway_url, timeout=30).get("/skills/read", server=server, uri=skill.path)
    text = answer.get("text") if isinstance(answer, dict) else None
    if not isinstance(text, str):
        raise UserError(f"the gateway gave no SKILL.md for {name!r}")
    try:
        lines, _ = frontmatter.split(text)
        meta = frontmatter.parse(lines) if lines is not None else {}
    except frontmatter.FrontmatterError as exc:
        raise UserError(f"the SKILL.md of {name!r} has no readable frontmatter ({exc}): not used") from None
    short = skill.name.split(":", 1)[1]
    if meta.get("name") != short or _clip(_text_of(meta.get("description"))) != skill.description:
        raise UserError(f"the SKILL.md of {name!r} names or describes it otherwise than its server's listing: not used")
    return skill, text, bool(answer.get("verified"))


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _project_dirs(project: str) -> Tuple[List[str], Optional[str]]:
    """(the project directory and its parents up to the git root, nearest first; the git root or None)."""
    dirs: List[str] = []
    directory = project
    while True:
        dirs.append(directory)
        if os.path.exists(os.path.join(directory, ".git")):
            return dirs, directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return dirs, None
        directory = parent


def _scan(directory: str, source: str, prefix: str, warn: Callable[[str], None], skip: Callable[[str], None]) -> List[Skill]:
    """The skills in ``directory/<name>/SKILL.md``, named ``prefix + <name>``; none read from outside ``directory``."""
    try:
        with os.scandir(directory) as listing:
            names = []
            for count, entry in enumerate(listing):
                if count >= MAX_SKILL_DIRS:
                    warn(f"{directory}: more than {MAX_SKILL_DIRS} entries; only the first {MAX_SKILL_DIRS} were looked at")
                    break
                names.append(entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        warn(f"{directory}: cannot list the skills there: {exc.strerror or exc}")
        return []
    root = _real(directory)
    skills = []
    for name in sorted(names):
        if name.startswith("."):
            continue
        path = os.path.join(directory, name, "SKILL.md")
        real = _real(path)
        if not real.startswith(root.rstrip(os.sep) + os.sep):
            # A symlink (the skill's directory or its SKILL.md) out of the skills directory: whatever
            # file it names, its words must not reach the model or the screen.
            if os.path.exists(real):
                skip(f"{path}: a symlink to a file outside {directory}; skipped (toolscript reads no SKILL.md outside its skills directory)")
            continue
        skill = _read_skill(path, real, prefix + name, source, warn)
        if skill is not None:
            skills.append(skill)
    return skills


def _read_regular(path: str, limit: int, follow: bool = True) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path`` (one more than allowed tells it was cut).

    Raises ``FileNotFoundError``/``NotADirectoryError`` when there is no such file
    and ``OSError`` otherwise; a FIFO, device or directory is refused without
    blocking (opened with O_NONBLOCK, checked with fstat).  ``follow=False``
    refuses a symlink as the last part of ``path`` (O_NOFOLLOW: ELOOP).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags if follow else flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_skill(path: str, real: str, name: str, source: str, warn: Callable[[str], None]) -> Optional[Skill]:
    """The skill in the SKILL.md at ``path``, read from ``real`` (its resolved path, checked to be in the
    skills directory); None when there is none or the model cannot invoke it."""
    try:
        # Not through a symlink put there since ``real`` was resolved and checked.
        raw = _read_regular(real, MAX_SKILL_BYTES, follow=False)
    except (FileNotFoundError, NotADirectoryError):
        return None  # a directory without a SKILL.md (or not a directory at all) is no skill
    except OSError as exc:
        warn(f"{path}: cannot read it: {exc.strerror or exc}; skipped")
        return None
    truncated = len(raw) > MAX_SKILL_BYTES
    raw = raw[:MAX_SKILL_BYTES]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (truncated and exc.start >= len(raw) - 3):
            warn(f"{path}: not valid UTF-8 (byte {exc.start}); skipped")
            return None
        text = raw[: exc.start].decode("utf-8")  # the cut fell inside a character
    body = ""  # stays empty when the frontmatter is never closed
    try:
        lines, body = frontmatter.split(text)
        if lines is None:
            # No frontmatter: Claude Code lists the file, described by its first line.  The file
            # may be anything (a hard link to ~/.netrc, a secret's first line); listing it keeps
            # the name the model can invoke, and no line of it goes to the model or the screen.
            body = ""
        meta = frontmatter.parse(lines) if lines is not None else {}
    except frontmatter.FrontmatterError as exc:
        limit = f" (only the first {MAX_SKILL_BYTES // 1024} KiB are read)" if truncated else ""
        # Claude Code still lists such a skill, described by its first body line; so do we.
        warn(f"{path}: {exc}{limit}; listed without its frontmatter")
        meta = {}
    invocation = meta.get("disable-model-invocation")
    if invocation is True or (isinstance(invocation, str) and invocation.strip().lower() == "true"):
        return None
    description = _text_of(meta.get("description"))
    if not description:
        description = _first_line(body)
    return Skill(name, _clip(description), source, os.path.abspath(path))


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(_text_of(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, dict) else ""


def _first_line(body: str) -> str:
    """The first non-blank body line without leading ``#`` marks: Claude Code's fallback description."""
    for line in body.split("\n"):
        line = line.strip()
        if line:
            return line.lstrip("#").strip()
    return ""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "\u2026"


MAX_JSON_BYTES = 16 * 1024 * 1024  # of a settings or plugins file


def _read_json(path: str, warn: Callable[[str], None]) -> Any:
    """The JSON document at ``path``; None when it is missing, or (with a warning) unreadable or invalid."""
    try:
        raw = _read_regular(path, MAX_JSON_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        warn(f"{path}: cannot read it: {exc.strerror or exc}; ignored")
        return None
    if len(raw) > MAX_JSON_BYTES:
        warn(f"{path}: larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB; ignored")
        return None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        warn(f"{path}: not valid UTF-8 (byte {exc.start}); ignored")
    except json.JSONDecodeError as exc:
        warn(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg}); ignored")
    except RecursionError:
        warn(f"{path}: invalid JSON (nested too deeply); ignored")
    return None


def enabled_plugins(config_dir: str, project: str, git_root: Optional[str], warn: Callable[[str], None]) -> Dict[str, bool]:
    """``{plugin id: enabled}`` from ``enabledPlugins`` in the user, project and local settings (later wins)."""
    layers = [
        os.path.join(config_dir, "settings.json"),
        os.path.join(project, ".claude", "settings.json"),
        os.path.join(project, ".claude", "settings.local.json"),
    ]
    if git_root is not None and git_root != project:
        layers.append(os.path.join(git_root, ".claude", "settings.local.json"))
    merged: Dict[str, bool] = {}
    for path in layers:
        document = _read_json(path, warn)
        section = document.get("enabledPlugins") if isinstance(document, dict) else None
        if isinstance(section, dict):
            merged.update({plugin_id: value for plugin_id, value in section.items() if isinstance(value, bool)})
    return merged


def install_applies(entry: Dict[str, Any], project: str) -> bool:
    """Whether an install entry is this project's own (user scope: every project's)."""
    scope = entry.get("scope") or "user"
    if scope == "user":
        return True
    there = entry.get("projectPath")
    if not isinstance(there, str) or not there:
        return False
    here, there = _real(project), _real(there)
    return here == there or here.startswith(there.rstrip(os.sep) + os.sep)


_SCOPE_RANK = {"local": 0, "project": 1, "user": 2}


def _install_path(entries: List[Dict[str, Any]], project: str) -> Optional[str]:
    """The installPath to read: this project's local, then project, then the user install, else another project's.

    Claude Code 2.1.337, given a plugin enabled in user settings whose only install entry
    is a project-scope one for ANOTHER project, loads the plugin from that entry in the
    same session (2.1.330 did not, and added a user-scope entry for later sessions).
    """
    installed = [entry for entry in entries if isinstance(entry.get("installPath"), str) and entry["installPath"]]
    usable = [entry for entry in installed if install_applies(entry, project)] or installed
    if not usable:
        return None
    return str(min(usable, key=lambda entry: _SCOPE_RANK.get(str(entry.get("scope") or "user"), 3))["installPath"])


def _enabled_plugin_roots(config_dir: str, project: str, git_root: Optional[str], warn: Callable[[str], None]) -> List[Tuple[str, str]]:
    """(plugin directory, plugin name) for every installed plugin enabled in this project, by id."""
    path = os.path.join(config_dir, "plugins", "installed_plugins.json")
    document = _read_json(path, warn)
    if document is None:
        return []
    try:
        installed = plugin_entries(document)
    except ValueError as exc:
        warn(f"{path}: unexpected format ({exc}); plugin skills skipped")
        return []
    enabled = enabled_plugins(config_dir, project, git_root, warn)
    markets: Dict[str, Any] = {}
    roots = []
    for plugin_id in sorted(installed):
        if enabled.get(plugin_id) is not True:
            continue  # installed but in no enabledPlugins (or false): disabled, as `claude plugin list` says
        install_path = _install_path(installed[plugin_id], project)
        if install_path is None:
            continue
        root = _folder_of(plugin_id, config_dir, markets, warn) or install_path
        roots.append((root, _plugin_name(root, plugin_id)))
    return roots


def _folder_of(plugin_id: str, config_dir: str, markets: Dict[str, Any], warn: Callable[[str], None]) -> Optional[str]:
    """The source folder of a plugin from a ``directory`` marketplace (what Claude Code reads), or None."""
    name, _, market = plugin_id.partition("@")
    if not market:
        return None
    if "known" not in markets:
        markets["known"] = _read_json(os.path.join(config_dir, "plugins", "known_marketplaces.json"), warn)
    known = markets["known"]
    record = known.get(market) if isinstance(known, dict) else None
    if not isinstance(record, dict):
        return None
    source = record.get("source")
    if not isinstance(source, dict) or source.get("source") != "directory":
        return None
    base = record.get("installLocation") or source.get("path")
    if not isinstance(base, str) or not base:
        return None
    if market not in markets:
        markets[market] = _read_json(os.path.join(base, ".claude-plugin", "marketplace.json"), warn)
    manifest = markets[market]
    plugins = manifest.get("plugins") if isinstance(manifest, dict) else None
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    plugin_root = metadata.get("pluginRoot") if isinstance(metadata, dict) else None
    for item in plugins if isinstance(plugins, list) else []:
        if isinstance(item, dict) and item.get("name") == name and isinstance(item.get("source"), str):
            candidates = [os.path.join(base, item["source"])]
            if isinstance(plugin_root, str) and plugin_root:
                candidates.append(os.path.join(base, plugin_root, item["source"]))
            for candidate in candidates:
                if os.path.isdir(candidate):
                    return os.path.normpath(candidate)
    return None


def _plugin_name(root: str, plugin_id: str) -> str:
    """``.claude-plugin/plugin.json``'s ``name`` (what Claude Code prefixes skills with), else the id before ``@``."""
    manifest = os.path.join(root, ".claude-plugin", "plugin.json")
    try:
        name = json.loads(_read_regular(manifest, 1024 * 1024).decode("utf-8-sig")).get("name")
        if isinstance(name, str) and name.strip():
            return name.strip()
    except (OSError, ValueError, AttributeError, RecursionError):
        pass
    return plugin_id.partition("@")[0]
