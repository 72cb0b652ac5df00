"""The `local` suggestion backend: which skills and tool searches fit a prompt, without a model.

It answers in the shape the model backends are asked for --
``{"skills": [<= 3 names], "toolQueries": [<= 3 search strings]}`` -- and
serves air-gapped machines and the fallback when a model call fails or runs
out of time.  Everything here is a pure function of its arguments: no I/O,
no clock, no randomness, so the same prompt and skills give the same answer.

* :func:`nothing_wanted` says when a prompt needs no suggestion at all:
  slash commands, greetings, thanks, acknowledgements ("yes do it",
  "continue") and prompts with next to no words.
* Skills are ranked by BM25 over their names and descriptions, with the
  words, stems and typo tolerance of :mod:`toolscript.search`.  A skill is
  suggested only when its score clears :data:`SKILL_SCORE_FLOOR` -- enough
  rare words of the prompt found in the skill, its name counting most -- or,
  for a terse prompt, :data:`SKILL_SHORT_FLOOR` while it accounts for most
  of the prompt (:data:`SKILL_COVERAGE_FLOOR`); and, after the first, when it comes close to the best one
  (:data:`SKILL_RELATIVE_FLOOR`), so unrelated prompts get nothing.
* Tool queries are the first content words of the prompt (stopwords, chat
  words and pasted code dropped, URLs read as "url", quoted text and paths
  left out, "#name" read as "channel"): one per clause for a prompt of
  several clauses, else the whole prompt.  A question about a concept
  ("what's the difference between ...", "how does ... work", "explain ...")
  gets none: the model answers it itself (:func:`knowledge_question`).  A
  query a chosen skill accounts for is still asked: beside the skill, the
  pipeline shows only tools of a server the prompt names ("query the
  postgres db" keeps postgres' query tool next to a database skill; "write
  release notes" gets none).  The gateway's /search ranks the queries
  against the catalog; the pipeline (``suggest.select_tools``) decides which
  hits are shown, from :data:`TOOL_SCORE_FLOOR` and the other rules there.

The thresholds were tuned on the dev half of bench/suggest_eval/ (see
bench/suggest_eval.py, which prints the figures for both halves).
"""

import math
import re
from typing import Any, Dict, List, Sequence, Tuple

# The gateway's own word handling, so a tool query is read here the way /search
# will read it (its stopwords and edit distance, not copies of them).
from toolscript.search.text import STOPWORDS, edit_distance, stem, terms, tokenize

__all__ = ["suggest", "nothing_wanted", "knowledge_question", "asks_question", "tool_queries", "rank_skills",
           "TOOL_SCORE_FLOOR", "SKILL_SCORE_FLOOR",
           "SKILL_SHORT_FLOOR", "SKILL_COVERAGE_FLOOR", "SKILL_RELATIVE_FLOOR"]

# The gateway /search score (0..1) from which a query's best hit is suggested
# (suggest.select_tools has the rules for a best hit under it).
TOOL_SCORE_FLOOR = 0.40
# A skill's BM25 score (see _SkillIndex.rank) from which it is suggested: several
# of the prompt's rarer words found in the skill, or one in its name and more.
SKILL_SCORE_FLOOR = 9.0
# A lower score suffices when the skill accounts for most of what the prompt
# says (SKILL_COVERAGE_FLOOR of its words by idf): terse prompts ("commit this").
SKILL_SHORT_FLOOR = 5.0
SKILL_COVERAGE_FLOOR = 0.5
# A second or third skill must score at least this share of the best one.
SKILL_RELATIVE_FLOOR = 0.8

MAX_ITEMS = 3  # skills and queries in an answer, as the model is asked for
_MAX_PROMPT_CHARS = 4000  # a prompt is read this far: pasted logs add noise, not meaning
# Words in one tool query: a clause's first content words name the action and
# its object ("insert test row sqlite", "search web latest node"); what
# follows is detail no tool describes, and every word a tool lacks lowers
# its score on the gateway's scale (the share of the query it accounts for).
_MAX_QUERY_WORDS = 4
_MAX_CORRECTIONS = 20  # unknown prompt words tried for typo correction

# -- prompts that need nothing ---------------------------------------------------

# A slash command: "/clear", "/compact focus on tests", "/plugin:cmd" -- but not a path ("/etc/hosts").
_SLASH_COMMAND = re.compile(r"/[A-Za-z][\w:.-]*(?:\s|$)")

