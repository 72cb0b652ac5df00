"""toolscript.tools.schema's public surface: ``validate`` is its one entry point."""

from toolscript.tools import schema as jsonschema


def test_validate_is_the_only_entry_point():
    assert not hasattr(jsonschema, "check_schema") and not hasattr(jsonschema, "first_error")
    assert jsonschema.__all__ == ["validate"]
