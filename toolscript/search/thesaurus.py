"""Other words a request may use for a catalog word.

Two tables, each adding lookups at a discount (the weights are in
:mod:`toolscript.search.tuning`), so a literal match always counts more:

* :data:`SYNONYMS`, written here: developer shorthand read as the words it
  stands for (``repo``, ``PR``, ``mkdir``) and groups of words that often
  stand for one another (``remove`` / ``delete``, ``folder`` / ``directory``);
* the thesaurus (``data/thesaurus.tsv``, :func:`load`): for ~3,600 words of
  real tool catalogs, the words a request may say instead ("octets" for
  bytes, "nickname" for an alias, "response time" for latency), written for
  the purpose in distill/thesaurus.tsv and compiled to index terms by
  distill/thesaurus.py.  A query term, or two adjacent ones joined, found
  there also looks up the catalog terms it stands for.  It is read on first
  use, so importing search and ``--version`` stay as fast.
"""

import pkgutil
from functools import lru_cache
from typing import Dict, Tuple

from toolscript.search.text import stem

__all__ = ["ABBREVIATION", "RELATED", "SYNONYMS", "PATH", "load", "lookup"]

# Developer shorthand, read as the words it stands for: a query word on the
# left also looks up the words on the right, nearly at full weight.
_ABBREVIATIONS = {
    "repo": "repository", "pr": "pull request", "mr": "merge request", "db": "database",
    "pg": "postgres", "dir": "directory", "env": "environment", "msg": "message", "js": "javascript",
    "img": "image", "pic": "picture", "config": "configuration", "info": "information",
    "doc": "document", "desc": "description", "ttl": "expiration", "tz": "timezone",
    # shell commands
    "ls": "list", "mkdir": "create directory", "mv": "move", "rm": "remove delete", "cp": "copy",
    "cat": "read", "grep": "search", "stat": "metadata", "diff": "difference",
}

# Words that often stand for one another in tool requests.  Weaker than an
# abbreviation: the literal word should win over a related one.
_RELATED = [
    "delete remove erase drop",
    "find search lookup locate",
    "list enumerate",
    "get fetch retrieve obtain",
    "create make new add",
    "update modify change edit",
    "run execute invoke",
    "move rename",
    "folder directory",
    "image picture photo",
    "bug issue ticket",
    "compare diff difference",
    "page webpage website",
    "send post",
    "url link",
]

ABBREVIATION = "abbreviation"  # a SYNONYMS entry from the shorthand table (Tuning.abbreviation_weight)
RELATED = "related"  # a SYNONYMS entry from a group of related words (Tuning.related_weight)


def _build_synonyms() -> Dict[str, Dict[str, str]]:
    """stem -> {stem of a word to look up as well: ABBREVIATION or RELATED}; shorthand wins where both say."""
    table: Dict[str, Dict[str, str]] = {}
    for group in _RELATED:
        words = group.split()
        for w in words:
            for other in words:
                if other != w:
                    table.setdefault(stem(w), {})[stem(other)] = RELATED
    for short, meaning in _ABBREVIATIONS.items():
        for word in meaning.split():
            table.setdefault(stem(short), {})[stem(word)] = ABBREVIATION
    return table


SYNONYMS = _build_synonyms()

PATH = "data/thesaurus.tsv"  # beside this module, read with pkgutil so it loads from the zipapp as from a checkout


@lru_cache(maxsize=1)
def _text() -> str:
    """The data file's text after a newline, so every entry starts with one; empty if it is missing or damaged."""
    try:
        return "\n" + (pkgutil.get_data(__name__.rpartition(".")[0], PATH) or b"").decode("utf-8")
    except Exception:  # a missing or damaged file means search without it, never a crash
        return ""


def lookup(term: str) -> Tuple[str, ...]:
    """``load().get(term, ())`` without building the table: a few lookups in a process that needs no more (a hook)."""
    text = _text()
    start = text.find("\n" + term + "\t") if term and not term.startswith("#") and "\n" not in term else -1
    if start < 0:
        return ()
    end = text.find("\n", start + 1)
    return tuple(text[start + len(term) + 2:end if end >= 0 else len(text)].split())


@lru_cache(maxsize=1)
def load() -> Dict[str, Tuple[str, ...]]:
    """term -> the catalog terms it may stand for; empty if the data file is missing or damaged."""
    try:
        text = (pkgutil.get_data(__name__.rpartition(".")[0], PATH) or b"").decode("utf-8")
    except Exception:  # a missing or damaged file means search without it, never a crash
        return {}
    table: Dict[str, Tuple[str, ...]] = {}
    for line in text.splitlines():
        key, tab, targets = line.partition("\t")
        if tab and not key.startswith("#"):
            table[key] = tuple(targets.split())
    return table
