"""What the command-line and configuration tests share: config documents on disk and the one-line error check."""

import json

from mcp_servers.launch import stdio_command

# What a server whose ${GITHUB_TOKEN} is unset reports (github_unset_config).
GITHUB_ERROR = "${GITHUB_TOKEN} is not set (export it or remove it from server 'github')"


def write_document(path, document) -> str:
    """``document`` as JSON at ``path``; the path as str."""
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def stdio_fixture_entry() -> dict:
    """The config entry of the stdlib fixture server over stdio."""
    command = stdio_command()
    return {"command": command[0], "args": command[1:]}


def github_unset_config(tmp_path) -> str:
    """A config whose "github" server needs ${GITHUB_TOKEN} (unset) next to a working server."""
    return write_document(tmp_path / "c.json", {"mcpServers": {
        "github": {"url": "https://api.example.invalid/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        "other": stdio_fixture_entry(),
    }})


def one_error_line(proc) -> str:
    """The single line a usage error prints, after checking there is nothing else."""
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]
