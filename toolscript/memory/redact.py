"""Secrets and ``<private>`` tags out of text, before anything is stored or cut.

Memory records what an agent did and said; tool inputs and outputs carry API
keys, tokens, passwords and private keys.  ``clean`` is the gate every stored
text goes through: ``strip_private`` drops what the user marked
``<private>...</private>``, then ``redact`` replaces secrets with
``[redacted]``, keeping what a value belonged to (``api_key=[redacted]``,
``mysql -p[redacted]``) so the memory still says what happened.  Callers that
shorten text must clean it first: a token cut in half is no longer
recognisable and its first half would be kept.

What is recognised (the shapes of gitleaks' and detect-secrets' common rules,
written for this module):

* by shape: a provider prefix (``sk-``, ``ghp_``, ``AKIA``, ``xoxb-``,
  ``glpat-``, ``pypi-Ag``, ``hvs.``, ``SG.``, ``dop_v1_``, ``shpat_``, a
  Telegram bot token, and more, see ``_TOKEN_SHAPES``); a JWT; a PEM or PuTTY
  private key block; a password in a URL; Slack/Discord/Teams webhook URLs;
  an Azure SAS ``sig=``;
* by the name a value is given to: ``password=``, ``DB_PASS=``,
  ``SECRET_KEY_BASE=``, ``"api_key": "..."``, Azure ``AccountKey=``,
  ``<password>...</password>``, ``--token VALUE``, ``Authorization:``,
  ``Cookie:``;
* by the command a value is given to: ``mysql -p...``, ``curl -u user:pw``,
  ``docker login -p``/``--password``, ``sshpass -p``, ``htpasswd -b``,
  ``redis-cli -a``, ``sqlcmd -P``, ``ldapsearch -w``, ``smbclient -U u%pw``
  and the like;
* by file format: ``.netrc`` (``machine h login u password p``) and
  ``.pgpass`` (``host:port:db:user:password``) lines.

Bare random strings with no prefix and no name are NOT redacted: git commit
ids, content hashes, UUIDs and base64 are everywhere in tool output and must
survive.  Ordinary code stays too: a value that is a call, an index, an
attribute path, a variable or a placeholder (``password = input()``,
``token = self.token``, ``password=${DB_PASSWORD}``) is not a secret, and
``-p 8080`` is only a password for the commands that take one there.  The
false positive accepted on purpose: any other word assigned to a
secret-looking name is redacted (``auth: done`` -> ``auth: [redacted]``),
since telling a word from a password is guesswork and losing a word costs
less than storing a password.

Speed: this runs on every tool call.  One pass finds the places a secret can
start (a trie of lower-case trigger words: ``password``, ``ghp_``, ``://``,
``mysql``...), and only there is a rule's pattern tried, anchored; text
between triggers is never looked at again.  Every pattern is bounded and has
no nested quantifiers, so a 1 MB input takes linear time
(tests/test_regex_linear.py, tests/memory/test_redact.py).
"""

import re
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

REDACTED = "[redacted]"


class _Lazy(object):
    """A regex compiled the first time it is used.

    A hook process meets few of these patterns; compiling them all at import
    costs more than the redaction itself (tens of ms for the whole set).  The
    compiled pattern's methods (match, sub, finditer...) are then looked up
    on this object directly.
    """

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source, self.flags = source, flags

    @property
    def regex(self) -> "re.Pattern[str]":
        return re.compile(self.source, self.flags)

    def __getattr__(self, name: str) -> Any:  # only for names not set yet: compile, then keep the method
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(self.regex, name)
        setattr(self, name, method)
        return method


class _Rule(NamedTuple):
    """One kind of secret: where it can start, and what replaces it there."""

    triggers: Tuple[str, ...]  # lower-case words a secret of this kind starts at (or just after: ``back``)
    # (text, start) -> (end of the replaced span, its replacement), or None: no secret starts there
    apply: Callable[[str, int], Optional[Tuple[int, str]]]
    back: str = ""  # characters the secret may start with before its trigger (a Telegram token's digits)
    back_max: int = 0


def _pattern_rule(pattern: _Lazy, replace: Callable[..., Optional[str]], *triggers: str, back: str = "",
                  back_max: int = 0) -> _Rule:
    """A rule whose secret ``pattern`` matches at the trigger; ``replace`` gives the match's replacement or None."""

    def apply(text: str, start: int) -> Optional[Tuple[int, str]]:
        match = pattern.match(text, start)
        if match is None:
            return None
        replacement = replace(match)
        return None if replacement is None else (match.end(), replacement)

    return _Rule(tuple(triggers), apply, back, back_max)


