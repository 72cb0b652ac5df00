"""Skill discovery (``toolscript.claude_code.skills``) and ``toolscript skills``.

The frontmatter parser against each YAML form SKILL.md files use (and hostile
input); discovery over scratch trees shaped like Claude Code's own files (user,
project and plugin skills, installed_plugins.json v1 and v2, enabledPlugins in
each settings layer); the command end to end; and one check against the real
``claude`` binary: the plugins it calls enabled and the skills it lists to the
model are the ones ``discover()`` finds.
"""

import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

import peers
from conftest import missing_prerequisite
from fake_anthropic import FakeAnthropic
from toolscript.claude_code import skills
from toolscript.claude_code.skills import FrontmatterError, Skill, discover, parse_frontmatter


def fm(body: str) -> Dict[str, Any]:
    """parse_frontmatter of ``body`` between --- fences."""
    return parse_frontmatter("---\n" + body + "---\nthe body\n")


# --- the parser: each scalar form ------------------------------------------------------------


def test_plain_single_and_double_quoted_scalars():
    assert fm("a: plain words here\nb: 'single ''quoted'' # not a comment'\nc: \"double \\\"quoted\\\"\"\n") == {
        "a": "plain words here",
        "b": "single 'quoted' # not a comment",
        "c": 'double "quoted"',
    }


def test_double_quoted_escapes():
    assert fm('a: "tab\\tnl\\nbs\\\\ x\\x41 u\\u00e9 U\\U0001F600 slash\\/"\n') == {"a": "tab\tnl\nbs\\ xA u\u00e9 U\U0001F600 slash/"}


def test_plain_value_may_contain_colon_space_as_claude_code_reads_it():
    # Strict YAML refuses this; Claude Code lists the whole text, and SKILL.md files do it a lot.
    assert fm("description: Use when: the user asks\n") == {"description": "Use when: the user asks"}


def test_plain_and_quoted_scalars_over_several_lines_are_folded():
    assert fm("a: first\n  second\n\n  third\nb: \"one\n  two\\\n  three\"\nc: 'x\n\n  y'\n") == {
        "a": "first second\nthird",
        "b": "one twothree",
        "c": "x\ny",
    }


def test_scalar_types_bool_null_int_converted_other_strings_kept():
    assert fm("t: true\nT: True\nf: false\nn: null\ntilde: ~\nempty:\ni: 42\nneg: -7\nfl: 1.5\nyes: yes\nq: 'true'\n") == {
        "t": True, "T": True, "f": False, "n": None, "tilde": None, "empty": None, "i": 42, "neg": -7,
        "fl": "1.5", "yes": "yes", "q": "true",
    }


@pytest.mark.parametrize(
    "header, expected",
    [
        ("|", "line one\n  indented\n\nline three\n"),  # clip: one final newline
        ("|-", "line one\n  indented\n\nline three"),  # strip: none
        ("|+", "line one\n  indented\n\nline three\n\n\n"),  # keep: every trailing one
        (">", "line one\n  indented\n\nline three\n"),  # folded; more-indented line kept as is
        (">-", "line one\n  indented\n\nline three"),
        (">+", "line one\n  indented\n\nline three\n\n\n"),
    ],
)
def test_block_scalars_with_chomping(header, expected):
    text = f"a: {header}\n  line one\n    indented\n\n  line three\n\n\nnext: 1\n"
    assert fm(text) == {"a": expected, "next": 1}


def test_folded_block_joins_lines_and_keeps_paragraphs():
    assert fm("description: >\n  Use this skill\n  when deploying.\n\n  Second paragraph.\nname: x\n") == {
        "description": "Use this skill when deploying.\nSecond paragraph.\n",
        "name": "x",
    }


def test_block_scalar_indentation_indicator_and_comment():
    assert fm("a: |2 # a comment\n    four spaces\n  two spaces\n") == {"a": "  four spaces\ntwo spaces\n"}


def test_comments_anywhere_but_inside_quotes():
    assert fm("# leading comment\na: x # trailing\n  # indented comment\nb: 'y # kept' # dropped\nc: z#kept\n") == {
        "a": "x", "b": "y # kept", "c": "z#kept",
    }


def test_flow_and_block_lists_and_nested_mappings():
    text = (
        "flow: [a, 'b, c', \"d\", 3, ]\n"
        "map: {x: 1, 'y': two}\n"
        "empty: []\n"
        "block:\n  - one\n  - two\n"
        "same_indent:\n- p\n- q\n"
        "objects:\n  - k: v\n    k2: v2\n  - - n1\n    - n2\n"
        "metadata:\n  author: me\n  tags:\n    - t\n"
        "multi: [a,\n  b]\n"
    )
    assert fm(text) == {
        "flow": ["a", "b, c", "d", 3],
        "map": {"x": 1, "y": "two"},
        "empty": [],
        "block": ["one", "two"],
        "same_indent": ["p", "q"],
        "objects": [{"k": "v", "k2": "v2"}, ["n1", "n2"]],
        "metadata": {"author": "me", "tags": ["t"]},
        "multi": ["a", "b"],
    }


def test_crlf_and_bom():
    text = "\ufeff---\r\nname: x\r\ndescription: |\r\n  two\r\n  lines\r\n---\r\nbody\r\n"
    assert parse_frontmatter(text) == {"name": "x", "description": "two\nlines\n"}


