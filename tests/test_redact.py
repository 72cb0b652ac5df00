"""Redaction and <private> tags (toolscript/redact.py): property-style cases.

Secrets are embedded at random positions in random surrounding text (seeded,
so a failure reproduces); the secret must never survive and the surrounding
words must.  Ordinary text that looks random (commit ids, UUIDs, base64 of
short words, code) must come through unchanged.
"""

import base64
import random
import time
import uuid

import pytest

from toolscript.redact import REDACTED, clean, redact, strip_private

SEED = 11

# (text that goes into the memory, the secret part that must not survive)
SECRETS = [
    ("sk-ant-api03-" + "Ab3_x-9" * 12 + "AA", None),
    ("sk-proj-" + "Zq8Lm2Np" * 6, None),
    ("sk-" + "a1B2c3D4e5F6" * 4, None),
    ("ghp_" + "R7uL0vQ2" * 4 + "abcd", None),
    ("github_pat_11ABCDEFG0" + "x9Y8z7W6v5" * 6, None),
    ("xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", None),
    ("xoxp-1234567890-0987654321-AbCdEfGhIjKl", None),
    ("xoxa-2-1234567890-AbCdEfGhIjKl", None),
    ("AKIAIOSFODNN7EXAMPLE", None),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        None,
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq9Xy\nq8Rt0Lw3/kE+Zx2Q==\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA7bq9Xy",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    ("https://deploy:Hunter2Pass@git.example.com/repo.git", "Hunter2Pass"),
    ("postgres://app:s3cr3t-pw@db.internal:5432/prod", "s3cr3t-pw"),
    ("Authorization: Bearer abc.def-ghi_jkl0123456789", "abc.def-ghi_jkl0123456789"),
    ("authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ('"Authorization": "Bearer tok_9f8e7d6c5b4a"', "tok_9f8e7d6c5b4a"),
    ("password=Tr0ub4dor&3", "Tr0ub4dor"),
    ("db_password: 'correct horse battery'", "correct horse battery"),
    ('"api_key": "k-93jf0a8sdf7a6sdf"', "k-93jf0a8sdf7a6sdf"),
    ('{"clientSecret":"qwertyuiop1234"}', "qwertyuiop1234"),
    ("TOKEN=abcd1234efgh", "abcd1234efgh"),
    ("export SLACK_BOT_TOKEN=plain-looking-value", "plain-looking-value"),
    ("curl 'https://api.example.com/v1/items?access_token=Zx81kq0Pq&page=2'", "Zx81kq0Pq"),
    ("AIzaSyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v", None),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", None),
    ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXXXXXXXXXX"),
]

WORDS = (
    "edited src/app.py to fix the login bug then ran pytest and all tests passed the build "
    "is green deploy staging config reviewed refactor parser cache invalidation"
).split()


def _secret_part(text, part):
    return part if part is not None else text


@pytest.mark.parametrize("text,part", SECRETS, ids=[s[0][:24] for s in SECRETS])
def test_secret_never_survives_in_random_text(text, part):
    rng = random.Random(SEED)
    secret = _secret_part(text, part)
    for _ in range(30):
        before = rng.sample(WORDS, rng.randint(0, 6))
        after = rng.sample(WORDS, rng.randint(0, 6))
        sep_before = rng.choice([" ", "\n", "\t", " : ", "\n\n"])
        sep_after = rng.choice([" ", "\n", ", ", "; ", "\n\n"])
        mixed = " ".join(before) + sep_before + text + sep_after + " ".join(after)
        out = clean(mixed)
        assert secret not in out, (mixed, out)
        assert REDACTED in out
        for word in before + after:
            assert word in out, (word, mixed, out)


def test_all_secrets_at_once_in_one_blob():
    rng = random.Random(SEED)
    pieces = [s[0] for s in SECRETS] + WORDS * 3
    rng.shuffle(pieces)
    out = redact("\n".join(pieces))
    for text, part in SECRETS:
        assert _secret_part(text, part) not in out
    for word in WORDS:
        assert word in out


def test_key_names_are_kept():
    assert redact("api_key=abc123xyz") == "api_key=[redacted]"
    assert redact("password: hunter22") == "password: [redacted]"
    assert redact('"token": "abc"') == '"token": "[redacted]"'
    assert redact("https://bob:pw1234@h.example/x") == "https://bob:[redacted]@h.example/x"
    assert redact("Authorization: Bearer abcdefgh12345") == "Authorization: Bearer [redacted]"


ORDINARY = [
    "commit 3f2a9c1e0b8d7f6a5e4c3b2a1f0e9d8c7b6a5f4e (HEAD -> main, origin/main)",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request id " + str(uuid.UUID(int=0x12345678123456781234567812345678)),
    "payload " + base64.b64encode(b"hello world").decode(),
    "def tokenize(text):\n    return [t for t in text.split() if t]",
    "max_tokens=1024 tokenizer=bpe author=alice",
    "token = None",
    "if password == expected:",
    "def login(user: str, password: str) -> bool:",
    "task-runner-for-the-cluster-and-more-things-here",
    "the quick brown fox jumps over the lazy dog",
    "http://localhost:8080/path?q=search&page=2",
    "git@github.com:owner/repo.git",
    "password=${DB_PASSWORD}",
    "Bearer tokens are checked by the gateway",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_redacted(text):
    assert redact(text) == text


# False positives accepted on purpose (see the module docstring): a value assigned
# to a secret-ish name is redacted even when it is code.
ACCEPTED_FALSE_POSITIVES = [
    ("token = make_token()", "token = [redacted])"),
    ("auth: done", "auth: [redacted]"),
]


@pytest.mark.parametrize("text,expected", ACCEPTED_FALSE_POSITIVES)
def test_accepted_false_positives(text, expected):
    assert redact(text) == expected


# --- <private> tags -----------------------------------------------------------


def test_private_simple_and_case_and_multiline():
    assert strip_private("a <private>x</private> b") == "a  b"
    assert strip_private("a <PRIVATE>x</Private> b") == "a  b"
    assert strip_private("a <private>\nline1\nline2\n</private>\nb") == "a \nb"
    assert strip_private('a <private reason="pii">x</private> b') == "a  b"


def test_private_nested():
    assert strip_private("a<private>x<private>y</private>z</private>b") == "ab"
    assert strip_private("a<private>x<private>y</private>z") == "a"


def test_private_unclosed_removes_to_end():
    assert strip_private("keep this <private>secret stuff\nmore") == "keep this "


def test_private_stray_close_is_dropped():
    assert strip_private("a</private>b") == "ab"


def test_other_tags_starting_with_private_are_not_private_tags():
    text = "<private-notes>kept</private-notes> <privateKey>also kept</privateKey>"
    assert strip_private(text) == text
    assert strip_private("a <private >x</private > b") == "a  b"


def test_private_many_tags():
    rng = random.Random(SEED)
    parts, kept = [], []
    for i in range(2000):
        word = f"w{i}"
        if rng.random() < 0.5:
            parts.append(f"<private>hidden{i}</private>")
        else:
            parts.append(word)
            kept.append(word)
    out = strip_private(" ".join(parts))
    assert "hidden" not in out
    assert out.split() == kept


def test_clean_strips_private_before_redacting():
    out = clean("ran deploy <private>my password is hunter2</private> ok api_key=zzz999")
    assert "hunter2" not in out and "zzz999" not in out and "private" not in out.lower()
    assert out.startswith("ran deploy") and "ok" in out


def _time(fn, arg):
    # The thread's CPU time, not the wall clock: on a loaded machine the wall
    # time of the small input can be one lucky slice and the big one's three
    # unlucky ones, which reads as quadratic when it is not.
    start = time.thread_time()
    fn(arg)
    return time.thread_time() - start


@pytest.mark.parametrize(
    "build",
    [
        lambda n: "a" * n,  # one huge identifier
        lambda n: "token" * (n // 5),  # the keyword over and over, never assigned
        lambda n: "<private>" * (n // 9),  # many unclosed tags
        lambda n: ("<private>x</private>" * (n // 20)),
        lambda n: ("password=" * (n // 9)),
        lambda n: ("-----BEGIN RSA PRIVATE KEY-----" * (n // 31)),
        lambda n: ("http://u:" * (n // 9)),
        lambda n: ("eyJ" + "a" * 20 + ".") * (n // 24),
        lambda n: " ".join(random.Random(SEED).choice(WORDS) for _ in range(n // 6)),
    ],
)
def test_linear_time_on_large_inputs(build):
    """Doubling the input at most ~doubles the time: no quadratic pattern (1 MB inputs)."""
    small, big = build(250_000), build(1_000_000)
    t_small = min(_time(clean, small) for _ in range(3))
    t_big = min(_time(clean, big) for _ in range(3))
    # 4x the input; linear is ~4x, quadratic would be ~16x. Generous against noise.
    assert t_big < max(10 * t_small, 0.05), (t_small, t_big)