# -- what is not a secret ----------------------------------------------------------------

# Values that are plainly not secrets: types, literals, placeholders, variables, templates.
_PLACEHOLDER = _Lazy(
    r"(?i:none|null|nil|true|false|undefined|str|int|bytes|bool|string|number|boolean|any|object|optional\[.*"
    r"|redacted|required|hidden)"
    r"|[01]|\*+|[xX]+|\.\.\.|\u2026|\[redacted.*|"
    r"|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*|\$\{\{.*|\{\{.*|<[^>]*>?|\{[A-Za-z0-9_.]*\}|%\(?[A-Za-z0-9_]*\)?[sd]"
)
# Code, not a literal: a call or an index (input(), os.environ[...]), or an attribute path (self.token, args.password).
_CODE = _Lazy(r"[A-Za-z_][A-Za-z0-9_.]*[(\[].*|[a-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+")
# A token has digits or punctuation; "Bearer authentication" is prose.
_TOKENISH = _Lazy(r"[0-9._~+/=-]")


def _not_a_secret(value: str, name: str = "") -> bool:
    """Whether ``value``, given to ``name``, is code or a placeholder rather than a secret."""
    value = value.strip()
    if _PLACEHOLDER.fullmatch(value) or _CODE.fullmatch(value):
        return True
    # password=password, api_key=apiKey: a variable passed on under its own name.
    return bool(name) and _bare(value) == _bare(name)


