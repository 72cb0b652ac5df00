"""``toolscript ui``: the page's link, opening it, and what it says when no gateway runs."""

import json
import stat
from urllib.parse import urlsplit

from gateway_http import served


def test_without_a_gateway_it_says_how_to_start_one(run_cli, clean_env, workdir):
    done = run_cli("ui", env=clean_env, cwd=workdir)
    assert done.returncode == 1 and done.stdout == ""
    assert "no gateway is running" in done.stderr and "toolscript gateway start --detach" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_it_prints_a_one_time_link_without_the_token(run_cli, clean_env, tmp_path):
    with served(tmp_path) as (gw, server, url):
        done = run_cli("ui", "--gateway-url", url, env=clean_env)
        assert done.returncode == 0, done.stderr
        link = done.stdout.strip()
        parts = urlsplit(link)
        assert (parts.scheme, parts.hostname, parts.port, parts.path) == ("http", "127.0.0.1", server.port, "/ui/")
        assert parts.query.startswith("code=") and gw.token not in done.stdout + done.stderr
        assert "works once" in done.stderr

        answer = json.loads(run_cli("ui", "--json", "--gateway-url", url, env=clean_env).stdout)
        assert answer["expiresInSeconds"] == 600 and answer["url"] != link  # a fresh code each time


def test_open_hands_the_link_to_the_browser(run_cli, clean_env, tmp_path):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    with served(tmp_path) as (gw, server, url):
        done = run_cli("ui", "--open", "--json", "--gateway-url", url, env=dict(clean_env, BROWSER=str(browser), DISPLAY=""))
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["opened"] is True and opened.read_text() == answer["url"]


def test_help_shows_examples(run_cli, clean_env):
    done = run_cli("ui", "--help", env=clean_env)
    assert done.returncode == 0
    assert "toolscript ui --open" in done.stdout and "examples:" in done.stdout
    assert "ui" in run_cli("--help", env=clean_env).stdout


def test_an_older_gateway_without_the_page_is_named(run_cli, clean_env, tmp_path, monkeypatch):
    from toolscript.gateway import http_api

    original = http_api.GatewayHandler._route

    def without_page(self, method):  # what a gateway from before the page answers: 404
        if self.path.endswith("/ui/code"):
            self._json(404, {"error": "no such endpoint: /ui/code"})
            return
        original(self, method)

    monkeypatch.setattr(http_api.GatewayHandler, "_route", without_page)
    with served(tmp_path) as (gw, server, url):
        done = run_cli("ui", "--gateway-url", url, env=clean_env)
    assert done.returncode == 1 and "has no web page" in done.stderr and "gateway stop" in done.stderr
