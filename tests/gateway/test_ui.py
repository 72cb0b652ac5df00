"""The gateway's web page over HTTP: who may open it, what its answers carry, what forget demands.

The page in a real browser is tested in test_ui_browser.py.
"""

import http.client
import json
import logging
import os
import re
from urllib.parse import urlsplit

import pytest

from conftest import REPO_ROOT, wait_for
from gateway_http import served
from toolscript.gateway import ui
from toolscript.memory import store

PAGE_DIR = os.path.join(REPO_ROOT, "toolscript", "gateway", "page")


def request(url, method="GET", path="/", headers=None, body=None):
    """(status, headers as a dict of lists, body bytes) of one request to the gateway's address (no token prefix)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    found = {}
    for name, value in resp.getheaders():
        found.setdefault(name.lower(), []).append(value)
    conn.close()
    return resp.status, found, data


def mint(url, token_path=True):
    parts = urlsplit(url)
    status, _, body = request(url, "POST", (parts.path if token_path else "") + "/ui/code", body=b"{}" if token_path else None,
                              headers={"Content-Type": "application/json"})
    return status, json.loads(body)


def sign_in(url):
    """The page's cookie header after trading a fresh code."""
    _, answer = mint(url)
    status, headers, _ = request(url, path=answer["path"])
    assert status == 303 and headers["location"] == ["/ui/"]
    return headers["set-cookie"][0].split(";")[0]


@pytest.fixture
def memories(tmp_path, monkeypatch):
    """A memory store with three memories of the gateway's workspace project; their ids."""
    monkeypatch.setenv("TOOLSCRIPT_DATA_DIR", str(tmp_path / "data"))
    from toolscript.memory import project_root

    project = project_root(str(tmp_path))
    with store.open_store() as db:
        return [db.add(session="s1", project=project, kind="action", tool="Bash", content=text)
                for text in ("the flaky login test", "deploy with make release", "cache keys per tenant")]


def test_the_page_opens_only_with_a_one_time_code(tmp_path, memories):
    with served(tmp_path) as (gw, server, url):
        assert request(url, path="/ui/")[0] == 401
        assert request(url, path="/ui/api/memories")[0] == 401
        assert request(url, path="/ui/?code=guessed")[0] == 401
        assert mint(url, token_path=False)[0] == 401  # minting needs the gateway's token
        _, answer = mint(url)
        assert answer["expiresInSeconds"] == 600 and gw.token not in json.dumps(answer)
        status, headers, _ = request(url, path=answer["path"])
        assert status == 303 and headers["location"] == ["/ui/"]
        cookie = headers["set-cookie"][0]
        name, _, rest = cookie.partition("=")
        value = rest.split(";")[0]
        assert name == f"toolscript_ui_{server.port}"
        assert {"HttpOnly", "SameSite=Strict", "Path=/ui"} <= {part.strip() for part in cookie.split(";")[1:]}
        assert value != gw.token and gw.token not in cookie
        assert request(url, path=answer["path"])[0] == 401  # a code works once
        status, _, page = request(url, path="/ui/", headers={"Cookie": f"{name}={value}"})
        assert status == 200 and b"<title>toolscript</title>" in page and gw.token.encode() not in page
        status, _, body = request(url, path="/ui/api/memories", headers={"Cookie": f"{name}={value}"})
        assert status == 200 and len(json.loads(body)["memories"]) == 3
        assert {m["source"] for m in json.loads(body)["memories"]} == {"Bash"}  # where each came from
        # The gateway's token is not the page's cookie, nor the other way round.
        assert request(url, path="/ui/api/memories", headers={"Authorization": f"Bearer {gw.token}"})[0] == 401
        assert request(url, path="/ui/api/memories", headers={"Cookie": f"{name}={gw.token}"})[0] == 401
        assert request(url, path="/health", headers={"Cookie": f"{name}={value}"})[0] == 401


def test_an_expired_code_opens_nothing(tmp_path, monkeypatch):
    access = ui.UiAccess()
    monkeypatch.setattr(ui, "CODE_SECONDS", -1.0)
    code = access.mint()["code"]
    assert access.redeem(code) is None


def test_every_answer_carries_the_content_security_policy(tmp_path, memories):
    with served(tmp_path) as (gw, server, url):
        cookie = sign_in(url)
        for path in ("/ui/", "/ui/app.js", "/ui/app.css", "/ui/api/overview", "/ui/api/nothing", "/ui/?code=stale"):
            status, headers, _ = request(url, path=path, headers={"Cookie": cookie})
            assert headers["content-security-policy"] == [ui.CONTENT_SECURITY_POLICY], path
            assert headers["x-content-type-options"] == ["nosniff"], path
        policy = dict(part.strip().split(" ", 1) for part in ui.CONTENT_SECURITY_POLICY.split(";"))
        assert policy["script-src"] == "'self'" and policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"