# Words of conversation rather than of a task: a prompt made only of these
# (greetings, thanks, acknowledgements, "go on") needs no suggestion.
_CHAT_WORDS = frozenset(
    """claude there buddy friend mate folks everyone
    hi hello hey hiya howdy yo morning good afternoon evening night bonjour hola hallo ciao salut
    thanks thank thx ty tyvm cheers appreciate appreciated merci gracias danke
    ok okay oki okey kk cool great nice perfect awesome excellent amazing fine sure alright right
    yes yeah yep yup ya yea no nope nah not
    go ahead do it continue keep going carry on proceed next sounds looks seems lgtm ship
    that this these those works worked working job done well much so very lot really
    wait stop hold pause never mind what why huh hmm hm ah ahh oh oops sorry see makes sense
    again try retry please pls plz can could would you your me my we us i
    a an and or but the to for of on in is are was were be am with same as before now then
    one two first second last other another ca va ça how today
    undo revert agreed exactly correct wrong true false""".split()
)

# -- words -----------------------------------------------------------------------

# Words that say nothing about which skill or tool fits: the phrasing of a
# request ("can you help me ...") and the boilerplate of skill descriptions
# ("Use when the user asks ...").  search.py's stopwords are dropped as well.
_NOISE = frozenset(
    stem(w) for w in """
    use used using when user users asks ask asked asking want wants wanted need needs needed claude
    help helps please pls plz can could would should let lets like just also etc eg ie any all some
    something thing things way really actually maybe think know see look looks make makes made
    one two get got give gives do does did done work works working go going new good sure ok okay
    hi hello hey thanks thank you your me my our we us it its this that these those here there
    now then today right still already again other another same each every such very much more most
    lot lots bit little few many instead without within via per into onto about after before
    add change changes fix explain show tell write create build implement update check run try set
    """.split()
)

# Shorthand read as the words it stands for (the skills' descriptions spell them out).
_ALIASES = {
    "k8s": "kubernetes", "kube": "kubernetes", "kubectl": "kubernetes", "pr": "pull request",
    "prs": "pull request", "repo": "repository", "db": "database", "msg": "message", "ci": "ci pipeline",
    "a11y": "accessibility", "excel": "excel spreadsheet", "powerpoint": "powerpoint presentation",
    "slides": "slide presentation", "deck": "slide deck presentation", "word": "word document",
    "tf": "terraform", "gha": "github actions", "js": "javascript", "ts": "typescript",
    "py": "python", "ipynb": "jupyter notebook", "csv": "csv", "postmortem": "postmortem incident",
    "outage": "outage incident", "prod": "production",
}

# Words dropped from tool queries: how a request is asked, not what it asks
# for.  Action verbs ("get", "list", "create") stay: tool names are made of them.
_QUERY_DROP = frozenset(
    """hi hello hey thanks thank please pls plz can could would should will you your me my we our us i
    want wants need needs like let lets just maybe think know really actually also something anything
    help some any all the this that these those it its there here then now so very much ok okay
    whats what how why who which when where ve ll re don doesn isn im id whether right today
    called saying named via using use
    did were had am being been
    about across along among upon toward towards onto within without through during""".split()
)
# (The last two lines: auxiliaries and prepositions the search's short stopword list leaves in, since
# its idf discounts them; in a query of four words each would take the place of a word that says what.)
# Names of particular things say nothing about which tool: quoted text (a
# message to post), paths and owner/repo pairs.  A "#name" is a channel.
_QUOTED = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])")
# Each starts only where its run of characters starts (the lookbehinds): a
# match inside a run would have started at the run's first character, and
# without them a long run with no match is tried from each of its
# characters to its end -- quadratic (4,000 spaces took 0.35 s).  A
# whitespace run of many newlines is still tried from each line's start
# (a newline can end a match): the prompt's 4,000-character cap bounds
# that at ~0.2 s.
_PATH = re.compile(r"(?<![\w.@~-])[\w.@~-]*/[\w./@~-]*")
_CHANNEL = re.compile(r"(?<![\w&])#[A-Za-z][\w-]*")
# "PRs" splits into "p" + "rs" as an identifier; read it as the words first.
_PULL_REQUESTS = re.compile(r"\bPRs?\b")

# "right now" (or a clause ending in "now") asks for the current state of something; tools say "current".
_NOW = re.compile(r"\bright\s+now\b|\bnow(?=\s*(?:[?.!,;]|$))", re.IGNORECASE | re.MULTILINE)

