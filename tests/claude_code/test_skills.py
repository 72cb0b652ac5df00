"""Skill discovery (``toolscript.claude_code.skills``) and ``toolscript skills``.

Discovery over scratch trees shaped like Claude Code's own files (user,
project and plugin skills, installed_plugins.json v1 and v2, enabledPlugins in
each settings layer), and the command end to end.  That the real ``claude``
binary enables and lists the same skills is tests/e2e/test_claude_skills_e2e.py.
"""

import json
import os
from typing import Dict, List, Optional

import pytest

from fake_anthropic import FakeAnthropic
from skill_tree import Tree, add_skill, write, write_json
from toolscript.claude_code import skills
from toolscript.claude_code.skills import Skill, discover


# --- discovery: a scratch tree ---------------------------------------------------------------------


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
    # q is enabled for the user and installed only for another project: Claude Code loads it from that install.
    assert names(run_discover(tree)[0]) == ["p:from-local", "q:only-elsewhere"]
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


# --- skills MCP servers offer (the MCP Skills extension), through the gateway -------------------------

SKILLS_SERVER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mcp_servers", "skills_server.py")
RELEASE_NOTES = "Draft release notes from merged pull requests. Use when preparing a release announcement."


@pytest.fixture
def skills_gateway(tmp_path):
    """skills_gateway(mode="modern") -> (gateway, URL, the server's request log): a gateway whose server "billing"
    is tests/mcp_servers/skills_server.py; stopped with the test."""
    import contextlib
    import sys

    from conftest import running_gateway
    from toolscript.config.load import ServerConfig

    stack = contextlib.ExitStack()

    def start(mode: str = "modern"):
        log = str(tmp_path / f"skills-server-{mode}.log")
        server = ServerConfig(name="billing", type="stdio", source="test", command=sys.executable,
                              args=[SKILLS_SERVER, mode, log], timeout=10.0)
        (tmp_path / "work").mkdir(exist_ok=True)
        gateway, url = stack.enter_context(running_gateway([server], tmp_path / "work"))
        gateway.wait_for_servers()
        return gateway, url, log

    with stack:
        yield start


@pytest.mark.parametrize("mode", ["modern", "handshake"])
def test_the_skills_an_mcp_server_offers_join_the_list_with_their_server(tree, skills_gateway, mode):
    from toolscript.gateway.client import GatewayClient

    gateway, url, log = skills_gateway(mode)
    listed = GatewayClient(url).get("/skills")["skills"]
    assert [(s["server"], s["name"], s["uri"]) for s in listed] == [
        ("billing", "release-notes", "skill://release-notes/SKILL.md"),
        ("billing", "refunds", "skill://acme/billing/refunds/SKILL.md"),
    ]  # both pages; the entries without resources or whose uri does not end in their name are left out
    with open(log, encoding="utf-8") as fh:
        assert [line.split()[1] for line in fh if line.startswith("skills/list")] == ["null", '"page-2"']
    add_skill(tree.user_skills, "mine", "A user skill")
    found = discover(tree.project, tree.env(), [], gateway_url=url)
    assert names(found) == ["billing:refunds", "billing:release-notes", "mine"]
    notes = next(s for s in found if s.name == "billing:release-notes")
    assert notes == Skill("billing:release-notes", RELEASE_NOTES, "mcp:billing", "skill://release-notes/SKILL.md")


def test_a_gateway_that_cannot_be_asked_costs_the_mcp_skills_alone(tree):
    add_skill(tree.user_skills, "mine", "A user skill")
    warnings: List[str] = []
    found = discover(tree.project, tree.env(), warnings, gateway_url="http://127.0.0.1:9/t/secret-token")
    assert names(found) == ["mine"]
    assert len(warnings) == 1 and "MCP skills" in warnings[0] and "secret-token" not in warnings[0]


def test_an_mcp_skill_never_shadows_a_skill_on_disk(tree, skills_gateway):
    _, url, _ = skills_gateway()
    tree.plugin("billing@market", ["refunds"])
    tree.settings("user", {"billing@market": True})
    found = discover(tree.project, tree.env(), [], gateway_url=url)
    by_name = {skill.name: skill.source for skill in found}
    assert by_name["billing:refunds"] == "plugin" and by_name["mcp:billing:refunds"] == "mcp:billing"


def test_toolscript_skills_shows_them_with_their_server_and_reads_one(tree, skills_gateway, run_cli):
    _, url, _ = skills_gateway()
    env = dict(tree.env(), TOOLSCRIPT_GATEWAY_URL=url)
    listed = json.loads(run_cli("--json", "skills", "--cwd", tree.project, env=env).stdout)
    assert {"name": "billing:refunds", "source": "mcp:billing", "path": "skill://acme/billing/refunds/SKILL.md",
            "description": "Process customer refund \x1b[31mrequests\x1b[0m per company policy."} in listed
    table = run_cli("skills", "--cwd", tree.project, env=env).stdout
    assert "billing:release-notes  mcp:billing" in table and "\x1b" not in table
    read = run_cli("skills", "--read", "billing:release-notes", env=env)
    assert read.returncode == 0 and read.stdout.startswith("---\nname: release-notes\n") and read.stderr == ""
    dynamic = run_cli("skills", "--read", "billing:refunds", env=env)
    assert dynamic.returncode == 0 and "Issue refunds within 30 days." in dynamic.stdout and "\x1b" not in dynamic.stdout
    assert "dynamic" in dynamic.stderr  # no digest vouches for it: said so
    unknown = run_cli("skills", "--read", "billing:nope", env=env)
    assert unknown.returncode != 0 and "billing:release-notes" in unknown.stderr


def test_a_skill_file_that_does_not_match_its_listing_is_not_used(tree, skills_gateway, run_cli):
    _, url, _ = skills_gateway("tampered")
    read = run_cli("skills", "--read", "billing:release-notes", env=dict(tree.env(), TOOLSCRIPT_GATEWAY_URL=url))
    assert read.returncode != 0 and read.stdout == "" and "does not match the digest" in read.stderr


def test_a_suggested_mcp_skill_is_named_with_its_server_not_as_a_skill_tool_call(tree, skills_gateway, monkeypatch):
    from toolscript.claude_code import suggest

    _, url, _ = skills_gateway()
    for name, value in tree.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TOOLSCRIPT_STATE_DIR", str(tree.root))
    result = suggest.suggest("draft the release notes from the merged pull requests", backend="local", gateway_url=url,
                             cwd=tree.project, env=tree.env())
    assert [s.name for s in result.skills] == ["billing:release-notes"]
    context = result.context()
    assert "- billing:release-notes (from the MCP server billing): Draft release notes" in context
    assert 'Skill("billing:release-notes")' not in context and "toolscript skills --read" in context
