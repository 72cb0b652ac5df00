"""Secrets and ``<private>`` tags out of text, before anything is stored.

Memory (issue 11) records what an agent did and said; tool inputs and outputs
carry API keys, tokens, passwords and private keys.  ``clean`` is the one gate
every stored text goes through: ``strip_private`` drops what the user marked
``<private>...</private>``, then ``redact`` replaces secrets with
``[redacted]``, keeping the name a value belonged to (``api_key=[redacted]``)
so the memory still says what happened.

Secrets are recognised by shape (a known prefix such as ``sk-``, ``ghp_``,
``AKIA``; a JWT; a PEM private key block; a password in a URL; an
``Authorization`` header) or by the name they are assigned to (``password=``,
``"api_key": "..."``, ``GITHUB_TOKEN=...``).  Bare random strings with no
prefix and no name are NOT redacted: git commit ids, content hashes, UUIDs
and base64 are everywhere in tool output and must survive.  The false
positives accepted on purpose: any value assigned to a name ending in
token/secret/password/passwd/pwd/auth/credential(s)/api key/access key/
private key is redacted even when it is code (``token = make_token()`` ->
``token = [redacted]``), because telling code from a literal is guesswork and
losing a variable name costs less than storing a password.

Every pattern is a single left-to-right regex pass with no nested
quantifiers, so a 1 MB input takes linear time.
"""

import re
from typing import List

REDACTED = "[redacted]"

# -----BEGIN RSA PRIVATE KEY----- ... -----END RSA PRIVATE KEY-----; an unclosed
# block (a truncated tool output) is redacted to the end of the text.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)

# Tokens recognisable by their prefix alone.  Each is bounded on the left so a
# prefix inside a longer word ("task-...", "mask_...") is not taken for one.
_PREFIXED_TOKENS = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"  # Anthropic, OpenAI
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{30,}"  # GitHub fine-grained tokens
    r"|xox[abposre]-[A-Za-z0-9-]{10,}"  # Slack bot/user/app tokens
    r"|xapp-[A-Za-z0-9-]{10,}"  # Slack app-level tokens
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}(?![0-9A-Za-z])"  # AWS access key ids
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe
    r"|glpat-[0-9A-Za-z_-]{20,}"  # GitLab
    r"|npm_[0-9A-Za-z]{36}"  # npm
    r"|hf_[0-9A-Za-z]{30,}"  # Hugging Face
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT (header.payload.signature)
    r")"
)

_SLACK_WEBHOOK = re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+")

# scheme://user:password@host -> scheme://user:[redacted]@host
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s/:@]{1,200}:)([^\s/@]{1,500})(@)")

# Authorization: Bearer xyz / "authorization": "Basic xyz" / Proxy-Authorization
_AUTH_HEADER = re.compile(
    r"((?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?)"
    r"(?:((?i:bearer|basic|token|digest|bot|apikey))[ \t]+)?"
    r"([^\s\"',;]+)"
)
_BEARER = re.compile(r"\b((?i:bearer))[ \t]+([A-Za-z0-9._~+/=-]{8,})")

# name = value, name: value, "name": "value", NAME=value (env lines, query strings, JSON, YAML).
# The regex anchors on the secret-ish word right before the separator, so the name
# may have any prefix (DB_PASSWORD, clientSecret, access_token) while max_tokens=,
# tokenizer= and author= stay; anchoring on the word keeps the pass linear.
_ASSIGNMENT = re.compile(
    r"((?:password|passwd|passphrase|pwd|secret|token|auth|credentials?"
    r"|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key|signing[_-]?key|encryption[_-]?key"
    r"|session[_-]?key|master[_-]?key)[\"']?)"
    r"([ \t]*(?::=|[:=](?!=))[ \t]*)"
    r"(?:\"((?:[^\"\\\n]|\\.){0,2000})\"|'([^'\n]{0,2000})'|([^\s\"',;&}\])]{1,2000}))",
    re.IGNORECASE,
)

# Values that are plainly not secrets: keep them so "token = None" reads as code.
_NOT_A_SECRET = re.compile(
    r"(?:none|null|nil|true|false|undefined|str|int|bytes|string|number|boolean|any|optional\[.*|\*+|x+|\.\.\.|\[redacted.*|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|)",
    re.IGNORECASE,
)

# <private>, </private>, <private reason="...">; not <private-notes> or <privateKey> (other markup).
_PRIVATE_TAG = re.compile(r"<(/?)private(?:\s[^>]{0,200})?\s*>", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with API keys, tokens, passwords, private keys and auth headers replaced by ``[redacted]``."""
    if not text:
        return text
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _SLACK_WEBHOOK.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    text = _AUTH_HEADER.sub(_auth_header, text)
    text = _BEARER.sub(lambda m: m.group(1) + " " + REDACTED, text)
    text = _PREFIXED_TOKENS.sub(REDACTED, text)
    return _ASSIGNMENT.sub(_assignment, text)


def _auth_header(match: "re.Match[str]") -> str:
    scheme = match.group(2)
    value = match.group(3)
    if value.startswith(REDACTED):
        return match.group(0)
    return match.group(1) + (scheme + " " if scheme else "") + REDACTED


def _assignment(match: "re.Match[str]") -> str:
    name, sep = match.group(1), match.group(2)
    if match.group(3) is not None:
        value, quote = match.group(3), '"'
    elif match.group(4) is not None:
        value, quote = match.group(4), "'"
    else:
        value, quote = match.group(5), ""
    if _NOT_A_SECRET.fullmatch(value.strip()):
        return match.group(0)
    return name + sep + quote + REDACTED + quote


def strip_private(text: str) -> str:
    """``text`` without any ``<private>...</private>`` span (nested, any case, multi-line).

    An unclosed ``<private>`` removes everything after it: when in doubt, the
    user meant it private.  A stray ``</private>`` is dropped.  One pass over
    the tags, so many tags in a large text stay linear.
    """
    if not text or "<" not in text:
        return text
    kept: List[str] = []
    depth = 0
    position = 0
    for match in _PRIVATE_TAG.finditer(text):
        if depth == 0:
            kept.append(text[position:match.start()])
        if match.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
        position = match.end()
    if depth == 0:
        kept.append(text[position:])
    return "".join(kept)


def clean(text: str) -> str:
    """What may be stored of ``text``: ``<private>`` spans removed, then secrets redacted."""
    return redact(strip_private(text))