def test_no_frontmatter_is_an_empty_dict():
    assert parse_frontmatter("# Just a body\n\nno fences\n") == {}
    assert parse_frontmatter("") == {}
    assert parse_frontmatter("---\n---\nbody") == {}
    assert parse_frontmatter("text\n---\na: b\n---\n") == {}  # the fence must be the first line


@pytest.mark.parametrize(
    "body, line, words",
    [
        ("name: x\n\tdescription: y\n", 3, "tab in the indentation"),
        ("name: x\nname: y\n", 3, "duplicate key 'name'"),
        ("a: ok\ndescription: \"never closed\nb: c\n", 3, "never closed"),
        ("a: 'never closed\n", 2, "never closed"),
        ("a: [x, y\nb: c\n", 2, "never closed"),
        ("a: {x: 1\n", 2, "never closed"),
        ("a: b\n    c: d\nplain line\n", 4, "expected 'key: value'"),
        ("a:\n  b:\n    - x\n   c: 2\n", 5, "unexpected indentation"),
        ("a: &anchor x\n", 2, "anchors, aliases and tags"),
        ("a: *alias\n", 2, "anchors, aliases and tags"),
        ("a: !!str x\n", 2, "anchors, aliases and tags"),
        ('a: "bad \\q escape"\n', 2, "unknown escape \\q"),
        ('a: "bad \\x4"\n', 2, "needs 2 hex digits"),
        ("a: |x\n  y\n", 2, "block scalar header"),
        ("a: 'x' trailing\n", 2, "after the closing quote"),
        ("a: [[nested]]\n", 2, "nested flow collections"),
        ("a: [x,, y]\n", 2, "empty entry"),
        ("a: {k: 1, k: 2}\n", 2, "duplicate key 'k'"),
        ("- a list\n- at the top\n", 2, "must be 'key: value' lines"),
        ("just some text\n", 2, "must be 'key: value' lines"),
        ("a: 1\nb:\n  - x\n  y: 2\n", 5, "unexpected indentation"),
    ],
)
def test_malformed_frontmatter_names_the_line(body, line, words):
    with pytest.raises(FrontmatterError) as caught:
        fm(body)
    message = str(caught.value)
    assert message.startswith(f"line {line}: "), message
    assert words in message, message
    assert "\n" not in message


def test_unclosed_frontmatter_is_an_error_at_line_1():
    with pytest.raises(FrontmatterError, match=r"^line 1: .*never closed"):
        parse_frontmatter("---\nname: x\ndescription: y\n")


# --- the parser: hostile input ------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_hostile_sizes_are_parsed_or_refused_without_hanging():
    # 1 MB on one line, as a plain and as a quoted value.
    assert fm("a: " + "x" * 1_000_000 + "\n") == {"a": "x" * 1_000_000}
    assert len(fm('a: "' + "y" * 1_000_000 + '"\n')["a"]) == 1_000_000
    # 10k keys, and a 10k-line block scalar.
    many = "".join(f"k{i}: v{i}\n" for i in range(10_000))
    assert len(fm(many)) == 10_000
    assert fm("a: |\n" + "  line\n" * 10_000)["a"].count("\n") == 10_000
    # A 1 MB quoted string that never closes, and 10k lines of an unclosed flow list.
    with pytest.raises(FrontmatterError, match="never closed"):
        fm('a: "' + "z" * 1_000_000 + "\nb: c\n")
    with pytest.raises(FrontmatterError, match="never closed"):
        fm("a: [" + "x,\n" * 10_000)


@pytest.mark.timeout(60)
def test_long_flow_collections_are_parsed_in_linear_time():
    # Growing a string one character at a time (or slicing the line per quoted entry)
    # made these take minutes; the hard limit above is the assertion.
    assert fm("a: [" + "x" * 4_000_000 + "]\n") == {"a": ["x" * 4_000_000]}
    assert fm("a: {k: " + "y" * 4_000_000 + "}\n") == {"a": {"k": "y" * 4_000_000}}
    assert fm("a: [" + '"q", ' * 400_000 + "]\n") == {"a": ["q"] * 400_000}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "deep",
    [
        "".join("  " * i + f"k{i}:\n" for i in range(5000)),  # 5000 nested mappings
        "".join("  " * i + "-\n" for i in range(5000)),  # 5000 nested lists
        "a: " + "- " * 5000 + "x\n",  # one line, but no: a value cannot start a block list
        "a:\n  " + "- " * 5000 + "x\n",  # 5000 lists opened on one line
        "a: " + "[" * 5000 + "\n",
    ],
    ids=["mappings", "lists", "dashes-after-key", "dashes-on-one-line", "brackets"],
)
def test_deep_nesting_is_refused_not_recursed(deep):
    try:
        value = fm(deep)
    except FrontmatterError as exc:
        assert str(exc).startswith("line "), exc
    else:
        assert deep.startswith("a: - ") and value == {"a": "- " * 4999 + "- x"}  # a plain scalar, as Claude Code reads it


# --- discovery: a scratch tree ---------------------------------------------------------------------


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


@pytest.fixture
def tree(tmp_path) -> Tree:
    return Tree(tmp_path)


def names(found: List[Skill]) -> List[str]:
    return [skill.name for skill in found]


