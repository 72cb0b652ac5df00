"""Where toolscript keeps its state when HOME is empty or relative: the account's home, never the current directory."""

import os

import pytest


def test_empty_or_relative_home_is_ignored(tmp_path, monkeypatch):
    import pwd

    from toolscript import paths
    from toolscript.errors import UserError

    home = tmp_path / "pwhome"
    home.mkdir()

    class Entry:
        pw_dir = str(home)

    monkeypatch.setattr(pwd, "getpwuid", lambda uid: Entry)
    expected = os.path.join(str(home), ".local", "state", "toolscript")
    assert paths.state_dir({"HOME": ""}) == expected
    assert paths.state_dir({"HOME": "relative/dir", "XDG_STATE_HOME": "also/relative"}) == expected
    assert paths.state_dir({"HOME": "", "XDG_STATE_HOME": str(tmp_path / "xdg")}) == str(tmp_path / "xdg" / "toolscript")

    def no_entry(uid):
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    with pytest.raises(UserError, match="TOOLSCRIPT_STATE_DIR"):
        paths.state_dir({"HOME": ""})
