"""The gateway's web page in a real browser: Debian's headless Chromium, driven over its DevTools pipe.

The page loads through the link ``toolscript ui`` prints, a search finds a
memory, forgetting it removes it from the page and from the store, hostile
text stays text, a screenshot is taken, and the console shows no error.
``TOOLSCRIPT_UI_SCREENSHOT=docs/ui.png`` also writes the screenshot there (the
README's picture); a missing Chromium fails under ``TOOLSCRIPT_REQUIRE_PEERS=1``.
"""

import json
import os
import time

import pytest

from chromium import Browser, chromium_path
from conftest import REPO_ROOT, missing_prerequisite, run_cli
from gateway_http import served
from toolscript.memory import project_root, store

pytestmark = pytest.mark.timeout(120)

DAY = 86400.0
# Memories of a project other than the gateway's workspace: the page starts on the workspace's (empty)
# project and is switched to this one, and the screenshot shows the same path on every machine.
PROJECT = "/home/dev/shop"
# Midday, 2026-11-30 UTC: fixed times, so the screenshot shows the same dates on every run.
NOW = 1796040000.0


def _seed(project):
    """A project's memories as sessions leave them, plus one another project owns."""
    memories = [
        ("summary", "", [], "Session summary: moved the login flow to OAuth device codes; the flaky login test now waits "
                            "for the token refresh instead of sleeping.", NOW - 2 * DAY),
        ("action", "Bash", [], "pytest tests/auth/test_login.py -q  ->  12 passed", NOW - 2 * DAY + 60),
        ("action", "Edit", ["src/auth/login.py"], "login.py: refresh the token before the retry, not after", NOW - 2 * DAY + 30),
        ("note", "", [], "Deploys go through `make release`; never push tags by hand.", NOW - DAY),
        ("response", "", [], "The cache keys include the tenant id since the multi-tenant change; clear them per tenant.",
         NOW - DAY + 600),
        ("action", "mcp__github__create_issue", [], "Opened issue: search results miss renamed files", NOW - 3600),
        ("action", "Bash", [], "rg '<img src=x onerror=alert(1)>' -- hostile text from a tool <script>window.pwned=1</script>",
         NOW - 1800),
    ]
    with store.open_store() as db:
        ids = [db.add(session="5f0c2a9e-1b7d-4c1e-9a53-7d2f1c0b8e11", project=project, kind=kind, tool=tool, files=files,
                      content=content, created=created) for kind, tool, files, content, created in memories]
        db.add(session="", project="/srv/elsewhere", kind="note", content="another project's note", created=NOW - 5 * DAY)
    return ids


def test_the_page_loads_searches_forgets_and_logs_no_error(tmp_path, monkeypatch, clean_env):
    executable = chromium_path()
    if executable is None:
        missing_prerequisite("no Chromium at /usr/bin/chromium: apt-get install -y chromium (make test does, as root)")
    monkeypatch.setenv("TOOLSCRIPT_DATA_DIR", str(tmp_path / "data"))
    workspace = tmp_path / "work"
    workspace.mkdir()
    ids = _seed(PROJECT)
    flaky = ids[0]
    with served(workspace) as (gw, server, url):
        gw.call("builtin__time.now", {}, source="exec")
        linked = run_cli("ui", "--json", "--gateway-url", url, env=dict(clean_env, TOOLSCRIPT_DATA_DIR=str(tmp_path / "data")))
        assert linked.returncode == 0, linked.stderr
        link = json.loads(linked.stdout)["url"]
        assert gw.token not in linked.stdout
        with Browser(executable) as browser:
            browser.navigate(link)
            browser.wait_for("document.body && document.body.dataset.ready === '1' && "
                             "document.getElementById('memory-note').textContent.includes('No memories')")
            assert browser.evaluate("location.pathname + location.search") == "/ui/"  # the one-time code is out of the address bar
            assert browser.evaluate("document.getElementById('project').value") == project_root(str(workspace))
            browser.evaluate(f"const s = document.getElementById('project'); s.value = {json.dumps(PROJECT)}; "
                             "s.dispatchEvent(new Event('change'))")
            browser.wait_for("document.querySelectorAll('#timeline .memory').length === 7")
            assert browser.evaluate("document.querySelectorAll('#timeline .day').length") == 3  # grouped by day
            # Hostile text is shown as text: no element made of it, no script run.
            assert browser.evaluate("document.querySelectorAll('#timeline img, #timeline script').length") == 0
            assert browser.evaluate("window.pwned === undefined")
            assert "<script>window.pwned=1</script>" in browser.evaluate("document.getElementById('timeline').textContent")

            browser.evaluate(f"document.querySelector('.memory[data-id=\"{ids[3]}\"] .more').click()")
            screenshot = browser.screenshot()
            assert screenshot.startswith(b"\x89PNG\r\n\x1a\n") and len(screenshot) > 10_000
            (tmp_path / "ui.png").write_bytes(screenshot)
            target = os.environ.get("TOOLSCRIPT_UI_SCREENSHOT")
            if target:
                with open(os.path.join(REPO_ROOT, target) if not os.path.isabs(target) else target, "wb") as out:
                    out.write(screenshot)

            browser.evaluate("document.getElementById('memory-query').value = 'flaky login'; "
                             "document.querySelector('#memory-search button').click()")
            found = browser.wait_for("document.querySelector('#memory-note').textContent.includes('flaky login') && "
                                     "[...document.querySelectorAll('#timeline .memory')].map(n => Number(n.dataset.id))")
            assert found[0] == flaky
            browser.evaluate(f"document.querySelector('.memory[data-id=\"{flaky}\"] .more').click()")
            assert browser.evaluate(f"document.querySelector('.memory[data-id=\"{flaky}\"]').classList.contains('open')")

            forget = f"document.querySelector('.memory[data-id=\"{flaky}\"] .forget').click()"
            browser.evaluate(forget)
            browser.evaluate(forget)  # the second click confirms
            browser.wait_for(f"document.querySelector('.memory[data-id=\"{flaky}\"]') === null && "
                             "document.getElementById('status').textContent.includes('Forgot')")
            with store.open_store(readonly=True) as db:
                assert db.get([flaky]) == []
                assert len(db.get(ids)) == len(ids) - 1

            # The other tabs: servers with their source, a tool's stub, the call made above.
            browser.evaluate("document.querySelector('[data-tab=servers]').click()")
            browser.wait_for("document.querySelector('#server-rows td') && document.querySelector('#server-rows td').textContent === 'builtin'")
            browser.evaluate("document.querySelector('[data-tab=tools]').click()")
            browser.wait_for("document.querySelectorAll('#tool-list li').length > 0")
            browser.evaluate("document.querySelector('#tool-list li[data-id=\"builtin__time.now\"]').click()")
            assert "def " in browser.wait_for("document.getElementById('stub-code').textContent")
            browser.evaluate("document.querySelector('[data-tab=calls]').click()")
            assert browser.wait_for("document.querySelector('#call-rows') && document.querySelector('#call-rows').textContent"
                                    ).count("builtin__time.now") == 1
            time.sleep(0.2)  # a late console error (a failed fetch) still arrives before the check
            assert browser.errors == []