def run_discover(tree: Tree, cwd: Optional[str] = None, **env: str):
    warnings: List[str] = []
    found = discover(cwd or tree.project, tree.env(**env), warnings)
    return found, warnings


def test_user_project_and_plugin_skills_with_their_sources(tree):
    user = add_skill(tree.user_skills, "mine", "A user skill")
    proj = add_skill(tree.project_skills(), "ours", "A project skill")
    tree.plugin("tools@market", ["deploy"])
    tree.settings("user", {"tools@market": True})
    found, warnings = run_discover(tree)
    assert warnings == []
    assert found == [
        Skill("mine", "A user skill", "user", user),
        Skill("ours", "A project skill", "project", proj),
        Skill("tools:deploy", "tools skill deploy", "plugin",
              os.path.join(tree.config, "plugins", "cache", "market", "tools", "1.0.0", "skills", "deploy", "SKILL.md")),
    ]


def test_claude_config_dir_moves_user_skills_settings_and_plugins(tree):
    elsewhere = os.path.join(tree.root, "cc")
    add_skill(os.path.join(tree.config, "skills"), "in-home")
    tree.config = elsewhere
    add_skill(tree.user_skills, "in-config-dir")
    tree.plugin("p@m")
    tree.settings("user", {"p@m": True})
    found, _ = run_discover(tree, CLAUDE_CONFIG_DIR=elsewhere)
    assert names(found) == ["in-config-dir", "p:s"]
    assert skills.claude_config_dir({"HOME": "/h"}) == "/h/.claude"
    assert skills.claude_config_dir({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/x"}) == "/x"


def test_project_skills_from_each_parent_up_to_the_git_root_nearest_first(tree):
    add_skill(tree.project_skills(tree.sub), "here", "from the subdirectory")
    add_skill(tree.project_skills(os.path.dirname(tree.sub)), "middle")
    add_skill(tree.project_skills(), "root")
    add_skill(tree.project_skills(), "here", "from the git root")
    add_skill(tree.project_skills(os.path.dirname(tree.project)), "above-the-git-root")
    found, _ = run_discover(tree, cwd=tree.sub)
    assert names(found) == ["here", "middle", "root"]
    assert found[0].description == "from the subdirectory"


def test_outside_git_every_parent_counts(tmp_path):
    home = tmp_path / "home"
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    add_skill(tmp_path / "a" / ".claude" / "skills", "from-a")
    add_skill(deep / ".claude" / "skills", "from-c")
    found = [name for name in names(discover(str(deep), {"HOME": str(home)})) if name.startswith("from-")]
    assert found == ["from-a", "from-c"]


def test_claude_project_dir_beats_cwd(tree):
    other = os.path.join(tree.root, "other")
    os.makedirs(os.path.join(other, ".git"))
    add_skill(tree.project_skills(other), "other-project")
    add_skill(tree.project_skills(), "this-project")
    found, _ = run_discover(tree, cwd=tree.project, CLAUDE_PROJECT_DIR=other)
    assert names(found) == ["other-project"]


def test_duplicates_keep_user_over_project_and_plugins_are_namespaced(tree):
    add_skill(tree.user_skills, "deploy", "user deploy")
    add_skill(tree.project_skills(), "deploy", "project deploy")
    tree.plugin("ops@m", ["deploy"])
    tree.plugin("zz@m", ["deploy"], manifest_name="ops")  # the same manifest name: the first id (sorted) wins
    tree.settings("user", {"ops@m": True, "zz@m": True})
    found, _ = run_discover(tree)
    assert [(s.name, s.description) for s in found] == [("deploy", "user deploy"), ("ops:deploy", "ops skill deploy")]


def test_skill_name_is_the_directory_name_even_when_the_frontmatter_says_otherwise(tree):
    add_skill(tree.user_skills, "dir-name", text="---\nname: other-name\ndescription: d\n---\n")
    assert names(run_discover(tree)[0]) == ["dir-name"]


def test_disable_model_invocation_skills_are_left_out(tree):
    add_skill(tree.user_skills, "manual-only", "d", extra="disable-model-invocation: true\n")
    add_skill(tree.user_skills, "quoted-true", "d", extra="disable-model-invocation: 'true'\n")
    add_skill(tree.user_skills, "explicitly-allowed", "d", extra="disable-model-invocation: false\n")
    add_skill(tree.user_skills, "not-user-invocable", "d", extra="user-invocable: false\n")
    assert names(run_discover(tree)[0]) == ["explicitly-allowed", "not-user-invocable"]


def test_description_falls_back_to_the_first_body_line_and_is_collapsed_and_clipped(tree):
    add_skill(tree.user_skills, "empty-description", text="---\nname: x\ndescription: ''\n---\nFirst line.\n")
    add_skill(tree.user_skills, "block", text="---\ndescription: |\n  two\n    lines   here\n---\n")
    add_skill(tree.user_skills, "long", "w" * 3000)
    add_skill(tree.user_skills, "nothing", text="")
    found = {s.name: s.description for s in run_discover(tree)[0]}
    assert found["empty-description"] == "First line."
    assert found["block"] == "two lines here"
    assert len(found["long"]) == skills.MAX_DESCRIPTION and found["long"].endswith("\u2026")
    assert found["nothing"] == ""


def test_plugins_v1_and_v2_files(tree):
    tree.plugin("a@m", ["one"])
    tree.plugin("b@m", ["two"])
    tree.settings("user", {"a@m": True, "b@m": True})
    v2 = names(run_discover(tree)[0])
    tree.save_plugins(version=1)
    with open(os.path.join(tree.config, "plugins", "installed_plugins.json")) as f:
        assert json.load(f)["plugins"]["a@m"]["isLocal"] is True  # really the v1 shape
    assert names(run_discover(tree)[0]) == v2 == ["a:one", "b:two"]


def test_plugin_name_is_the_manifest_name_else_the_id_before_the_at(tree):
    tree.plugin("plug-a@m", manifest_name="manifest-a")
    tree.plugin("plug-b@m", manifest_name=False)
    tree.settings("user", {"plug-a@m": True, "plug-b@m": True})
    assert names(run_discover(tree)[0]) == ["manifest-a:s", "plug-b:s"]


def test_installed_but_in_no_enabled_plugins_is_disabled(tree):
    tree.plugin("absent@m")
    tree.plugin("off@m")
    tree.plugin("on@m")
    tree.settings("user", {"off@m": False, "on@m": True})
    assert names(run_discover(tree)[0]) == ["on:s"]


@pytest.mark.parametrize(
    "user, project, local, enabled",
    [
        (True, None, None, True),
        (True, False, None, False),  # project beats user
        (False, True, None, True),
        (None, True, False, False),  # local beats project
        (False, False, True, True),  # local beats both
        (None, None, True, True),
    ],
)
def test_enabled_plugins_layers_local_over_project_over_user(tree, user, project, local, enabled):
    tree.plugin("p@m")
    for layer, value in (("user", user), ("project", project), ("local", local)):
        if value is not None:
            tree.settings(layer, {"p@m": value})
    assert names(run_discover(tree)[0]) == (["p:s"] if enabled else [])


def test_project_settings_come_from_the_project_dir_but_the_git_roots_local_settings_also_apply(tree):
    tree.plugin("root-project@m")
    tree.plugin("root-local@m")
    tree.plugin("both-local@m")
    tree.settings("project", {"root-project@m": True})  # the git root's settings.json: not read from a subdirectory
    tree.settings("local", {"root-local@m": True, "both-local@m": False})  # the git root's settings.local.json: read, and wins
    tree.settings("local", {"both-local@m": True}, where=tree.sub)
    assert names(run_discover(tree, cwd=tree.sub)[0]) == ["root-local:s"]
    assert names(run_discover(tree, cwd=tree.project)[0]) == ["root-local:s", "root-project:s"]


def test_project_and_local_scoped_installs_are_enabled_by_their_projects_settings(tree):
    other = os.path.join(tree.root, "other")
    os.makedirs(os.path.join(other, ".git"))
    tree.plugin("proj@m", ["p"], scope="project", project_path=tree.project)
    tree.plugin("loc@m", ["l"], scope="local", project_path=tree.project)
    tree.settings("project", {"proj@m": True})  # what `claude plugin install --scope project` writes
    tree.settings("local", {"loc@m": True})  # and --scope local
    assert names(run_discover(tree, cwd=tree.project)[0]) == ["loc:l", "proj:p"]
    assert names(run_discover(tree, cwd=tree.sub)[0]) == ["loc:l"]  # the git root's local settings apply below it
    assert names(run_discover(tree, cwd=other)[0]) == []


def test_the_install_entry_of_this_project_is_read_first(tree):
    other = os.path.join(tree.root, "other")
    os.makedirs(os.path.join(other, ".git"))
    tree.plugin("p@m", ["from-user"])
    tree.plugin("p@m", ["from-local"], scope="local", project_path=tree.project, version="2.0.0")
    tree.plugin("q@m", ["only-elsewhere"], scope="project", project_path=other)
    tree.settings("user", {"p@m": True, "q@m": True})
    assert names(run_discover(tree)[0]) == ["p:from-local"]
    assert names(run_discover(tree, cwd=other)[0]) == ["p:from-user", "q:only-elsewhere"]


def test_the_hooks_own_plugin_counts_even_when_not_installed(tree):
    # A hook's environment names the plugin it runs from; with --plugin-dir it is in no
    # installed_plugins.json, yet the session lists its skills.
    dev = os.path.join(tree.root, "dev-plugin")
    add_skill(os.path.join(dev, "skills"), "helper", "from --plugin-dir")
    assert names(run_discover(tree, CLAUDE_PLUGIN_ROOT=dev)[0]) == ["dev-plugin:helper"]
    write_json(os.path.join(dev, ".claude-plugin", "plugin.json"), {"name": "devtools"})
    assert names(run_discover(tree, CLAUDE_PLUGIN_ROOT=dev)[0]) == ["devtools:helper"]
    # Installed and enabled as well: listed once.
    install = tree.plugin("devtools@m", ["helper"])
    tree.settings("user", {"devtools@m": True})
    found = run_discover(tree, CLAUDE_PLUGIN_ROOT=install)[0]
    assert [(s.name, s.path.startswith(install)) for s in found] == [("devtools:helper", True)]
    assert names(run_discover(tree, CLAUDE_PLUGIN_ROOT=os.path.join(tree.root, "missing"))[0]) == ["devtools:helper"]


def test_directory_marketplace_plugins_are_read_from_their_folder(tree):
    install = tree.plugin("live@dev")
    market = os.path.join(tree.root, "market")
    write_json(os.path.join(market, ".claude-plugin", "marketplace.json"),
               {"name": "dev", "owner": {"name": "t"}, "plugins": [{"name": "live", "source": "./plugins/live"}]})
    folder = os.path.join(market, "plugins", "live")
    write_json(os.path.join(folder, ".claude-plugin", "plugin.json"), {"name": "live-edited"})
    add_skill(os.path.join(folder, "skills"), "s", "edited in the folder")
    write_json(os.path.join(tree.config, "plugins", "known_marketplaces.json"),
               {"dev": {"source": {"source": "directory", "path": market}, "installLocation": market}})
    tree.settings("user", {"live@dev": True})
    found = run_discover(tree)[0]
    assert [(s.name, s.description) for s in found] == [("live-edited:s", "edited in the folder")]
    assert found[0].path.startswith(folder) and not found[0].path.startswith(install)


def test_malformed_and_unreadable_files_warn_by_path_and_the_rest_are_found(tree):
    broken = add_skill(tree.user_skills, "broken", text="---\nname: broken\ndescription: \"never closed\n---\nBody line.\n")
    tabbed = add_skill(tree.user_skills, "tabbed", text="---\nname: t\n\tdescription: x\n---\n")
    binary = write(os.path.join(tree.user_skills, "binary", "SKILL.md"), "")
    with open(binary, "wb") as f:
        f.write(b"---\ndescription: \xff\xfe\n---\n")
    os.makedirs(os.path.join(tree.user_skills, "dir-not-file", "SKILL.md"))
    fifo = os.path.join(tree.user_skills, "fifo", "SKILL.md")
    os.makedirs(os.path.dirname(fifo))
    os.mkfifo(fifo)
    add_skill(tree.user_skills, "good", "still found")
    found, warnings = run_discover(tree)
    # Claude Code lists a skill whose frontmatter does not parse (described by its body); so do we.
    assert [(s.name, s.description) for s in found] == [("broken", "Body line."), ("good", "still found"), ("tabbed", "")]
    assert len(warnings) == 5, warnings
    text = "\n".join(warnings)
    for path, words in ((broken, "line 3: a double-quoted string"), (tabbed, "line 3: a tab"), (binary, "not valid UTF-8"),
                        (fifo, "not a regular file"), (os.path.join(tree.user_skills, "dir-not-file", "SKILL.md"), "not a regular file")):
        assert any(w.startswith(path + ": ") and words in w for w in warnings), (path, text)


def test_bad_json_files_warn_and_do_not_stop_discovery(tree):
    add_skill(tree.user_skills, "good")
    write(os.path.join(tree.config, "plugins", "installed_plugins.json"), "{not json")
    write(os.path.join(tree.config, "settings.json"), "[1, 2")
    found, warnings = run_discover(tree)
    assert names(found) == ["good"]
    assert any("installed_plugins.json:1:2: invalid JSON" in w for w in warnings), warnings
    write_json(os.path.join(tree.config, "plugins", "installed_plugins.json"), {"version": 2, "plugins": []})
    found, warnings = run_discover(tree)
    assert names(found) == ["good"] and any("unexpected format" in w for w in warnings), warnings


@pytest.mark.timeout(60)
def test_fifo_settings_and_manifests_do_not_block(tree):
    tree.plugin("p@m")
    tree.settings("user", {"p@m": True})
    manifest = os.path.join(tree.config, "plugins", "cache", "m", "p", "1.0.0", ".claude-plugin", "plugin.json")
    os.unlink(manifest)
    os.mkfifo(manifest)  # the plugin name falls back to the id
    local = os.path.join(tree.project, ".claude", "settings.local.json")
    os.makedirs(os.path.dirname(local))
    os.mkfifo(local)
    found, warnings = run_discover(tree)
    assert names(found) == ["p:s"]
    assert warnings == [f"{local}: cannot read it: not a regular file; ignored"]


def test_missing_directories_are_fine_and_silent(tmp_path):
    warnings: List[str] = []
    assert discover(str(tmp_path / "no" / "such" / "dir"), {"HOME": str(tmp_path / "nohome")}, warnings) == []
    assert warnings == []


def test_a_skill_file_without_frontmatter_is_listed_without_a_description(tree):
    # Claude Code describes it by its first line; such a file need not be a skill at all (a hard link to
    # ~/.netrc), so none of its lines becomes a description.  The name stays: the model can invoke it.
    add_skill(tree.user_skills, "no-frontmatter", text="\n\n# The Title\n\nmore\n")
    add_skill(tree.project_skills(), "netrc", text="machine example.com login me password NETRC-SECRET\n")
    add_skill(tree.user_skills, "with-frontmatter", text="---\nname: w\n---\n# Body Title\n")
    found, warnings = run_discover(tree)
    assert [(s.name, s.description) for s in found] == [("netrc", ""), ("no-frontmatter", ""), ("with-frontmatter", "Body Title")]
    assert warnings == []


@pytest.mark.timeout(60)
def test_symlinks_inside_a_skills_directory_are_followed_and_loops_do_not_hang(tree):
    add_skill(tree.user_skills, "real", "the real one")
    os.symlink(os.path.join(tree.user_skills, "real"), os.path.join(tree.user_skills, "alias"))  # a skill dir inside
    os.makedirs(os.path.join(tree.user_skills, "file-alias"))
    os.symlink(os.path.join("..", "real", "SKILL.md"), os.path.join(tree.user_skills, "file-alias", "SKILL.md"))  # relative
    os.symlink(tree.user_skills, os.path.join(tree.user_skills, "loop"))  # skills/loop -> skills
    os.symlink(os.path.join(tree.user_skills, "self"), os.path.join(tree.user_skills, "self"))  # ELOOP
    os.makedirs(os.path.join(tree.user_skills, "selfmd"))
    os.symlink(os.path.join(tree.user_skills, "selfmd", "SKILL.md"), os.path.join(tree.user_skills, "selfmd", "SKILL.md"))
    os.makedirs(os.path.join(tree.project, ".claude"))
    os.symlink(tree.user_skills, tree.project_skills())  # the project's skills dir is the user's: read once
    skipped: List[str] = []
    warnings: List[str] = []
    found = discover(tree.project, tree.env(), warnings, skipped)
    assert [(s.name, s.source, s.description) for s in found] == [
        ("alias", "user", "the real one"), ("file-alias", "user", "the real one"), ("real", "user", "the real one")]
    assert skipped == []
    # The two loops are named (a file that cannot be opened); nothing else is.
    assert len(warnings) == 2, warnings
    assert all("Too many levels of symbolic links" in w or "loop" in w.lower() for w in warnings), warnings
    assert {w.split(": ", 1)[0] for w in warnings} == {os.path.join(tree.user_skills, "self", "SKILL.md"),
                                                       os.path.join(tree.user_skills, "selfmd", "SKILL.md")}


def test_a_skills_directory_that_is_itself_a_symlink_is_read(tree):
    dotfiles = os.path.join(tree.root, "dotfiles", "skills")
    add_skill(dotfiles, "kept", "from the dotfiles")
    os.symlink(dotfiles, tree.user_skills)
    assert [(s.name, s.description) for s in run_discover(tree)[0]] == [("kept", "from the dotfiles")]


SECRET = "password HUNTER2-SECRET"  # the first line of a file a skill links to


def linked_out_tree(tree: Tree) -> Dict[str, str]:
    """Skills that link out of their skills directory, each to a file holding SECRET: name -> the link's path."""
    outside = os.path.join(tree.root, "outside")
    netrc = write(os.path.join(outside, ".netrc"), f"machine example.com login me {SECRET}\n")
    framed = add_skill(os.path.join(outside, "framed"), "framed", f"{SECRET} in a frontmatter")
    links = {}
    # A project's SKILL.md linked to the user's ~/.netrc, relative as a cloned repository holds it.
    links["netrc-link"] = os.path.join(tree.project_skills(), "netrc-link", "SKILL.md")
    os.makedirs(os.path.dirname(links["netrc-link"]))
    os.symlink(os.path.relpath(netrc, os.path.dirname(links["netrc-link"])), links["netrc-link"])
    # A project skill DIRECTORY linked out, to a SKILL.md with a frontmatter.
    os.symlink(os.path.dirname(framed), os.path.join(tree.project_skills(), "dir-link"))
    links["dir-link"] = os.path.join(tree.project_skills(), "dir-link", "SKILL.md")
    # A project SKILL.md linked to another skills directory's file (the user's): outside its own.
    user_skill = add_skill(tree.user_skills, "mine", f"{SECRET} of the user")
    links["cross-link"] = os.path.join(tree.project_skills(), "cross-link", "SKILL.md")
    os.makedirs(os.path.dirname(links["cross-link"]))
    os.symlink(user_skill, links["cross-link"])
    # A plugin's skill linked out of the plugin's skills directory.
    install = tree.plugin("plug@m", ["fine"])
    tree.settings("user", {"plug@m": True})
    for root in (install, os.path.join(tree.config, "plugins", "marketplaces", "m", "plug")):
        os.symlink(os.path.dirname(framed), os.path.join(root, "skills", "plugin-link"))
    links["plug:plugin-link"] = os.path.join(install, "skills", "plugin-link", "SKILL.md")  # read from its installPath
    add_skill(tree.project_skills(), "pdf-helper", "Fill in PDF forms")
    return links


def test_a_skill_linked_out_of_its_skills_directory_is_never_read(tree):
    links = linked_out_tree(tree)
    skipped: List[str] = []
    warnings: List[str] = []
    found = discover(tree.project, tree.env(), warnings, skipped)
    assert names(found) == ["mine", "pdf-helper", "plug:fine"]
    assert warnings == []
    # Each one is named by its link, with the reason, and nothing of the file it names.
    assert sorted(line.split(": ", 1)[0] for line in skipped) == sorted(links.values())
    assert all("a symlink to a file outside" in line for line in skipped), skipped
    assert SECRET not in json.dumps([s._asdict() for s in found if s.name != "mine"]) + "".join(skipped)


def test_no_output_of_skills_or_the_suggestion_hook_shows_a_linked_out_file(tree, run_cli):
    linked_out_tree(tree)
    os.unlink(os.path.join(tree.user_skills, "mine", "SKILL.md"))  # only the links can hold the secret now
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "ANTHROPIC_", "TOOLSCRIPT_"))}
    env.update(HOME=tree.home, TOOLSCRIPT_STATE_DIR=os.path.join(tree.root, "state"))
    table = run_cli("skills", env=env, cwd=tree.project)
    listed = run_cli("skills", "--json", env=env, cwd=tree.project)
    assert table.returncode == listed.returncode == 0, table.stderr + listed.stderr
    assert [s["name"] for s in json.loads(listed.stdout)] == ["pdf-helper", "plug:fine"]
    assert os.path.join("netrc-link", "SKILL.md") + ": a symlink to a file outside" in table.stderr
    prompt = "use my password for example.com and fill in the pdf form"
    event = json.dumps({"session_id": "s-links", "cwd": tree.project, "prompt": prompt, "hook_event_name": "UserPromptSubmit"})
    local = run_cli("hook", "user-prompt-submit", env=dict(env, TOOLSCRIPT_SUGGEST_BACKEND="local"), input=event)
    reply = {"text": json.dumps({"skills": ["netrc-link", "dir-link", "cross-link", "plug:plugin-link", "pdf-helper"], "toolQueries": []})}
    with FakeAnthropic([reply]) as api:
        api_env = dict(env, TOOLSCRIPT_SUGGEST_BACKEND="api", ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="sk-ant-test-key")
        model = run_cli("hook", "user-prompt-submit", env=api_env, input=event)
        sent = json.dumps([r.get("body") for r in api.requests])
    assert model.returncode == local.returncode == 0, model.stderr + local.stderr
    assert "pdf-helper" in sent  # the model was asked, with the skills that are listed
    injected = json.loads(model.stdout)["hookSpecificOutput"]["additionalContext"]
    assert 'Skill("pdf-helper")' in injected and "link" not in injected
    for text in (table.stdout, table.stderr, listed.stdout, listed.stderr, local.stdout, local.stderr, sent, model.stdout, model.stderr):
        assert "HUNTER2" not in text, text