_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+", re.IGNORECASE)
# A line that looks like pasted code: indented, or mostly punctuation.
_CODE_LINE = re.compile(r"^(?:\s{4}|\t)|[{}();=<>]{2}|^\s*(?:def|class|import|from|return|if|for|SELECT|select)\b")
# Clause boundaries: sentence ends (not the dots of "p5.js" or "1.5.0"), commas, "and", "then".
# The blank before a conjunction is a line's own ([^\S\n]+, not \s+): a newline is a boundary already, and
# \s+ could start after each newline of a long blank stretch and run to its end (4,000 characters of
# "\n \n \n ..." took 0.2 s; now linear).
_CLAUSE = re.compile(r"(?<!\.)[.;!?]+(?=\s|$)|[;!?\n]+|,\s+|(?<![^\S\n])[^\S\n]+(?:and then|and|then|but|also)\s+",
                     re.IGNORECASE)


def _clean(prompt: str) -> str:
    """The prompt's text as words to rank: URLs read as "url", capped in length."""
    text = prompt[:_MAX_PROMPT_CHARS]
    # Lone surrogates (from a bad decode upstream) would break later encoding; drop them.
    text = text.encode("utf-8", "replace").decode("utf-8")
    return _URL.sub(" url ", text)


def _content_terms(text: str) -> List[str]:
    """The stemmed words of ``text`` that can point at a skill, in order, without noise words."""
    return [t for t in terms(text) if t not in _NOISE and not t.isdigit()]


def nothing_wanted(prompt: str) -> bool:
    """True for prompts that need no suggestion: slash commands, greetings, thanks, "ok", very short."""
    if not isinstance(prompt, str):
        return True
    text = prompt.strip()
    if not text:
        return True
    if text.startswith("/") and _SLASH_COMMAND.match(text):
        first = text.split(None, 1)[0]
        if "/" not in first[1:]:
            return True
    words = [w for w in tokenize(text[:_MAX_PROMPT_CHARS]) if len(w) > 1 or w.isdigit()]
    if sum(len(w) for w in words) < 3:
        return True
    return all(w in _CHAT_WORDS for w in words)


# -- the skill index -----------------------------------------------------------

_NAME_WEIGHT = 3.0  # a prompt word in the skill's own name (the part after "plugin:")
_PLUGIN_WEIGHT = 1.0  # a prompt word in the plugin's name
_DESCRIPTION_B = 0.75  # BM25 length normalisation of descriptions
_K1 = 1.2
_FUZZY_WEIGHT = 0.8  # a typo-corrected word counts this much
_ALIAS_WEIGHT = 0.9


# The score floors were calibrated on a list of this many skills.  A
# word's rarity (idf) is taken as if the list had this size: a shorter list is
# read as padded with skills that share none of its words (so 3 skills still
# clear the floor), a longer one by the share of skills that have the word (so
# 500 skills do not inflate every score).
_REFERENCE_SKILLS = 81  # bench/suggest_eval/skills.json


def _idf(n: int, df: int) -> float:
    # Document frequency as it would be in a list of _REFERENCE_SKILLS skills.
    share = float(df) if n <= _REFERENCE_SKILLS else df * _REFERENCE_SKILLS / n
    return math.log(1.0 + (_REFERENCE_SKILLS - share + 0.5) / (share + 0.5))


