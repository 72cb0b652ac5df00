"""The real ``claude`` binary enables the plugins and lists to the model the skills ``discover()`` finds.

A scratch tree (tests/skill_tree.py) with user, project and plugin skills in
every shape discovery handles; ``claude plugin list --json`` and the skill
listing in the request the fake Messages API receives must agree with it.
"""

import json
import os
import re
import subprocess
from typing import Any, Dict, List

import pytest

import peers
from conftest import missing_prerequisite
from fake_anthropic import FakeAnthropic
from skill_tree import Tree, add_skill
from toolscript.claude_code.skills import Skill, discover


@pytest.fixture
def tree(tmp_path) -> Tree:
    return Tree(tmp_path)


def names(found: List[Skill]) -> List[str]:
    return [skill.name for skill in found]


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
    expected = ["t-dirname", "t-dup", "t-nofm", "t-root", "t-sub", "t-user", "tp-c:s1", "tp-f:s1", "tp-manifest-a:s1"]
    assert names(found) == expected
    assert next(s for s in found if s.name == "t-dup").source == "user"

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(HOME=tree.home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1")
    proc = subprocess.run([claude, "plugin", "list", "--json"], env=env, cwd=tree.sub, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # Claude Code's own plugins (2.1.337 lists "cc-plugin-...@builtin") are not installed ones: left out.
    enabled = {row["id"].partition("@")[0] for row in json.loads(proc.stdout) if row.get("enabled") and not row["id"].endswith("@builtin")}
    # tp-f is enabled, and its only install is another project's: Claude Code loads it from there.
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