@pytest.mark.timeout(60)
def test_hostile_tree_is_bounded(tree):
    # A 1 MB SKILL.md whose frontmatter never ends inside the part that is read.
    huge = write(os.path.join(tree.user_skills, "huge", "SKILL.md"), "---\ndescription: x\n" + "k: v\n" * 250_000)
    # A long frontmatter that does end in time, with a multi-byte character cut at the limit.
    big = "---\ndescription: fits\n---\n" + "\u00e9" * (skills.MAX_SKILL_BYTES)
    write(os.path.join(tree.user_skills, "big", "SKILL.md"), big)
    for i in range(skills.MAX_SKILL_DIRS + 5):
        os.makedirs(os.path.join(tree.project_skills(), f"d{i:04d}"))
    found, warnings = run_discover(tree)
    assert [(s.name, s.description) for s in found] == [("big", "fits"), ("huge", "")]
    assert any(w.startswith(huge + ": line 1:") and "first 64 KiB" in w for w in warnings), warnings
    assert any(f"more than {skills.MAX_SKILL_DIRS} entries" in w for w in warnings), warnings


def test_plugin_entries_reads_v1_and_v2_alike():
    v1 = {"version": 1, "plugins": {"a@m": {"version": "1"}}}
    v2 = {"version": 2, "plugins": {"a@m": [{"scope": "user"}, {"scope": "local"}, "junk"]}}
    assert skills.plugin_entries(v1) == {"a@m": [{"version": "1"}]}
    assert [e["scope"] for e in skills.plugin_entries(v2)["a@m"]] == ["user", "local"]
    with pytest.raises(ValueError):
        skills.plugin_entries({"version": 2, "plugins": []})