class _SkillIndex:
    """BM25 postings over a skill list; built once per distinct list (see _index_for)."""

    def __init__(self, skills: Sequence[Tuple[str, str]]) -> None:
        self.names = [name for name, _ in skills]
        docs = []
        for name, description in skills:
            plugin, _, short = name.rpartition(":")
            docs.append((
                (_NAME_WEIGHT, [t for t in terms(short.replace("-", " ")) if t not in _NOISE]),
                (_PLUGIN_WEIGHT, [t for t in terms(plugin.replace("-", " ")) if t not in _NOISE]),
                (1.0, [t for t in terms(description) if t not in _NOISE]),
            ))
        avg = (sum(len(d[2][1]) for d in docs) / len(docs)) if docs else 1.0
        postings: Dict[str, Dict[int, float]] = {}
        for i, fields in enumerate(docs):
            for position, (weight, words) in enumerate(fields):
                if position == 2:
                    weight = weight / (1.0 - _DESCRIPTION_B + _DESCRIPTION_B * len(words) / (avg or 1.0))
                for term in words:
                    row = postings.get(term)
                    if row is None:
                        postings[term] = {i: weight}
                    else:
                        row[i] = row.get(i, 0.0) + weight
        self.postings = postings
        self.idf = {t: _idf(len(docs), len(row)) for t, row in postings.items()}
        # Typo correction compares stems: a misspelt word's stem is within an
        # edit or two of the right word's stem just as the words are.
        self.by_length: Dict[int, List[str]] = {}
        for term in postings:
            if len(term) > 3 and term.isalpha():
                self.by_length.setdefault(len(term), []).append(term)

    def correct(self, word: str) -> List[Tuple[str, float]]:
        """Terms ``word`` (a stem no skill has) is probably a misspelling of, with a similarity in 0..1."""
        if len(word) < 5 or not word.isalpha():
            return []
        limit = 1 if len(word) < 8 else 2
        found: Dict[str, float] = {}
        for length in range(len(word) - limit, len(word) + limit + 1):
            for candidate in self.by_length.get(length, ()):
                if candidate[0] != word[0] and candidate[:2] != word[1::-1]:
                    continue  # typos rarely hit the first letter; this keeps the scan cheap
                distance = edit_distance(word, candidate, limit)
                if distance <= limit:
                    found[candidate] = 1.0 - distance / max(len(word), len(candidate))
        return sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[:2]

    def lookups(self, text: str) -> Dict[str, float]:
        """term -> weight for the prompt's words: literal, shorthand, typo-corrected."""
        out: Dict[str, float] = {}
        surface: Dict[str, str] = {}
        corrections = 0
        for term in terms(text, surface):
            if term in self.postings and term not in _NOISE:
                out[term] = 1.0
        for word, term in surface.items():
            alias = _ALIASES.get(word)
            if alias:
                for extra in terms(alias):
                    if extra in self.postings and out.get(extra, 0.0) < _ALIAS_WEIGHT:
                        out[extra] = _ALIAS_WEIGHT
            elif term not in self.postings and term not in _NOISE and corrections < _MAX_CORRECTIONS:
                fixes = self.correct(term)
                corrections += 1
                for fixed, similarity in fixes:
                    if fixed not in _NOISE:
                        out[fixed] = max(out.get(fixed, 0.0), _FUZZY_WEIGHT * similarity)
        return out

    def rank(self, text: str) -> List[Tuple[float, float, str]]:
        """(score, coverage, skill name) best first.

        The score is BM25 summed over the prompt's distinct words.  The coverage
        is the share of the prompt's words (by idf; a word no skill has counts
        as the rarest) that the skill contains: 1.0 when it explains all of it.
        """
        lookups = self.lookups(text)
        raw: Dict[int, float] = {}
        matched: Dict[int, float] = {}
        for term, weight in lookups.items():
            idf = self.idf[term] * weight
            for i, tf in self.postings[term].items():
                raw[i] = raw.get(i, 0.0) + idf * tf * (_K1 + 1) / (tf + _K1)
                matched[i] = matched.get(i, 0.0) + idf
        rarest = max(self.idf.values(), default=1.0)
        total = sum(self.idf.get(t, rarest) for t in set(_content_terms(text))) or 1.0
        ranked = [(round(score, 6), round(min(1.0, matched[i] / total), 6), self.names[i]) for i, score in raw.items()]
        return sorted(ranked, key=lambda r: (-r[0], r[2]))


_CACHE: Dict[Tuple[Tuple[str, str], ...], _SkillIndex] = {}


def _index_for(skills: Sequence[Any]) -> _SkillIndex:
    """The index of this skill list, reused while the list stays the same (a hook process sees one list)."""
    key = tuple((str(getattr(s, "name", "") or ""), str(getattr(s, "description", "") or "")) for s in skills)
    key = tuple(pair for pair in key if pair[0])
    index = _CACHE.get(key)
    if index is None:
        if len(_CACHE) > 8:
            _CACHE.clear()
        index = _CACHE[key] = _SkillIndex(key)
    return index


def rank_skills(prompt: str, skills: Sequence[Any]) -> List[Tuple[float, float, str]]:
    """Every skill sharing a word with ``prompt``, as (score, coverage, name), best first."""
    return _index_for(skills).rank(_prose(_clean(prompt)))


def _wanted(score: float, coverage: float) -> bool:
    return score >= SKILL_SCORE_FLOOR or (score >= SKILL_SHORT_FLOOR and coverage >= SKILL_COVERAGE_FLOOR)


# -- tool queries ---------------------------------------------------------------


