"""Secrets never reach the memory database, whatever hook event and field carries them.

Each realistic secret shape goes through every channel a hook records: a Bash
command and its output, an MCP tool's input (a free-text argument, a long one
that is shortened, a secret-named one) and output, an Edit's strings, a
Write's content, an agent's prompt, the user's prompt, Claude's answer at
Stop, and the session summary at SessionEnd.  The hooks run in this process
against a real database in a temp dir; then the database files' bytes are
searched for any 10-character piece of the secret, so a secret kept in part
(cut before it was recognised) counts as kept.
"""

import os
import sqlite3

import pytest

from conftest import git_project
from toolscript.claude_code import memory_hooks as hooks

PEM_BODY = "MIIEpAIBAAKCAQEA7bq9XyQ8Rt0Lw3kEZx2Qp4Vn8Hs1Jm6Tc9Wd3Fg7Kl2Yb5Nr0Ua"

# (label, the text as a user or a tool would write it, the secret in it)
SHAPES = [
    ("mysql -p", "mysql -u root -pS3cretMysql41 appdb", "S3cretMysql41"),
    ("mysqldump -p", "mysqldump -h db.internal -u app -p'Dump!Pass7788' appdb > dump.sql", "Dump!Pass7788"),
    ("curl -u", "curl -fsS -u admin:Sup3rCurlS3cret https://api.example.com/v1/items", "Sup3rCurlS3cret"),
    ("docker login --password", "docker login --password Hunter2Docker99 -u bob registry.example.com",
     "Hunter2Docker99"),
    ("docker login -p", "docker login -u bob -p Hunter2Podman77 quay.io", "Hunter2Podman77"),
    ("sshpass -p", "sshpass -p 'Tr0ub4dorSsh3' ssh deploy@10.0.0.5 uptime", "Tr0ub4dorSsh3"),
    ("htpasswd -b", "htpasswd -b -c /etc/nginx/.htpasswd admin Pa55w0rdHtpw", "Pa55w0rdHtpw"),
    ("DB_PASS=", "export DB_PASS=s3cr3tDbValue42", "s3cr3tDbValue42"),
    ("SECRET_KEY_BASE=", "SECRET_KEY_BASE=9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc", "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc"),
    ("Azure AccountKey=", "DefaultEndpointsProtocol=https;AccountName=acmestore;"
     "AccountKey=q9Zx3mK7vB2nL8pQ4rT6wY1uI5oP0aSdFgHjKlZxCvBnM3qW8eR7tY6uI5oP4aSdFgHjKlZxCvBnM1qW2eR3tY==;"
     "EndpointSuffix=core.windows.net", "q9Zx3mK7vB2nL8pQ4rT6wY1uI5oP0aSdFgHjKl"),
    (".netrc", "machine api.example.com login bob password N3tRcPass55word", "N3tRcPass55word"),
    (".pgpass", "db.example.com:5432:appdb:app:PgP4ssw0rd66xyz", "PgP4ssw0rd66xyz"),
    ("pypi-", "pypi-AgEIcHlwaS5vcmcCJGE0ZjYxYzFiLTk3YTctNGI0Yi1iYjBiLWU0NGFkZTNhODQxZgACKlszLCJlZWUiXQ",
     "AgEIcHlwaS5vcmcCJGE0ZjYxYzFiLTk3YTctNGI0Yi1iYjBiLWU0NGFkZTNhODQxZgACKlszLCJlZWUiXQ"),
    ("hvs.", "VAULT_ADDR=https://vault.internal vault kv get -address x hvs.CAESIJlU4h2pDJ6wW0bXkTaY3kqJvVXrF9n2bN4tJ5R8s",
     "CAESIJlU4h2pDJ6wW0bXkTaY3kqJvVXrF9n2bN4tJ5R8s"),
    ("SG.", "sendgrid key 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",
     "ngeVfQFYQlKU0ufo8x5d1A.TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"),
    ("dop_v1_", "doctl auth init -t dop_v1_4b7c2e9a1f0d3c6b8e5a7f2d9c1b4e6a8d3f5c7b9e1a2d4f6c8b0e3a5d7f9c1b",
     "4b7c2e9a1f0d3c6b8e5a7f2d9c1b4e6a8d3f5c7b9e1a2d4f6c8b0e3a5d7f9c1b"),
    ("shpat_", "X-Shopify-Access-Token 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", "a1b2c3d4e5f60718293a4b5c6d7e8f90"),
    ("Telegram bot token", "curl https://api.telegram.org/bot7214459981:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3/getMe",
     "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3"),
    ("ghp_", "git push https://github.com/acme/app ghp_R7uL0vQ2x9Yk3Pz8Wm4Tn6Bv1Cq5Df7GhJ2s", "R7uL0vQ2x9Yk3Pz8Wm4Tn6Bv1Cq5Df7GhJ2s"),
    ("github_pat_", "GH_TOKEN=github_pat_11ABCDEFG0x9Y8z7W6v5x9Y8z7W6v5x9Y8z7W6v5x9Y8z7W6v5",
     "11ABCDEFG0x9Y8z7W6v5x9Y8z7W6v5x9Y8z7W6v5"),
    ("sk-ant-", "ANTHROPIC_API_KEY=sk-ant-api03-Ab3x9Qz7Lm2Np8Rt4Vw6Yb1Cd5Fg9Hj3Kl7Mn2Pq6Rs0Tu4Vx8Zz-AA",
     "Ab3x9Qz7Lm2Np8Rt4Vw6Yb1Cd5Fg9Hj3Kl7Mn2Pq6Rs0Tu4Vx8Zz"),
    ("AKIA", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLQ", "AKIAIOSFODNN7EXAMPLQ"),
    ("aws_secret_access_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("xoxb-", "SLACK_BOT_TOKEN=xoxb-2345678901-0987654321-AbCdEfGhIjKlMnOpQrStUv", "AbCdEfGhIjKlMnOpQrStUv"),
    ("glpat-", "glab auth login --token glpat-Zx8Cv7Bn6Mm5Lk4Jh3Gf", "Zx8Cv7Bn6Mm5Lk4Jh3Gf"),
    ("JWT", "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    ("private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "\n-----END OPENSSH PRIVATE KEY-----",
     PEM_BODY),
    ("URL password", "git clone https://deploy:Hunter2UrlPass@git.example.com/acme/app.git", "Hunter2UrlPass"),
    ("api_key JSON", '{"api_key": "k-93jf0a8sdf7a6sdf0q9w8e", "region": "eu"}', "k-93jf0a8sdf7a6sdf0q9w8e"),
    ("npm_", "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("GOCSPX-", "client_secret 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t", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St"),
    ("Stripe", "stripe listen --api-key sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
]


def _events(text):
    """(hook, event fields) for every channel a hook records, each carrying ``text``."""
    long_text = "please summarise the deployment notes first, then " + text + " and report back"
    return [
        ("post_tool_use", {"tool_name": "Bash", "tool_input": {"command": text, "description": "Run it"},
                           "tool_response": {"stdout": "ok\n", "stderr": "", "interrupted": False}}),
        ("post_tool_use", {"tool_name": "Bash", "tool_input": {"command": "cat deploy.env"},
                           "tool_response": {"stdout": text + "\nmore output\n", "stderr": "", "interrupted": False}}),
        ("post_tool_use", {"tool_name": "Bash", "tool_input": {"command": "./deploy.sh"},
                           "tool_response": {"stdout": "", "stderr": "error: rejected " + text, "interrupted": False}}),
        ("post_tool_use", {"tool_name": "mcp__notes__save", "tool_input": {"text": text}, "tool_response": "saved"}),
        ("post_tool_use", {"tool_name": "mcp__notes__save", "tool_input": {"text": long_text}, "tool_response": "saved"}),
        ("post_tool_use", {"tool_name": "mcp__db__connect", "tool_input": {"password": text, "host": "db"},
                           "tool_response": [{"type": "text", "text": "connected"}]}),
        ("post_tool_use", {"tool_name": "mcp__notes__read", "tool_input": {"id": 3},
                           "tool_response": [{"type": "text", "text": text}]}),
        ("post_tool_use", {"tool_name": "Edit", "tool_input": {"file_path": "deploy.env", "old_string": text,
                                                               "new_string": "# moved to the vault\n" + text}},
         ),
        ("post_tool_use", {"tool_name": "Write", "tool_input": {"file_path": "notes.md", "content": text + "\n"},
                           "tool_response": {"type": "create"}}),
        ("post_tool_use", {"tool_name": "Task", "tool_input": {"description": "Deploy", "prompt": text,
                                                               "subagent_type": "general-purpose"},
                           "tool_response": {"status": "completed", "content": [{"type": "text", "text": text}]}}),
        ("post_tool_use", {"tool_name": "WebFetch", "tool_input": {"url": "https://docs.example.com", "prompt": text},
                           "tool_response": {"code": 200, "result": text}}),
        ("prompt", {"prompt": "use " + text + " to deploy"}),
        ("stop", {"last_assistant_message": "I deployed with " + text + " as you asked.", "stop_hook_active": False}),
        ("session_end", {}),
    ]


@pytest.fixture
def project(scratch_dirs):
    """A git project, and memory's data and state in the temp dir; no behaviour variables from outside."""
    return git_project(scratch_dirs / "project")


def _run(project, hook, fields, session="s-secrets"):
    event = dict({"session_id": session, "cwd": str(project)}, **fields)
    getattr(hooks, hook)(event)


def _raw(data_dir):
    raw = b""
    for name in os.listdir(data_dir):
        with open(os.path.join(data_dir, name), "rb") as handle:
            raw += handle.read()
    return raw


def _pieces(secret, size=10):
    size = min(size, len(secret))
    return {secret[i:i + size] for i in range(len(secret) - size + 1)}


@pytest.mark.parametrize("label,text,secret", SHAPES, ids=[s[0] for s in SHAPES])
def test_no_piece_of_a_secret_reaches_the_database_through_any_channel(project, tmp_path, label, text, secret):
    hooks.session_start({"session_id": "s-secrets", "cwd": str(project)})
    for hook, fields in _events(text):
        _run(project, hook, fields)
    data = tmp_path / "data"
    conn = sqlite3.connect(str(data / "memory.db"))
    stored = [row[0] for row in conn.execute("SELECT content FROM memories ORDER BY id")]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert len(stored) >= 12, stored  # every channel but the prompt stored something: the test saw them all
    raw = _raw(str(data))
    kept = sorted(piece for piece in _pieces(secret) if piece.encode() in raw)
    assert not kept, (label, kept, [s for s in stored if any(k in s for k in kept)])


TOKEN = "ghp_R7uL0vQ2x9Yk3Pz8Wm4Tn6Bv1Cq5Df7GhJ2s"


@pytest.mark.parametrize("arguments", [
    {"remote": "deploy@" + TOKEN},  # one word longer than an argument is shown: cut inside the token
    {"remotes": ["x@" + TOKEN, "origin"]},  # list items are shown shorter still
    {"body": "ci failed; the runner used token " + TOKEN + " today"},
], ids=["word", "list item", "sentence"])
def test_a_token_in_a_long_argument_is_redacted_before_the_argument_is_shortened(project, tmp_path, arguments):
    _run(project, "post_tool_use", {"tool_name": "mcp__github__push", "tool_input": arguments,
                                    "tool_response": "pushed"})
    conn = sqlite3.connect(str(tmp_path / "data" / "memory.db"))
    [content] = [row[0] for row in conn.execute("SELECT content FROM memories")]
    conn.close()
    assert not any(piece in content for piece in _pieces(TOKEN[4:], 8)), content


ORDINARY_COMMANDS = [
    "docker run -p 8080:80 -d nginx:1.27",
    "ssh -p 2222 deploy@10.0.0.5 uptime",
    "scp -P 2222 build.tar.gz deploy@host:/srv",
    "nc -l -p 9000",
    "kubectl port-forward svc/web 8080:80 -n prod",
    "git show 3f2a9c1e0b8d7f6a5e4c3b2a1f0e9d8c7b6a5f4e",
    "python -c 'password = input(); print(len(password))'",
    "mysql -u root -p appdb",
    "grep -rn 'token = self.token' src",
]


@pytest.mark.parametrize("command", ORDINARY_COMMANDS)
def test_ordinary_commands_are_stored_as_they_were(project, tmp_path, command):
    _run(project, "post_tool_use", {"tool_name": "Bash", "tool_input": {"command": command},
                                    "tool_response": {"stdout": "done\n", "stderr": "", "interrupted": False}})
    conn = sqlite3.connect(str(tmp_path / "data" / "memory.db"))
    [content] = [row[0] for row in conn.execute("SELECT content FROM memories")]
    conn.close()
    assert command in content and "[redacted]" not in content, content


def test_a_key_block_in_the_middle_of_a_long_output_is_not_kept_by_its_tail(project, tmp_path):
    """Only the head and tail of a long output are looked at; a key block opened in between takes the tail along."""
    body = ["QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo+ok/%04d" % i for i in range(60)]
    stdout = "\n".join(["compiling module %d" % i for i in range(300)] + ["-----BEGIN RSA PRIVATE KEY-----"] + body
                       + ["-----END RSA PRIVATE KEY-----"])
    _run(project, "post_tool_use", {"tool_name": "Bash", "tool_input": {"command": "make dist"},
                                    "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}})
    conn = sqlite3.connect(str(tmp_path / "data" / "memory.db"))
    [content] = [row[0] for row in conn.execute("SELECT content FROM memories")]
    conn.close()
    assert "QUJDREVG" not in content, content
