"""Redaction and <private> tags (toolscript/memory/redact.py): property-style cases.

Secrets are embedded at random positions in random surrounding text (seeded,
so a failure reproduces); the secret must never survive and the surrounding
words must.  Ordinary text that looks random (commit ids, UUIDs, base64 of
short words, code, port flags) must come through unchanged.  The shapes are
those of gitleaks' and detect-secrets' common rules and the password forms
of command lines and config files; tests/memory/test_secrets.py sends each through
every hook channel.
"""

import base64
import random
import time
import uuid

import pytest

from toolscript.memory import redact as redact_module
from toolscript.memory.redact import REDACTED, clean, is_secret_name, redact, strip_private

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
    # passwords on command lines
    ("mysql -u root -pS3cretMysql41 appdb", "S3cretMysql41"),
    ("mysqldump -h db -u app -p'Dump!Pass7788' appdb", "Dump!Pass7788"),
    ("mariadb --user=app --password=Mar1aPass appdb", "Mar1aPass"),
    ("curl -u admin:Sup3rCurlS3cret https://api.example.com", "Sup3rCurlS3cret"),
    ("curl --user 'admin:Sup3rCurlS3cret' https://api.example.com", "Sup3rCurlS3cret"),
    ("docker login --password Hunter2Docker99 -u bob registry.example.com", "Hunter2Docker99"),
    ("docker login -u bob -p Hunter2Podman77 quay.io", "Hunter2Podman77"),
    ("podman login --password=Hunter2Podman78 quay.io", "Hunter2Podman78"),
    ("sshpass -p 'Tr0ub4dorSsh3' ssh deploy@10.0.0.5", "Tr0ub4dorSsh3"),
    ("sshpass -pTr0ub4dorSsh4 ssh deploy@10.0.0.5", "Tr0ub4dorSsh4"),
    ("htpasswd -b -c /etc/nginx/.htpasswd admin Pa55w0rdHtpw", "Pa55w0rdHtpw"),
    ("htpasswd -nb admin Pa55w0rdHtnb", "Pa55w0rdHtnb"),
    ("redis-cli -h cache -a Redis5ecretPw ping", "Redis5ecretPw"),
    ("sqlcmd -S db -U sa -P 'Sql!Server9' -Q 'select 1'", "Sql!Server9"),
    ("ldapsearch -x -D cn=admin -w LdapPa55 -b dc=example", "LdapPa55"),
    ("smbclient //fs/share -U alice%SmbPa55word", "SmbPa55word"),
    ("gpg --batch --passphrase GpgPhrase77 -c notes.txt", "GpgPhrase77"),
    ("openssl rsa -in key.pem -passin pass:OpenS5lPass", "OpenS5lPass"),
    ("keytool -list -keystore ks.jks -storepass Store1Pass99", "Store1Pass99"),
    ("zip -P ZipPa55word secret.zip notes.txt", "ZipPa55word"),
    ("az login -u alice@example.com -p AzPa55word1", "AzPa55word1"),
    ("aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("twine upload -u __token__ -p T0kenPassw0rdX dist/*", "T0kenPassw0rdX"),
    ("mysql \\\n  -u root \\\n  -pContinu3dPass db", "Continu3dPass"),
    # name=value forms
    ("DB_PASS=s3cr3tDbValue42", "s3cr3tDbValue42"),
    ("export MYSQL_PWD=MyPwdValue9", "MyPwdValue9"),
    ("SECRET_KEY_BASE=9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc", "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc"),
    ("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=q9Zx3mK7vB2nL8pQ4rT6wY1uI5oP0aSd==;"
     "EndpointSuffix=core.windows.net", "q9Zx3mK7vB2nL8pQ4rT6wY1uI5oP0aSd=="),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=Sb9Key7Value5=",
     "Sb9Key7Value5="),
    ("https://acme.blob.core.windows.net/c/x?sv=2022-11-02&ss=b&sig=abcDEF123%2Bxyz%3Dq", "abcDEF123%2Bxyz%3Dq"),
    ("Server=db;User Id=sa;Password=AdoNetPa55;Encrypt=true", "AdoNetPa55"),
    ("machine api.example.com login bob password N3tRcPass55word", "N3tRcPass55word"),
    ("machine api.example.com\n  login bob\n  password N3tRcMulti99", "N3tRcMulti99"),
    ("db.example.com:5432:appdb:app:PgP4ssw0rd66xyz", "PgP4ssw0rd66xyz"),
    ("*:*:*:postgres:PgWildcard77", "PgWildcard77"),
    ("<password>MavenPa55word</password>", "MavenPa55word"),
    ('{\\"password\\": \\"NestedJs0nPw\\"}', "NestedJs0nPw"),
    ("--api-key Sp4ceSepKey99", "Sp4ceSepKey99"),
    ("Cookie: sessionid=Ck9Session77; csrftoken=Xy7Csrf55", "Ck9Session77"),
    ("X-API-Key: xK3yHeaderValue", "xK3yHeaderValue"),
    ("PRIVATE-TOKEN: Gl8PrivateTok3n", "Gl8PrivateTok3n"),
    ("redis://:RedisUrlPw7@cache:6379/0", "RedisUrlPw7"),
    # provider prefixes
    ("pypi-AgEIcHlwaS5vcmcCJGE0ZjYxYzFiLTk3YTctNGI0Yi1iYjBiLWU0NGFkZTNhODQxZgACKlszLCJl", None),
    ("hvs.CAESIJlU4h2pDJ6wW0bXkTaY3kqJvVXrF9n2bN4tJ5R8s", None),
    ("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", None),
    ("dop_v1_4b7c2e9a1f0d3c6b8e5a7f2d9c1b4e6a8d3f5c7b9e1a2d4f6c8b0e3a5d7f9c1b", None),
    ("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", None),
    ("7214459981:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3", None),
    ("https://api.telegram.org/bot7214459981:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3/getMe",
     "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3"),
    ("glpat-Zx8Cv7Bn6Mm5Lk4Jh3Gf", None),
    ("npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", None),
    ("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t", None),
    ("ya29.a0AfH6SMBx9Yk3Pz8Wm4Tn6Bv1Cq5Df7GhJ2s", None),
    ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", None),
    ("sk_test_4eC39HqLyjWDarjtT1zdp7dc", None),
    ("xapp-1-A0123456789-0123456789012-abcdef0123456789", None),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", None),
    ("dapi0123456789abcdef0123456789abcdef", None),
    ("lin_api_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd", None),
    ("AGE-SECRET-KEY-1QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6M", None),
    ("0123456789abcdef0123456789abcdef-us12", None),
    ("abc8Q~AbCdEfGhIjKlMnOpQrStUvWxYz0123456", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456"),
    ("SK0123456789abcdef0123456789abcdef", None),
    ("https://discord.com/api/webhooks/123456789/AbCdEf-GhIjKl_MnOp", "AbCdEf-GhIjKl_MnOp"),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIPrivPuttyKeyBody0123\nPrivate-MAC: 0a1b2c",
     "AAAAIPrivPuttyKeyBody0123"),
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
    # code that reads, passes or compares a secret holds none
    "password = input()",
    "password = getpass.getpass('Password: ')",
    "token = make_token()",
    "token = self.token",
    "api_key = os.environ['API_KEY']",
    "login(user, password=password)",
    "password: Optional[str] = None",
    "def f(token: str) -> str:",
    'headers = {"Authorization": f"Bearer {token}"}',
    '"Authorization": "Bearer " + token',
    "secret = settings.SECRET_KEY",
    "DB_PASSWORD: ${{ secrets.DB_PASSWORD }}",
    "PWD=/home/dev/proj",
    "bypass=1 compass: north passed=12",
    # -p and -P that are ports, parents, pids or patches
    "docker run -p 8080:80 -d nginx:1.27",
    "ssh -p 2222 deploy@10.0.0.5",
    "scp -P 2222 build.tar.gz deploy@host:/srv",
    "mysql -h db -P 3306 -u root -p appdb",
    "psql -h db -p 5432 -U app appdb",
    "nc -l -p 9000",
    "mkdir -p build/out && cp -p a b",
    "ps -p 1234 -o pid,cmd",
    "git add -p src/app.py",
    "pytest -p no:cacheprovider -q",
    # colons that are not .pgpass lines
    "root:x:0:0:root:/root:/bin/bash",
    "fe80::1ff:fe23:4567:890a",
    "12:30:45 INFO server started",
    "src/app.py:12:5: error: missing return",
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
    ("auth: done", "auth: [redacted]"),
    ("docker build --secret id=npmrc,src=.npmrc .", "docker build --secret [redacted] ."),
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


def test_names_values_and_commands_keep_what_says_what_happened():
    assert redact("mysql -u root -pS3cret99 appdb") == "mysql -u root -p[redacted] appdb"
    assert redact("curl -u admin:pw99x https://x") == "curl -u admin:[redacted] https://x"
    assert redact("htpasswd -b -c .htpasswd admin Pa55 # done") == "htpasswd -b -c .htpasswd admin [redacted] # done"
    assert redact("SECRET_KEY_BASE=abc123") == "SECRET_KEY_BASE=[redacted]"
    assert redact("machine h login u password p4ss") == "machine h login u password [redacted]"
    assert redact("h:5432:db:u:p4ss") == "h:5432:db:u:[redacted]"
    assert redact("<password>p4ss</password>") == "<password>[redacted]</password>"
    assert redact("curl -d 'password=x1y2' -u user:pw9 https://x") == "curl -d 'password=[redacted]' -u user:[redacted] https://x"


def test_a_value_cut_before_its_closing_quote_is_redacted_to_the_end_of_its_line():
    assert redact('password="hunter2 with spaces') == 'password="[redacted]'
    assert redact('x\npassword="hunter2 with spaces\nnext') == 'x\npassword="[redacted]\nnext'


@pytest.mark.parametrize("name, secret", [
    ("password", True), ("db_password", True), ("API_KEY", True), ("x-api-key", True), ("Authorization", True),
    ("clientSecret", True), ("access_token", True), ("AccountKey", True), ("cookie", True),
    ("headers", False), ("tokenizer", False), ("max_tokens", False), ("author", False), ("primary_key", False),
    ("key", False), ("passed", False), ("password_length", False),
])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


def test_short_and_long_texts_find_the_same_secrets(monkeypatch):
    """Short texts find trigger words with str.find, long ones with the compiled trie: the same secrets either way."""
    rng = random.Random(SEED)
    pieces = [s[0] for s in SECRETS] + ORDINARY + WORDS * 3
    texts = ["\n".join(rng.sample(pieces, 12)) for _ in range(40)]
    by_find = [redact(t) for t in texts]
    monkeypatch.setattr(redact_module, "_SHORT", 0)
    assert [redact(t) for t in texts] == by_find


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
        lambda n: 'password="' * (n // 10),  # values that never close their quote
        lambda n: '\\"password\\": \\"' * (n // 16),
        lambda n: "--password " * (n // 11),
        lambda n: "mysql -p" * (n // 8),
        lambda n: "mysql " + "-x " * (n // 3),  # one command with a long run of words
        lambda n: "mysql " + "\\" * n,
        lambda n: "htpasswd -b " * (n // 12),
        lambda n: "curl -u a:" * (n // 10),
        lambda n: "docker " * (n // 7),
        lambda n: "machine h" + " login u" * (n // 8),
        lambda n: ":5432:" * (n // 6),
        lambda n: "1:" * (n // 2),
        lambda n: ("7" * 20 + ":A") * (n // 22),
        lambda n: "q~" * (n // 2),
        lambda n: ("0123456789abcdef" * 2 + "-us") * (n // 35),
        lambda n: "Authorization: " * (n // 15),
        lambda n: "Cookie: " * (n // 8),
        lambda n: "Bearer " * (n // 7),
        lambda n: "api_key" * (n // 7),
        lambda n: "pass " * (n // 5),
        lambda n: "Private-Lines:" * (n // 14),
    ],
)
def test_linear_time_on_large_inputs(build):
    """Doubling the input at most ~doubles the time: no quadratic pattern (1 MB inputs)."""
    small, big = build(250_000), build(1_000_000)
    t_small = min(_time(clean, small) for _ in range(3))
    t_big = min(_time(clean, big) for _ in range(3))
    # 4x the input; linear is ~4x, quadratic would be ~16x. Generous against noise.
    assert t_big < max(10 * t_small, 0.05), (t_small, t_big)