# --- the command ------------------------------------------------------------------------------------


def command_tree(tree: Tree) -> Dict[str, str]:
    add_skill(tree.user_skills, "mine", "A user skill with a description long enough to be abbreviated in the table " * 2)
    add_skill(tree.project_skills(), "ours", "A project skill")
    add_skill(tree.user_skills, "broken", text="---\n\tname: x\n---\n")
    tree.plugin("tools@m", ["deploy"])
    tree.settings("user", {"tools@m": True})
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR")}
    env["HOME"] = tree.home
    return env


def check_json_output(proc, tree: Tree) -> None:
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [(s["name"], s["source"]) for s in listed] == [("broken", "user"), ("mine", "user"), ("ours", "project"), ("tools:deploy", "plugin")]
    assert all(set(s) == {"name", "description", "source", "path"} and os.path.isabs(s["path"]) for s in listed)
    assert listed[1]["description"].startswith("A user skill with a description")
    warning = os.path.join(tree.user_skills, "broken", "SKILL.md") + ": line 2: a tab"
    assert f"toolscript: warning: {warning}" in proc.stderr


def test_skills_command_json_and_warnings_on_stderr(run_cli, tree):
    env = command_tree(tree)
    check_json_output(run_cli("skills", "--json", env=env, cwd=tree.sub), tree)
    check_json_output(run_cli("skills", "--json", "--cwd", tree.project, env=dict(env, CLAUDE_PROJECT_DIR=tree.root), cwd=tree.root), tree)