def test_the_page_has_no_inline_script_and_writes_data_only_as_text():
    with open(os.path.join(PAGE_DIR, "index.html"), encoding="utf-8") as f:
        html = f.read()
    with open(os.path.join(PAGE_DIR, "app.js"), encoding="utf-8") as f:
        script = f.read()
    assert re.findall(r"<script\b[^>]*>", html) == ['<script src="app.js" defer>']
    assert not re.search(r"\son[a-z]+\s*=", html), "an inline event handler"
    assert not re.search(r"https?://", html + script), "something fetched from elsewhere"
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink


def test_forget_is_a_post_from_the_page_itself(tmp_path, memories):
    with served(tmp_path) as (gw, server, url):
        cookie = sign_in(url)
        own = f"http://127.0.0.1:{server.port}"
        body = json.dumps({"id": memories[0]}).encode()
        json_type = {"Content-Type": "application/json"}

        def forget(headers, payload=body):
            return request(url, "POST", "/ui/api/forget", headers=dict(headers), body=payload)[0]

        assert request(url, path="/ui/api/forget", headers={"Cookie": cookie})[0] == 405
        assert forget({"Origin": own, **json_type}) == 401  # no cookie
        assert forget({"Cookie": cookie, **json_type}) == 403  # no Origin
        assert forget({"Cookie": cookie, "Origin": "http://127.0.0.1:1", **json_type}) == 403  # same site, another port
        assert forget({"Cookie": cookie, "Origin": "http://evil.example", **json_type}) == 403
        assert forget({"Cookie": cookie, "Origin": own, "Content-Type": "text/plain"}) == 415  # a form could send that
        assert forget({"Cookie": cookie, "Origin": own, **json_type}, b'{"id": "1"}') == 400
        with store.open_store(readonly=True) as db:
            assert len(db.get(memories)) == 3
        assert forget({"Cookie": cookie, "Origin": own, **json_type}) == 200
        assert forget({"Cookie": cookie, "Origin": own, **json_type}) == 404  # already gone
        with store.open_store(readonly=True) as db:
            assert [m.id for m in db.get(memories)] == memories[1:]


def test_a_cross_origin_fetch_reads_nothing(tmp_path, memories):
    with served(tmp_path) as (gw, server, url):
        cookie = sign_in(url)
        for site in ("same-site", "cross-site"):
            assert request(url, path="/ui/api/memories", headers={"Cookie": cookie, "Sec-Fetch-Site": site})[0] == 403
        assert request(url, path="/ui/api/memories", headers={"Cookie": cookie, "Sec-Fetch-Site": "same-origin"})[0] == 200
        assert request(url, path="/ui/", headers={"Cookie": cookie, "Host": "evil.example"})[0] == 403  # the gateway's Host rule


def test_neither_token_nor_code_reaches_the_log(tmp_path, memories, caplog):
    with served(tmp_path) as (gw, server, url):
        with caplog.at_level(logging.DEBUG, logger="toolscript.gateway.http"):
            _, answer = mint(url)
            request(url, path=answer["path"])
            # The access line is written just after the answer is sent.
            assert wait_for(lambda: "/ui/?code=" in caplog.text), caplog.text
        logged = caplog.text
        assert "/ui/?code=****" in logged
        assert answer["code"] not in logged and gw.token not in logged


def test_the_page_lists_servers_tools_stubs_and_recent_calls(tmp_path, memories):
    with served(tmp_path) as (gw, server, url):
        cookie = sign_in(url)

        def get(path):
            status, _, body = request(url, path=path, headers={"Cookie": cookie})
            assert status == 200, (path, body)
            return json.loads(body)

        gw.call("builtin__time.now", {}, source="exec")
        gw.call("builtin__no.such", {"secret": "hunter2"}, source="mcp")
        calls = get("/ui/api/calls")["calls"]
        assert [(c["tool"], c["source"], c["ok"]) for c in calls] == [("builtin__no.such", "mcp", False), ("builtin__time.now", "exec", True)]
        assert "hunter2" not in json.dumps(calls)  # arguments are never kept
        assert get("/ui/api/servers")["servers"][0]["name"] == "builtin"
        tools = get("/ui/api/tools?q=current+time")["tools"]
        assert tools[0]["id"] == "builtin__time.now"
        assert get("/ui/api/tools")["total"] == len(gw.catalog.entries())
        assert "def " in get("/ui/api/stub?id=builtin__time.now")["code"]
        assert request(url, path="/ui/api/stub?id=nope__x", headers={"Cookie": cookie})[0] == 404
        found = get("/ui/api/memories?q=flaky")["memories"]
        assert [m["id"] for m in found] == [memories[0]]
        overview = get("/ui/api/overview")
        assert overview["projects"][0]["memories"] == 3 and overview["project"] == overview["projects"][0]["project"]


def test_a_body_where_none_belongs_closes_the_connection(tmp_path, memories):
    with served(tmp_path) as (gw, server, url):
        cookie = sign_in(url)
        status, headers, _ = request(url, "POST", "/ui/api/overview", headers={"Cookie": cookie}, body=b"x" * 100)
        assert status == 413 and headers["connection"] == ["close"]
