"""What the gateway derives from its catalog (search index, stubs, the runtime's name map), rebuilt on change."""

import threading

import pytest

from conftest import wait_for
from gateway_processes import fixture_server
from toolscript.gateway.catalog import Catalog
from toolscript.gateway.derived import Derived


def test_a_burst_of_catalog_changes_is_one_worker_not_a_thread_each():
    tools = []
    catalog = Catalog(lambda: [("s", list(tools))])
    derived = Derived(catalog)
    try:
        for i in range(40):
            tools.append({"name": f"t{i}", "inputSchema": {"type": "object"}})
            catalog.rebuild()
        workers = [t for t in threading.enumerate() if t.name == "derived-rebuild"]
        assert len(workers) <= 1
        assert len(derived.names()["servers"]["s"]) == 40
        artifacts = derived.current()
        assert artifacts.version == catalog.snapshot().version and len(artifacts.tools) == 40
    finally:
        derived.close()


@pytest.mark.timeout(60)
def test_names_say_why_a_configured_server_is_unavailable(gateway):
    gw, _url = gateway(fixture_server("good"), fixture_server("crashy-one", "--exit-at-start", "3"))
    assert wait_for(lambda: gw.upstreams["crashy-one"].state == "failed" and gw.upstreams["good"].state == "ready")
    names = gw.derived.names()
    assert "good" in names["servers"] and "crashy_one" not in names["servers"]
    assert "crashy_one" in names["unavailable"] and "crashy-one" in names["unavailable"]["crashy_one"]
    assert "good" not in names["unavailable"]
