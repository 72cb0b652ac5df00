"""A scratch HOME with ~/.claude and a git project, shaped like Claude Code's own files, for skill discovery tests.

``Tree`` writes user, project and plugin skills, installed_plugins.json (v1 or
v2), marketplace files and enabledPlugins in each settings layer; ``add_skill``
writes one SKILL.md.
"""

import json
import os
from typing import Any, Dict, List, Optional


def write(path, text: str) -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return str(path)


def write_json(path, document: Any) -> str:
    return write(path, json.dumps(document, indent=2))


def add_skill(skills_dir, name: str, description: Optional[str] = None, extra: str = "", text: Optional[str] = None) -> str:
    """``skills_dir/name/SKILL.md``; the frontmatter names it and describes it, unless ``text`` is given."""
    if text is None:
        lines = [f"name: {name}"]
        if description is not None:
            lines.append(f"description: {description}")
        text = "---\n" + "\n".join(lines) + "\n" + extra + "---\n\n# " + name + "\n\nThe body.\n"
    return write(os.path.join(str(skills_dir), name, "SKILL.md"), text)


class Tree:
    """A HOME with ~/.claude, and a git project with a subdirectory, under tmp_path."""

    def __init__(self, root) -> None:
        self.root = str(root)
        self.home = os.path.join(self.root, "home")
        self.config = os.path.join(self.home, ".claude")
        self.project = os.path.join(self.root, "work", "project")
        self.sub = os.path.join(self.project, "src", "pkg")
        os.makedirs(self.sub)
        os.makedirs(os.path.join(self.project, ".git"))
        os.makedirs(self.config)
        self.plugins: Dict[str, List[Dict[str, Any]]] = {}

    @property
    def user_skills(self) -> str:
        return os.path.join(self.config, "skills")

    def project_skills(self, where: Optional[str] = None) -> str:
        return os.path.join(where or self.project, ".claude", "skills")

    def env(self, **extra: str) -> Dict[str, str]:
        return dict({"HOME": self.home}, **extra)

    def plugin(self, plugin_id: str, skill_names=("s",), manifest_name: Optional[str] = None, scope: str = "user",
               project_path: Optional[str] = None, version: str = "1.0.0") -> str:
        """Install ``plugin_id`` (a v2 entry) with one skill per name; returns its installPath.

        The plugin is written twice, as a real install leaves it: in the marketplace's
        clone (``plugins/marketplaces/<market>/<name>``, which Claude Code reads) and in
        the ``installPath`` copy under ``plugins/cache``.
        """
        name, _, market = plugin_id.partition("@")
        install = os.path.join(self.config, "plugins", "cache", market, name, version)
        for root in (install, os.path.join(self.config, "plugins", "marketplaces", market, name)):
            if manifest_name is not False:
                write_json(os.path.join(root, ".claude-plugin", "plugin.json"), {"name": manifest_name or name, "version": version})
            for skill_name in skill_names:
                add_skill(os.path.join(root, "skills"), skill_name, f"{name} skill {skill_name}")
        entry: Dict[str, Any] = {"scope": scope, "installPath": install, "version": version,
                                 "installedAt": "2026-11-24T00:00:00.000Z", "lastUpdated": "2026-11-24T00:00:00.000Z"}
        if project_path:
            entry["projectPath"] = project_path
        self.plugins.setdefault(plugin_id, []).append(entry)
        self.save_plugins()
        return install

    def save_plugins(self, version: int = 2) -> None:
        if version == 2:
            document: Dict[str, Any] = {"version": 2, "plugins": self.plugins}
        else:
            document = {"version": 1, "plugins": {pid: dict(entries[0], isLocal=True) for pid, entries in self.plugins.items()}}
            for entry in document["plugins"].values():
                entry.pop("scope", None)
        write_json(os.path.join(self.config, "plugins", "installed_plugins.json"), document)
        markets = {pid.partition("@")[2] for pid in self.plugins}
        # The marketplace files a real install leaves (Claude Code loads no plugin its marketplace does not list).
        for market in markets:
            listed = [{"name": pid.partition("@")[0], "source": "./" + pid.partition("@")[0]} for pid in self.plugins if pid.endswith("@" + market)]
            write_json(os.path.join(self.config, "plugins", "marketplaces", market, ".claude-plugin", "marketplace.json"),
                       {"name": market, "owner": {"name": "test"}, "plugins": listed})
        write_json(os.path.join(self.config, "plugins", "known_marketplaces.json"), {
            market: {"source": {"source": "github", "repo": f"example/{market}"},
                     "installLocation": os.path.join(self.config, "plugins", "marketplaces", market),
                     "lastUpdated": "2026-11-24T00:00:00.000Z"} for market in markets})

    def settings(self, layer: str, enabled: Dict[str, bool], where: Optional[str] = None) -> str:
        path = {
            "user": os.path.join(self.config, "settings.json"),
            "project": os.path.join(where or self.project, ".claude", "settings.json"),
            "local": os.path.join(where or self.project, ".claude", "settings.local.json"),
        }[layer]
        return write_json(path, {"enabledPlugins": enabled})