def _prose(text: str) -> str:
    """``text`` without lines that look like pasted code: they name variables, not tools."""
    lines = text.splitlines()
    kept = [line for line in lines if not _CODE_LINE.search(line)]
    return "\n".join(kept) if kept else text


def _query_words(text: str) -> List[str]:
    """The words of one tool query: as written (not stemmed, the gateway stems), no stopwords or chat."""
    words = []
    seen = set()
    for word in tokenize(text):
        if len(word) < 2 or word.isdigit() or word in _QUERY_DROP or word in STOPWORDS:
            continue
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


# Questions about a concept, which the model answers from what it knows: no tool serves them.
_KNOWLEDGE_QUESTION = re.compile(
    r"^\s*(?:(?:what|how|why)\b[^?\n]{0,40}\bdifferen(?:ces?|t)\b"  # "what's the difference between ..."
    r"|what(?:'s|\s+is|\s+are)\s+(?:an?|some)\s"  # "what is a closure", not "what is the current ..."
    r"|what\s+(?:does|do)\b|how\s+(?:does|is|are)\b|why\b|explain\b)",  # not "how do I list ...": a task
    re.IGNORECASE,
)
# How a question starts; only its first word counts ("what time is it", "is the build green?").
_QUESTION_WORDS = frozenset("what whats how why who whom whose when where which is are does do did explain".split())


def knowledge_question(prompt: str) -> bool:
    """True for a question about a concept ("what does the walrus operator do"): the model's own knowledge answers it."""
    return bool(_KNOWLEDGE_QUESTION.search(prompt[:_MAX_PROMPT_CHARS]))


def asks_question(prompt: str) -> bool:
    """True when the prompt is a question rather than a request for an action (its first word says so)."""
    words = tokenize(prompt[:200])
    return bool(words) and words[0] in _QUESTION_WORDS


def tool_queries(prompt: str) -> List[str]:
    """Up to 3 search strings for the gateway: one per clause of the prompt, or the whole prompt.

    A short query scores higher on the gateway's scale (the share of the query
    a tool accounts for), so a prompt of several clauses ("read #incidents on
    slack and write a postmortem") is searched clause by clause, each by its
    first words.  A question about a concept gets none.
    """
    if knowledge_question(prompt):
        return []
    text = _prose(_clean(prompt))
    text = _PATH.sub(" ", _QUOTED.sub(" ", text))
    text = _PULL_REQUESTS.sub(" pull requests ", _CHANNEL.sub(" channel ", text))
    text = _NOW.sub(" current ", text)
    whole = _query_words(text)
    if not whole:
        return []
    clauses = []
    for part in _CLAUSE.split(text):
        words = _query_words(part)
        query = " ".join(words[:_MAX_QUERY_WORDS])
        if words and query not in clauses:
            clauses.append(query)
    # A one-word clause ("tag", "debug") matches some tool's name in any big
    # catalog; it is a query only when the prompt has nothing longer.
    longer = [c for c in clauses if " " in c]
    if len(longer) < len(clauses) and longer:
        clauses = longer
    if len(clauses) <= 1:
        return [" ".join(whole[:_MAX_QUERY_WORDS])]
    # The clauses with the most words say the most; keep the prompt's order among those kept.
    keep = sorted(sorted(range(len(clauses)), key=lambda i: -len(clauses[i].split()))[:MAX_ITEMS])
    return [clauses[i] for i in keep]


# -- the answer -------------------------------------------------------------------


def suggest(prompt: str, skills: Sequence[Any]) -> Dict[str, List[str]]:
    """The local backend's answer: ``{"skills": [<= 3 names, best first], "toolQueries": [<= 3 strings]}``.

    ``skills`` are objects with ``.name`` and ``.description`` (toolscript.claude_code.skills.Skill).
    """
    if nothing_wanted(prompt):
        return {"skills": [], "toolQueries": []}
    chosen: List[str] = []
    ranked = rank_skills(prompt, skills)
    if ranked and _wanted(ranked[0][0], ranked[0][1]):
        best = ranked[0][0]
        for score, coverage, name in ranked[:MAX_ITEMS]:
            if _wanted(score, coverage) and score >= SKILL_RELATIVE_FLOOR * best:
                chosen.append(name)
    # Every query is asked, those a chosen skill accounts for too: the pipeline shows their
    # tools only from a server the prompt names (suggest.select_tools), which a skill does not replace.
    return {"skills": chosen, "toolQueries": tool_queries(prompt)}