def _bare(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace(".", "")


def _keep(match: "re.Match[str]", group: str, replacement: str = REDACTED) -> str:
    """The match with one group's text replaced (names, separators and quotes around it kept)."""
    start, end = match.span(group)
    whole = match.group(0)
    offset = match.start()
    return whole[: start - offset] + replacement + whole[end - offset:]


# -- by shape --------------------------------------------------------------------------------

# (triggers, pattern) per provider; a pattern starts at its trigger.  Lengths are the
# providers' documented ones where fixed, else a floor that ordinary words do not reach.
_TOKEN_SHAPES: Sequence[Tuple[Tuple[str, ...], str]] = (
    (("sk-",), r"sk-(?:ant-(?:api|admin)\d\d-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),  # Anthropic, OpenAI
    (("sk.eyj",), r"sk\.eyJ[A-Za-z0-9_.-]{20,}"),  # Mapbox secret tokens
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub
    (("github_pat_",), r"github_pat_[A-Za-z0-9_]{30,}"),
    (("xox",), r"xox[abposre]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9-]{10,}"),  # Slack
    (("xapp-",), r"xapp-[A-Za-z0-9-]{10,}"),
    (("akia", "asia", "abia", "acca", "a3t", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
     r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Za-z0-9])"),  # AWS key ids
    (("aiza",), r"AIza[A-Za-z0-9_-]{35}"),  # Google API keys
    (("gocspx-",), r"GOCSPX-[A-Za-z0-9_-]{20,}"),  # Google OAuth client secrets
    (("ya29.",), r"ya29\.[A-Za-z0-9_-]{20,}"),  # Google OAuth access tokens
    (("1//0",), r"1//0[A-Za-z0-9_-]{30,}"),  # Google OAuth refresh tokens
    (("sk_", "rk_"), r"[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,}"),  # Stripe
    (("whsec_",), r"whsec_[A-Za-z0-9+/=]{20,}"),  # Stripe webhook secrets
    (("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glptt-", "glimt-", "glagent-", "gloas-", "glffct-"),
     r"gl(?:pat|dt|ft|soat|rt|cbt|ptt|imt|agent|oas|ffct)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9]{2,})?"),  # GitLab
    (("gr1348941",), r"GR1348941[A-Za-z0-9_-]{20,}"),  # GitLab runner registration
    (("npm_",), r"npm_[A-Za-z0-9]{36}"),
    (("hf_",), r"hf_[A-Za-z0-9]{30,}"),  # Hugging Face
    (("api_org_",), r"api_org_[A-Za-z]{30,}"),
    (("eyj",), r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),  # JWT (header.payload.signature)
    (("pypi-ag",), r"pypi-Ag[A-Za-z0-9_-]{50,}"),  # PyPI upload tokens
    (("hvs.", "hvb.", "hvr."), r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),  # HashiCorp Vault
    (("sg.",), r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}"),  # SendGrid
    (("dop_v1_", "doo_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}"),  # DigitalOcean
    (("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),  # Shopify
    (("dapi",), r"dapi[a-f0-9]{32}(?:-\d)?"),  # Databricks
    (("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),  # Linear
    (("pplx-",), r"pplx-[A-Za-z0-9]{40,}"),  # Perplexity
    (("pmak-",), r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),  # Postman
    (("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),  # Sentry
    (("pnu_",), r"pnu_[A-Za-z0-9]{36}"),  # Prefect
    (("rubygems_",), r"rubygems_[a-f0-9]{48}"),
    (("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}"),  # Square
    (("xkeysib-", "xsmtpsib-"), r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),  # Brevo
    (("glc_", "glsa_"), r"glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),  # Grafana
    (("ntn_",), r"ntn_[A-Za-z0-9]{40,}"),  # Notion
    (("ops_eyj",), r"ops_eyJ[A-Za-z0-9+/=]{100,}"),  # 1Password service accounts
    (("age-secret-key-1",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    (("dp.",), r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}"),  # Doppler
    (("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),  # Dynatrace
    (("pul-",), r"pul-[a-f0-9]{40}"),  # Pulumi
    (("hrku-",), r"HRKU-[A-Za-z0-9_-]{40,}"),  # Heroku
    (("pscale_",), r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,}"),  # PlanetScale
    (("rdme_",), r"rdme_[a-z0-9]{70}"),  # ReadMe
    (("tskey-",), r"tskey-[A-Za-z0-9_-]{20,}"),  # Tailscale
    (("gsk_",), r"gsk_[A-Za-z0-9]{40,}"),  # Groq
    (("xai-",), r"xai-[A-Za-z0-9]{40,}"),  # xAI
    (("r8_",), r"r8_[A-Za-z0-9]{30,}"),  # Replicate
    (("lsv2_",), r"lsv2_(?:pt|sk)_[A-Za-z0-9_]{30,}"),  # LangSmith
    (("sbp_", "sb_secret_"), r"sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,}"),  # Supabase
    (("atatt3",), r"ATATT3[A-Za-z0-9_=-]{30,}"),  # Atlassian API tokens
    (("akcp",), r"AKCp[A-Za-z0-9]{60,}"),  # Artifactory
    (("nrak-", "nrii-"), r"NR(?:AK|II)-[A-Za-z0-9-]{27,}"),  # New Relic
    (("ezak", "eztk"), r"EZ[AT]K[A-Za-z0-9]{54}"),  # EasyPost
    (("sha256~",), r"sha256~[A-Za-z0-9_-]{43}"),  # OpenShift
    (("fo1_", "fm2_", "fm1a_", "fm1r_"), r"fo1_[A-Za-z0-9_-]{43}|fm(?:2|1[ar])_[A-Za-z0-9+/]{100,}={0,3}"),  # Fly.io
    (("shippo_",), r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    (("tfp_",), r"tfp_[A-Za-z0-9_.=-]{59}"),  # Typeform
    (("clojars_",), r"CLOJARS_[A-Za-z0-9]{60}"),
    (("duffel_",), r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}"),
    (("flwseck",), r"FLWSECK(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?"),  # Flutterwave
    (("sk",), r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])"),  # Twilio API keys
)

# A token starts a word: "task-runner" holds no "sk-" token.
_TOKEN_START = r"(?<![A-Za-z0-9_-])(?:"
# Shapes whose recognisable part is in the middle: the match starts up to back_max characters before it.
_TELEGRAM = _Lazy(r"(?<![0-9])\d{5,16}:A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])")  # bot id:token (after "/bot" in URLs)
_MAILCHIMP = _Lazy(r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])")
_AZURE_AD_SECRET = _Lazy(r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}")
_WEBHOOK = _Lazy(
    r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/"
    r"|webhook\.office\.com/webhookb2/)[A-Za-z0-9_@/+.-]+"
)
# -----BEGIN RSA PRIVATE KEY----- ... -----END RSA PRIVATE KEY-----; an unclosed block
# (a cut tool output) is redacted to the end of the text.  PuTTY keys: the private lines.
_PRIVATE_KEY = _Lazy(
    r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|.*)"
    r"|Private-Lines:(?:.*?Private-MAC:[ \t]*[0-9a-fA-F]*|.*)",
    re.DOTALL,
)


def _whole(match: "re.Match[str]") -> Optional[str]:
    return REDACTED


# scheme://user:password@host -> scheme://user:[redacted]@host (the user may be empty: redis://:pw@host)
_URL_PASSWORD = _Lazy(r"://[^\s/:@'\"]{0,200}:(?P<v>[^\s/@'\"]{1,500})@")


def _value(match: "re.Match[str]") -> Optional[str]:
    value = match.group("v")
    if _not_a_secret(value):
        return None
    return _keep(match, "v")


# -- by name ---------------------------------------------------------------------------------

# Who a "key" belongs to when the key is a secret (api_key, AccountKey, SECRET_KEY), not a lookup key.
_KEY_OWNERS = (
    "api", "access", "private", "secret", "signing", "encryption", "encrypt", "decrypt", "session", "master", "account",
    "auth", "client", "service", "app", "consumer", "license", "subscription", "db", "database", "priv", "storage",
    "hmac", "webhook", "deploy", "admin", "root", "ssh", "gpg", "pgp",
)
# A name that holds a secret, from its secret-bearing word on (DB_PASSWORD is matched from PASSWORD):
# the word, then an optional tail (SECRET_KEY_BASE, client-key-data).  Longest first: the name is
# matched on its own, before what follows it.  A bare "pass" needs a word boundary before it
# (DB_PASS, dbPass), so bypass= and compass: stay.
_NAME = (
    r"(?:(?:shared[_.-]?access|" + "|".join(_KEY_OWNERS) + r")[_.-]?key"
    r"|shared[_.-]?access[_.-]?signature"
    r"|pass(?:word|wd|phrase)"
    r"|(?:(?<![A-Za-z])|(?<=[a-z0-9])(?=(?-i:P)))pass"
    r"|pwd|secret|token|auth|credentials?|creds"
    r")(?:[_.-]?(?:base|value|b64|base64|hex|raw|plain|plaintext|str|string|data))?"
)
_NAME_RE = _Lazy(_NAME, re.IGNORECASE)
_SECRET_WORDS = ("pass", "pwd", "secret", "token", "auth", "credential", "creds")
_NAME_TRIGGERS = _SECRET_WORDS + ("shared",) + _KEY_OWNERS

# After the name: = value, : value, ": "value", => value, \": \"value\" (env lines, query strings,
# JSON, JSON inside JSON, YAML, TOML, PHP).  A quoted value with no closing quote (a cut
# text) is taken to the end of its line, unless a bracket comes first: in
# getpass('Password: ') the quote after "Password:" closes a string, it opens no value.
_ASSIGNED = _Lazy(
    r"(?:\\?[\"'])?[ \t]{0,20}(?::=|=>|[:=](?![=>:]))[ \t]{0,20}"
    r"(?:[fFrRbBuU]{1,2}(?=\\?[\"']))?"  # f"...", b'...': the quote opens the value
    r"(?:\\\"(?P<v1>[^\"\\\n]{0,2000})\\\""
    r"|\"(?P<v2>(?:[^\"\\\n]|\\.){0,2000})\""
    r"|'(?P<v3>[^'\n]{0,2000})'"
    r"|\\?[\"'](?P<v5>[^\"'\\\n)\]}]{1,2000})(?=\r?\n|\Z)"
    r"|(?P<v4>[^\s\"',;&}\])]{1,2000}))"
)
# <password>value</password>, <ApiKey>value</ApiKey> (Maven settings, .NET configs)
_ELEMENT = _Lazy(r">(?P<v1>[^<\n]{1,2000})(?=</)")
# --password VALUE, --api-key VALUE (after a dash, the value after a space)
_FLAG_VALUE = r"[ \t]+(?:'(?P<v1>[^'\n]{0,500})'|\"(?P<v2>[^\"\n]{0,500})\"|(?!-)(?P<v3>[^\s'\"]{1,500}))"
_FLAGGED = _Lazy(_FLAG_VALUE)
# openssl -passin/-passout VALUE, keytool -storepass/-keypass/-srcstorepass VALUE
_PASS_FLAG = _Lazy(r"(?:(?<=-)|(?<=-src)|(?<=-dest))(?P<name>pass(?:in|out)|(?:store|key)pass)" + _FLAG_VALUE)


def _named(text: str, start: int) -> Optional[Tuple[int, str]]:
    """A secret-bearing name at ``start`` and the value given to it: ``NAME=value``, ``<NAME>value<``, ``-NAME value``."""
    name = _NAME_RE.match(text, start)
    if name is None:
        return None
    before = text[start - 1] if start else ""
    for tail, wanted in ((_ASSIGNED, True), (_ELEMENT, before == "<"), (_FLAGGED, before == "-")):
        match = tail.match(text, name.end()) if wanted else None
        if match is None:
            continue
        group = next(g for g in ("v1", "v2", "v3", "v5", "v4") if match.groupdict().get(g) is not None)
        value = match.group(group)
        if _not_a_secret(value, name.group(0)):
            return None
        if name.group(0).lower() == "pwd" and value.startswith("/") and not (before.isalnum() or before in ("_", "-", ".")):
            return None  # PWD=/home/me is the shell's working directory; MYSQL_PWD=... is a password
        return match.end(), text[start:match.start(group)] + REDACTED + text[match.end(group):match.end()]
    return None


def _named_key(text: str, start: int) -> Optional[Tuple[int, str]]:
    """``_named`` for the words that are secret names only before "key" (api_key, AccountKey): "api/v1" is cheap."""
    near = text[start:start + 40].lower()
    if "key" not in near and "signature" not in near:
        return None
    return _named(text, start)


def _named_pass(text: str, start: int) -> Optional[Tuple[int, str]]:
    """``_named`` for "pass": "passed" and "passing" (test output, everywhere) are cheap."""
    after = text[start + 4:start + 5]
    if after.isalpha() and after not in "wWpP":
        return None
    return _named(text, start)


def _pass_flag(match: "re.Match[str]") -> Optional[str]:
    group = next(g for g in ("v1", "v2", "v3") if match.group(g) is not None)
    if _not_a_secret(match.group(group)):
        return None
    return _keep(match, group)


# Authorization: Bearer xyz / "authorization": "Basic xyz" / Proxy-Authorization
_AUTH_HEADER = _Lazy(
    r"authorization(?:\\?[\"'])?[ \t]{0,20}[:=][ \t]{0,20}(?:[fFrRbBuU]{0,2}\\?[\"'])?"
    r"(?:(?:bearer|basic|token|digest|bot|apikey|api-key|negotiate|ntlm|hmac|sso-key|key|aws4-hmac-sha256)[ \t]+)?"
    r"(?P<v>[^\s\"'\\,;]{1,2000})",
    re.IGNORECASE,
)
_BEARER = _Lazy(r"bearer[ \t]+(?P<v>[A-Za-z0-9._~+/=-]{8,2000})", re.IGNORECASE)
# Cookie: a=1; b=2 / Set-Cookie: sid=...; Path=/: every name=value pair (cookies are bearer credentials).
_COOKIE_PAIR = r"(?:[^\s;=,\"'\\]{1,200}=[^\s;,\"'\\]{0,4000}|(?i:httponly|secure|partitioned)\b)"
_COOKIE = _Lazy(
    r"cookie(?:\\?[\"'])?[ \t]{0,20}:[ \t]{0,20}(?:\\?[\"'])?(?=[A-Za-z0-9_.%-]{1,200}=)"
    r"(?P<v>" + _COOKIE_PAIR + r"(?:;[ \t]?" + _COOKIE_PAIR + r"){0,50})",
    re.IGNORECASE,
)
# Azure SAS tokens: ...?sv=2022-11-02&ss=b&sig=<signature>
_SAS_SIGNATURE = _Lazy(r"(?<=[?&;])sig=(?P<v>[^&\s\"'#]{8,1000})", re.IGNORECASE)


_AUTH_SCHEMES = frozenset(("bearer", "basic", "token", "digest", "bot", "apikey", "api-key", "negotiate", "ntlm", "hmac"))


def _auth_value(match: "re.Match[str]") -> Optional[str]:
    if match.group("v").lower() in _AUTH_SCHEMES:  # "Authorization": "Bearer " + token: the scheme alone
        return None
    return _value(match)


def _bearer(match: "re.Match[str]") -> Optional[str]:
    value = match.group("v")
    if not _TOKENISH.search(value) or _not_a_secret(value):
        return None
    return _keep(match, "v")


# -- by file format -----------------------------------------------------------------------

# .netrc: machine HOST login USER password PASS (one line or several)
_NETRC = _Lazy(
    r"(?<![A-Za-z0-9_-])(?:machine[ \t]+\S{1,256}|default)"
    r"(?:\s{1,40}(?:login|account|port|protocol|user)[ \t]+\S{1,256}){0,4}\s{1,40}password[ \t]+(?P<v>\S{1,500})"
)
# .pgpass: host:port:database:user:password as one word (a line of the file, or quoted in a
# sentence); found from its ":port:" (a literal ":" the regex engine skips to quickly), the
# host checked back to the word's start, so IPv6 addresses and paths with colons are not it.
_PGPASS = _Lazy(r":(?:\d{1,5}|\*):[^\s:]{1,255}:[^\s:]{1,255}:(?P<v>(?:[^\s:\\]|\\.){1,500})(?=\s|\Z)")
_PGPASS_HOST = _Lazy(r"[^\s:#][^\s:]{0,254}")


def _pgpass(text: str) -> str:
    if ":" not in text:
        return text
    pieces: List[str] = []
    done = 0
    for match in _PGPASS.finditer(text):
        host = match.start()
        while host > done and match.start() - host <= 255 and not text[host - 1].isspace():
            host -= 1
        if (host > 0 and not text[host - 1].isspace()) or not _PGPASS_HOST.fullmatch(text, host, match.start()):
            continue
        if _not_a_secret(match.group("v")):
            continue
        pieces.append(text[done:match.start("v")])
        pieces.append(REDACTED)
        done = match.end("v")
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


# -- by command ---------------------------------------------------------------------------

# One shell command's words: to the end of the line, ;, | or & (a backslash-newline continues it).
_SEGMENT = r"(?P<args>(?:[^\n;|&\\]|\\[\s\S]){0,2000})"
_VALUE = r"(?P<v>'[^'\n]{0,500}'|\"[^\"\n]{0,500}\"|[^\s'\"]{1,500})"


def _command(names: str, prefix: str = "") -> _Lazy:
    return _Lazy(r"(?<![A-Za-z0-9_.-])(?:" + names + r")(?![A-Za-z0-9_-])" + prefix + _SEGMENT)


# (command pattern, the password arguments in its words)
_COMMANDS: Sequence[Tuple[Tuple[str, ...], _Lazy, _Lazy]] = (
    (("mysql", "mariadb"), _command(r"(?:mysql|mariadb)[a-z-]{0,12}"),
     _Lazy(r"(?<=\s)-p(?P<v>'[^'\n]{0,500}'|\"[^\"\n]{0,500}\"|[^\s'\"-][^\s'\"]{0,499})")),  # -pSECRET, not -p alone
    (("sshpass",), _command("sshpass"), _Lazy(r"(?<=\s)-p[ \t]*" + _VALUE)),
    (("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "cosign", "regctl"),
     _command(r"docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|cosign|regctl", r"(?=[^\n;|&]{0,60}?\blogin\b)"),
     _Lazy(r"(?<=\s)(?:-p|--password)(?:[ \t]+|=)" + _VALUE)),
    (("az",), _command("az", r"(?=[ \t]+login\b)"), _Lazy(r"(?<=\s)(?:-p|--password)(?:[ \t]+|=)" + _VALUE)),
    (("curl",), _command("curl"),
     _Lazy(r"(?<=\s)(?:-u|--user|-U|--proxy-user)(?:=|[ \t]*)['\"]?[^\s:'\"]{0,200}:(?P<v>[^\s'\"]{1,500})")),
    (("redis-cli",), _command("redis-cli"), _Lazy(r"(?<=\s)-a[ \t]+" + _VALUE)),
    (("mongo",), _command(r"mongo[a-z]{0,8}"), _Lazy(r"(?<=\s)-p[ \t]+(?!-)" + _VALUE)),
    (("sqlcmd", "bcp"), _command("sqlcmd|bcp"), _Lazy(r"(?<=\s)-P[ \t]*" + _VALUE)),
    (("ldap",), _command(r"ldap[a-z]{2,10}"), _Lazy(r"(?<=\s)-w[ \t]+" + _VALUE)),
    (("smbclient", "rpcclient", "smbmap", "smbget"), _command("smbclient|rpcclient|smbmap|smbget"),
     _Lazy(r"(?<=\s)-U[ \t]*['\"]?[^\s%'\"]{1,200}%(?P<v>[^\s'\"]{1,500})")),
    (("zip", "unzip"), _command("zip|unzip"), _Lazy(r"(?<=\s)-P[ \t]+" + _VALUE)),
    (("7z",), _command("7za?|7zr"), _Lazy(r"(?<=\s)-p(?P<v>[^\s'\"]{1,500})")),
    (("openssl",), _command("openssl"), _Lazy(r"(?<=\s)-k[ \t]+" + _VALUE)),
    (("ssh-keygen",), _command("ssh-keygen"), _Lazy(r"(?<=\s)-[NP][ \t]+" + _VALUE)),
    (("sqlplus",), _command("sqlplus"), _Lazy(r"(?<=\s)[A-Za-z_][A-Za-z0-9_$#]{0,127}/(?P<v>[^\s@/'\"]{1,500})")),
    (("lftp",), _command("lftp"), _Lazy(r"(?<=\s)-u[ \t]+[^\s,]{1,200},(?P<v>[^\s'\"]{1,500})")),
    (("twine",), _command("twine"), _Lazy(r"(?<=\s)(?:-p|--password)(?:[ \t]+|=)" + _VALUE)),
    (("aws",), _command("aws", r"(?=[ \t]+configure[ \t]+set\b)"),
     _Lazy(r"(?:aws_secret_access_key|aws_session_token)[ \t]+" + _VALUE)),
)
_HTPASSWD = _command("htpasswd")


def _args_redacted(arguments: _Lazy, args: str) -> Optional[str]:
    """``args`` with the values ``arguments`` finds redacted, or None when it finds none to redact."""
    changed = [False]

    def one(match: "re.Match[str]") -> str:
        value = match.group("v")
        if value[:1] in "'\"":
            value = value[1:-1]
        if _not_a_secret(value):
            return match.group(0)
        changed[0] = True
        return _keep(match, "v")

    out = arguments.sub(one, args)
    return out if changed[0] else None


def _htpasswd_args(args: str) -> Optional[str]:
    """htpasswd -b [-c...] FILE USER PASSWORD, or -nb USER PASSWORD: the third word (the second with -n) is the password."""
    flags = "".join(w[1:] for w in args.split() if w.startswith("-") and not w.startswith("--"))
    if "b" not in flags:
        return None
    wanted = 1 if "n" in flags else 2
    for number, word in enumerate(re.finditer(r"(?<!\S)(?!-)\S+", args)):
        if number == wanted:
            if _not_a_secret(word.group(0)):
                return None
            return args[:word.start()] + REDACTED + args[word.end():]
    return None


# -- the pass ------------------------------------------------------------------------------


def _rules(commands: bool) -> List[_Rule]:
    """Every rule, in the order they are tried where several start at one place; command rules only at the top."""
    rules = [
        _pattern_rule(_PRIVATE_KEY, _whole, "-----begin", "private-lines:"),
        _pattern_rule(_URL_PASSWORD, _value, "://"),
        _pattern_rule(_WEBHOOK, _whole, "hooks.slack.com/", "discord.com/api/webhooks/",
                      "discordapp.com/api/webhooks/", "webhook.office.com/webhookb2/"),
        _pattern_rule(_AUTH_HEADER, _auth_value, "authorization"),
        _pattern_rule(_COOKIE, _value, "cookie"),
        _pattern_rule(_BEARER, _bearer, "bearer"),
        _pattern_rule(_SAS_SIGNATURE, _value, "sig="),
        _pattern_rule(_NETRC, _value, "machine", "default"),
    ]
    rules += [_pattern_rule(_Lazy(_TOKEN_START + shape + ")"), _whole, *triggers) for triggers, shape in _TOKEN_SHAPES]
    rules += [
        _pattern_rule(_TELEGRAM, _whole, ":a", back="0123456789", back_max=16),
        _pattern_rule(_MAILCHIMP, _whole, "-us", back="0123456789abcdef", back_max=32),
        _pattern_rule(_AZURE_AD_SECRET, _whole, "q~", back=_WORD_CHARS + "~.", back_max=4),
        _Rule(("pass",), _named_pass),
        _Rule(tuple(w for w in _SECRET_WORDS if w != "pass"), _named),
        _Rule(tuple(w for w in ("shared",) + _KEY_OWNERS if w not in _SECRET_WORDS), _named_key),
        _pattern_rule(_PASS_FLAG, _pass_flag, "passin", "passout", "storepass", "keypass"),
    ]
    if commands:
        for triggers, segment, arguments in _COMMANDS:
            rules.append(_pattern_rule(segment, _command_rule(arguments), *triggers))
        rules.append(_pattern_rule(_HTPASSWD, _command_rule(None), "htpasswd"))
    return rules


_WORD_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"


def _command_rule(arguments: Optional[_Lazy]) -> Callable[..., Optional[str]]:
    def replace(match: "re.Match[str]") -> Optional[str]:
        args = match.group("args")
        done = _htpasswd_args(args) if arguments is None else _args_redacted(arguments, args)
        if done is None:
            return None  # no password here: the words are looked at like any other text
        # The command's other words may hold other secrets (curl -d password=...): redact them too,
        # without command rules, so a command inside a command costs no second pass.
        return match.group(0)[: match.start("args") - match.start()] + _redact(done, commands=False)

    return replace


def _trie(words: Sequence[str]) -> str:
    """A regex matching any of ``words``, shaped as a trie so each position costs one branch per letter."""
    root: Dict[str, dict] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: Dict[str, dict]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return ("(?:" + "|".join(branches) + ")?") if len(branches) > 1 else "(?:" + body + ")?"
        return body

    return emit(root)


class _Scanner(object):
    """Where secrets can start in a text: the trigger words, and per trigger the rules to try there."""

    def __init__(self, rules: Sequence[_Rule]) -> None:
        order = {id(rule): number for number, rule in enumerate(rules)}
        by_trigger: Dict[str, List[_Rule]] = {}
        for rule in rules:
            for trigger in rule.triggers:
                by_trigger.setdefault(trigger, []).append(rule)
        self.rules_at: Dict[str, List[_Rule]] = {}
        for word in by_trigger:
            # The longest trigger at a position is reported; triggers that are its prefixes start there too.
            found = {id(rule): rule for size in range(1, len(word) + 1) for rule in by_trigger.get(word[:size], ())}
            self.rules_at[word] = sorted(found.values(), key=lambda rule: order[id(rule)])
        self.words = sorted(by_trigger)
        self.by_first: Dict[str, List[str]] = {}
        for word in self.words:
            self.by_first.setdefault(word[0], []).append(word)
        self._trie: Optional["re.Pattern[str]"] = None

    def triggers(self, lowered: str, done: List[int]) -> Iterator[Tuple[int, str]]:
        """(position, longest trigger there), in order, none before ``done[0]`` (which the caller moves on)."""
        start = done[0]
        if len(lowered) - start <= _SHORT:
            # Most texts are a command or a line of output: a find per word beats compiling the trie (~3 ms a process).
            hits = []
            by_first = self.by_first
            for word in (w for char in set(lowered[start:]) if char in by_first for w in by_first[char]):
                at = lowered.find(word, start)
                while at >= 0:
                    hits.append((at, -len(word), word))
                    at = lowered.find(word, at + 1)
            hits.sort()
            last = -1
            for at, _, word in hits:
                if at != last:
                    last = at
                    yield at, word
            return
        if self._trie is None:
            self._trie = re.compile(_trie(self.words))
        search = self._trie.search
        found = search(lowered, start)
        while found is not None:
            yield found.start(), found.group(0)
            found = search(lowered, max(found.start() + 1, done[0]))


_SHORT = 2000  # characters: below this the triggers are found with str.find, above with the compiled trie
_SCANNERS: Dict[bool, _Scanner] = {}
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def _scanner(commands: bool) -> _Scanner:
    """The scanner for top-level text (``commands``) or a command's own words; built once per process, on first use."""
    scanner = _SCANNERS.get(commands)
    if scanner is None:
        scanner = _SCANNERS[commands] = _Scanner(_rules(commands))
    return scanner


def redact(text: str) -> str:
    """``text`` with API keys, tokens, passwords, private keys and auth headers replaced by ``[redacted]``."""
    if not text:
        return text
    return _pgpass(_redact(text, commands=True))


def _redact(text: str, commands: bool) -> str:
    scanner = _scanner(commands)
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: positions must line up
        lowered = text.translate(_ASCII_LOWER)
    pieces: List[str] = []
    settled = [0]  # text before this is settled (copied or replaced)
    for at, word in scanner.triggers(lowered, settled):
        done = settled[0]
        if at < done:
            continue  # inside a secret already replaced
        for rule in scanner.rules_at[word]:
            start = _back(text, at, done, rule) if rule.back else at
            found = rule.apply(text, start)
            if found is None:
                continue
            pieces.append(text[done:start])
            pieces.append(found[1])
            settled[0] = found[0]
            break
    if not pieces:
        return text
    pieces.append(text[settled[0]:])
    return "".join(pieces)


def _back(text: str, at: int, floor: int, rule: _Rule) -> int:
    start = at
    while start > floor and at - start < rule.back_max and text[start - 1] in rule.back:
        start -= 1
    return start


def is_secret_name(name: str) -> bool:
    """Whether a value stored under ``name`` (a JSON key, an argument name) is a secret: password, api_key, token..."""
    name = name.strip()[-100:]
    lowered = name.lower()
    if lowered in ("authorization", "proxy-authorization", "cookie", "set-cookie"):
        return True
    for word in _NAME_TRIGGERS:
        at = lowered.find(word)
        while at >= 0:
            found = _NAME_RE.match(name, at)
            if found is not None and found.end() == len(name):
                return True
            at = lowered.find(word, at + 1)
    return False


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is code or a placeholder rather than a secret (``None``, ``${TOKEN}``, ``input()``)."""
    return _not_a_secret(value)


# <private>, </private>, <private reason="...">; not <private-notes> or <privateKey> (other markup).
_PRIVATE_TAG = _Lazy(r"<(/?)private(?:\s[^>]{0,200})?\s*>", re.IGNORECASE)


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