def test_skills_command_from_the_zipapp(run_pyz, pyz, tree):
    check_json_output(run_pyz(pyz, "skills", "--json", env=command_tree(tree), cwd=tree.project), tree)


def test_skills_command_table(run_cli, tree):
    proc = run_cli("skills", env=command_tree(tree), cwd=tree.project)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SOURCE", "DESCRIPTION"]
    assert [line.split()[:2] for line in lines[1:]] == [["broken", "user"], ["mine", "user"], ["ours", "project"], ["tools:deploy", "plugin"]]
    assert lines[2].endswith("...") and len(lines[2]) < 120
    assert "warning:" not in proc.stdout and "warning:" in proc.stderr


def test_skills_command_empty_and_usage_error(run_cli, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR")}
    env["HOME"] = str(tmp_path)
    proc = run_cli("skills", env=env, cwd=str(tmp_path))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("No skills found")
    assert run_cli("skills", "--json", env=env, cwd=str(tmp_path)).stdout.strip() == "[]"
    proc = run_cli("skills", "--cwd", str(tmp_path / "missing"), env=env)
    assert proc.returncode == 2
    assert proc.stderr.startswith("toolscript: error: --cwd ") and "no such directory" in proc.stderr
    help_text = run_cli("skills", "--help", env=env).stdout
    assert "examples:" in help_text and "--cwd" in help_text


# --- the real claude binary agrees ----------------------------------------------------------------


LISTING = "The following skills are available for use with the Skill tool:"


def listed_skills(body: Dict[str, Any]) -> List[str]:
    """The skill names in the listing Claude Code sent the model (a text block of the request)."""
    texts = [block.get("text") for block in body.get("system") or [] if isinstance(block, dict)]
    for message in body.get("messages", []):
        content = message.get("content")
        texts += [content] if isinstance(content, str) else [block.get("text") for block in content if isinstance(block, dict)]
    listing = next((text.split(LISTING, 1)[1] for text in texts if isinstance(text, str) and LISTING in text), None)
    assert listing is not None, "no skill listing in the request"
    # "- name: description", or "- dir (frontmatter name): description"; plugin ones "plugin:name".
    return re.findall(r"^- ([^\s:()]+(?::[^\s:()]+)?)(?: \([^)]*\))?: ", listing, flags=re.M)


@pytest.mark.timeout(120)
def test_real_claude_enables_and_lists_what_discover_finds(tree):
    try:
        claude = peers.claude_binary()
    except peers.PeerMissing as exc:
        missing_prerequisite(str(exc))
    add_skill(tree.user_skills, "t-user", "a user skill")
    add_skill(tree.user_skills, "t-dup", "the user one")
    add_skill(tree.user_skills, "t-manual", "hidden", extra="disable-model-invocation: true\n")
    add_skill(tree.user_skills, "t-dirname", text="---\nname: t-other\ndescription: named by its directory\n---\n")
    add_skill(tree.project_skills(), "t-root", "at the git root")
    add_skill(tree.project_skills(), "t-dup", "the project one")
    add_skill(tree.project_skills(tree.sub), "t-sub", "in the subdirectory")
    add_skill(tree.project_skills(os.path.dirname(tree.project)), "t-above", "above the git root")
    add_skill(tree.user_skills, "t-nofm", text="# listed by its first line\n")  # listed; we give it no description
    outside = add_skill(os.path.join(tree.root, "outside"), "t-out", "outside every skills directory")
    os.symlink(os.path.dirname(outside), os.path.join(tree.project_skills(), "t-linked-out"))  # listed; we leave it out
    for plugin_id in ("tp-a@m", "tp-b@m", "tp-c@m", "tp-d@m", "tp-e@m"):
        tree.plugin(plugin_id, ["s1"], manifest_name="tp-manifest-a" if plugin_id == "tp-a@m" else None)
    tree.plugin("tp-f@m", ["s1"], scope="project", project_path=os.path.join(tree.root, "other"))
    tree.settings("user", {"tp-a@m": True, "tp-b@m": True, "tp-c@m": False, "tp-f@m": True})
    tree.settings("project", {"tp-b@m": False, "tp-c@m": True, "tp-d@m": True})  # the git root's: not read from tree.sub
    tree.settings("project", {"tp-b@m": False, "tp-c@m": True, "tp-d@m": True}, where=tree.sub)
    tree.settings("local", {"tp-d@m": False})  # the git root's local settings: read from tree.sub
    found = discover(tree.sub, tree.env(), [])
    expected = ["t-dirname", "t-dup", "t-nofm", "t-root", "t-sub", "t-user", "tp-c:s1", "tp-manifest-a:s1"]
    assert names(found) == expected
    assert next(s for s in found if s.name == "t-dup").source == "user"

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(HOME=tree.home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1")
    proc = subprocess.run([claude, "plugin", "list", "--json"], env=env, cwd=tree.sub, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    enabled = {row["id"].partition("@")[0] for row in json.loads(proc.stdout) if row.get("enabled")}
    # tp-f is enabled, but its only install is another project's: not loaded here (see below).
    assert enabled == {"tp-a", "tp-c", "tp-f"}, proc.stdout

    with FakeAnthropic(["ok"]) as api:
        env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        proc = subprocess.run([claude, "-p", "hello", "--model", "haiku", "--output-format", "json"], env=env, cwd=tree.sub,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        bodies = [r["body"] for r in api.requests if r.get("path", "").startswith("/v1/messages") and "count_tokens" not in r["path"]]
    assert bodies, "claude sent no request"
    ours = [name for name in listed_skills(bodies[-1]) if name.startswith(("t-", "tp-"))]
    # Claude Code follows the symlink out of the skills directory; discover() deliberately does not.
    assert sorted(ours) == sorted(expected + ["t-linked-out"])
