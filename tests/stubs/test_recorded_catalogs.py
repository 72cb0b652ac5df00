"""Stubs of every recorded real catalog (bench/search/sets/set00/catalogs): Python loads, TypeScript is well formed."""

import os

import pytest

from stub_checks import CATALOGS, both, catalog_tools, check_typescript, load, signature
from toolscript.stubs.names import python_arg_names, python_names
from toolscript.stubs.python import python_stubs, usage_example
from toolscript.stubs.typescript import typescript_declarations


@pytest.mark.skipif(not CATALOGS, reason="no recorded catalogs in bench/search/sets/set00/catalogs")
@pytest.mark.parametrize("path", CATALOGS, ids=[os.path.basename(p)[:-5] for p in CATALOGS])
def test_recorded_catalogs(path):
    entries = catalog_tools(path)
    names = python_names(entries)
    for source in both(entries):
        namespace = load(source)
        for entry in entries:
            server, function = names[entry["id"]]
            stub = getattr(namespace[server], function)
            assert entry["id"] in (stub.__doc__ or "")
            sig = signature(source, server, function)
            assert set(sig.names) == set(python_arg_names(entry))
            required = (entry.get("inputSchema") or {}).get("required", [])
            assert {python_arg_names(entry)[n] for n in sig.required} == set(required)
    check_typescript(typescript_declarations(entries))
    check_typescript(typescript_declarations(entries, full=True))
    compile(usage_example(entries), "<example>", "exec")


def test_all_recorded_catalogs_together():
    """One module for every server at once: names across servers stay apart."""
    entries = [entry for path in CATALOGS for entry in catalog_tools(path)]
    if not entries:
        pytest.skip("no recorded catalogs")
    namespace = load(python_stubs(entries))
    for entry_id, (server, function) in python_names(entries).items():
        assert callable(getattr(namespace[server], function)), entry_id
