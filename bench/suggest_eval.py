"""Evaluate per-prompt suggestion backends on bench/suggest_eval/ (skills + labelled prompts).

    python3 bench/suggest_eval.py [--split dev|heldout|both] [--misses]

(dev by default: tune on dev; the held-out half is asked for by name, for the
one report run after tuning -- see bench/suggest_eval/README.md)

prints one JSON object: for each backend row ("local", "oracle") and each
split, the figures that `tests/claude_code/test_suggest_local.py` holds floors on:

* skills: precision (suggested skills that are labelled / suggested skills)
  and recall (labelled skills suggested / labelled skills), over all prompts;
* tools: the same for tool ids, where the tools a backend "suggests" are what
  the pipeline would show: each of its toolQueries searched with
  ``SearchIndex`` over bench/search/sets/set00/catalogs, built with the
  vectors as the gateway builds it (its /search ranking), by words alone and
  by words and meaning fused, and the hits chosen by ``suggest.select_tools``
  (the pipeline's own rules), best 5 kept;
* fp_rate: the share of "nothing" prompts that got any skill or tool;
* timing of the backend's answer alone (median / p95 ms per prompt), and
  for the local backend its first call on a 100-skill list, which builds the
  skill index (a hook process answers one prompt, so it pays this each time).

The "oracle" row answers with the labels themselves (skills as labelled, each
labelled tool id as a query), so it measures what the search + floor stage
loses on its own.  Model backends plug in through ``evaluate(answer_fn, split)``
with ``answer_fn(prompt, skills) -> {"skills": [...], "toolQueries": [...]}``.

Tune on ``dev`` only; ``heldout`` is for reporting (see bench/suggest_eval/README.md).
"""

import argparse
import hashlib
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from search import load_catalog  # noqa: E402  (bench/search.py: the recorded catalogs as index entries)
from stats import summary  # noqa: E402
from toolscript.claude_code import suggest
from toolscript.claude_code import suggest_local  # noqa: E402
from toolscript.search import SearchIndex  # noqa: E402

DATA = os.path.join(ROOT, "bench", "suggest_eval")
TOP_TOOLS = 5  # tools the pipeline shows at most
MAX_ITEMS = 3  # skills / toolQueries the pipeline reads from an answer
MODEL = "model"  # an answer's "backend" when a model (or the oracle standing in for one) gave it



class SkillLike(NamedTuple):
    """A skill as toolscript.claude_code.skills.Skill has it (name, description, source), without a path."""
    name: str
    description: str
    source: str


AnswerFn = Callable[[str, Sequence[Any]], Dict[str, List[str]]]


def load_skills(path: str = os.path.join(DATA, "skills.json")) -> List[SkillLike]:
    with open(path, encoding="utf-8") as f:
        return [SkillLike(s["name"], s["description"], s["source"]) for s in json.load(f)["skills"]]


def split_of(prompt: str) -> str:
    """The split rule the data was made with: last byte of sha256 even -> dev."""
    return "dev" if hashlib.sha256(prompt.encode("utf-8")).digest()[-1] % 2 == 0 else "heldout"


def load_prompts(path: str = os.path.join(DATA, "prompts.json")) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        prompts = json.load(f)["prompts"]
    for entry in prompts:
        if entry["split"] != split_of(entry["prompt"]):
            raise SystemExit(f"prompts.json: split of {entry['prompt']!r} does not follow the sha256 rule; fix the file")
    return prompts


_INDEXES: Dict[bool, SearchIndex] = {}


def tool_index(vectors: bool = True) -> SearchIndex:
    """The recorded catalogs' index as the gateway builds it: with the vectors data (``vectors=False``: as a
    gateway without that data ranks, words and the thesaurus alone)."""
    if vectors not in _INDEXES:
        _INDEXES[vectors] = SearchIndex(load_catalog(), semantic=vectors)
    return _INDEXES[vectors]


def tools_shown(queries: Sequence[str], floor: Optional[float] = None, index: Optional[SearchIndex] = None, *,
                skill_chosen: bool = False, question: bool = False, prompt: str = "", meaning: bool = True,
                skill_words: Optional[set] = None) -> List[str]:
    """What the pipeline shows for these queries: each searched by words and by meaning, as the hook asks
    the gateway (``suggest.SEARCH_DEPTH`` hits, no threshold), then ``suggest.select_tools``."""
    index = index or tool_index()
    # The gateway says whether its ranking by meaning used the vectors; the hook reads that (search_gateway).
    queries = list(queries)[:MAX_ITEMS]
    by_words = [index.search(q, limit=suggest.SEARCH_DEPTH, threshold=0, semantic=False) for q in queries]
    by_meaning = [index.search(q, limit=suggest.SEARCH_DEPTH, threshold=0, semantic=True) for q in queries] if meaning else []
    return [hit["id"] for hit in suggest.select_tools(queries, by_words, by_meaning, max_tools=TOP_TOOLS, floor=floor,
                                                      skill_chosen=skill_chosen, question=question, prompt=prompt,
                                                      skill_words=skill_words, vectors=meaning and index.semantic)]


def _ratio(numerator: int, denominator: int) -> Optional[float]:
    return round(numerator / denominator, 3) if denominator else None


def evaluate(answer_fn: AnswerFn, split: str, *, floor: Optional[float] = None, meaning: bool = True, vectors: bool = True,
             skills: Optional[List[SkillLike]] = None, prompts: Optional[List[Dict[str, Any]]] = None,
             misses: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Precision, recall, false-positive rate and timing of ``answer_fn`` on one split ("dev", "heldout", "all")."""
    floor = suggest_local.TOOL_SCORE_FLOOR if floor is None else floor
    skills = load_skills() if skills is None else skills
    prompts = load_prompts() if prompts is None else prompts
    known = {s.name for s in skills}
    counts = dict.fromkeys(("skill_tp", "skill_suggested", "skill_labelled", "tool_tp", "tool_suggested",
                            "tool_labelled", "nothing", "nothing_fp", "skill_prompts", "skill_hit",
                            "tool_prompts", "tool_hit"), 0)
    times: List[float] = []
    for entry in prompts:
        if split != "all" and entry["split"] != split:
            continue
        start = time.perf_counter()
        answer = answer_fn(entry["prompt"], skills) or {}
        times.append((time.perf_counter() - start) * 1000.0)
        got_skills = [s for s in answer.get("skills", [])[:MAX_ITEMS] if s in known]
        # The pipeline reads the local ranker's queries (the prompt's own words) more strictly than a
        # model's (written on purpose): an answer says it came from a model with "backend" (MODEL).
        local = answer.get("backend") != MODEL
        got_tools = tools_shown(answer.get("toolQueries", []), floor, tool_index(vectors),
                                skill_chosen=local and bool(got_skills),
                                question=local and suggest_local.asks_question(entry["prompt"]), prompt=entry["prompt"],
                                meaning=meaning, skill_words=suggest.chosen_skill_words(got_skills, skills))
        want_skills, want_tools = set(entry["skills"]), set(entry["tools"])
        counts["skill_tp"] += len(want_skills.intersection(got_skills))
        counts["skill_suggested"] += len(got_skills)
        counts["skill_labelled"] += len(want_skills)
        counts["tool_tp"] += len(want_tools.intersection(got_tools))
        counts["tool_suggested"] += len(got_tools)
        counts["tool_labelled"] += len(want_tools)
        if want_skills:
            counts["skill_prompts"] += 1
            counts["skill_hit"] += bool(want_skills.intersection(got_skills))
        if want_tools:
            counts["tool_prompts"] += 1
            counts["tool_hit"] += bool(want_tools.intersection(got_tools))
        if entry["kind"] == "nothing":
            counts["nothing"] += 1
            counts["nothing_fp"] += bool(got_skills or got_tools)
        if misses is not None and (set(got_skills) != want_skills or not want_tools.issuperset(got_tools)
                                   or (want_tools and not want_tools.intersection(got_tools))):
            misses.append({"prompt": entry["prompt"][:120], "want": sorted(want_skills | want_tools),
                           "got": got_skills + got_tools, "queries": answer.get("toolQueries", [])})
    return {
        "prompts": len(times),
        "skills": {"precision": _ratio(counts["skill_tp"], counts["skill_suggested"]),
                   "recall": _ratio(counts["skill_tp"], counts["skill_labelled"]),
                   "hit_rate": _ratio(counts["skill_hit"], counts["skill_prompts"])},
        "tools": {"precision": _ratio(counts["tool_tp"], counts["tool_suggested"]),
                  "recall": _ratio(counts["tool_tp"], counts["tool_labelled"]),
                  "hit_rate": _ratio(counts["tool_hit"], counts["tool_prompts"])},
        "fp_rate": _ratio(counts["nothing_fp"], counts["nothing"]),
        "answer_ms": summary(times) if times else None,
    }


def oracle_answer_fn(prompts: List[Dict[str, Any]]) -> AnswerFn:
    """An answer_fn replying with the labels: what a perfect model would say."""
    labels = {entry["prompt"]: entry for entry in prompts}

    def answer(prompt: str, skills: Sequence[Any]) -> Dict[str, List[str]]:
        entry = labels[prompt]
        return {"skills": list(entry["skills"]), "toolQueries": list(entry["tools"]), "backend": MODEL}

    return answer


_FRESH = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from collections import namedtuple
from toolscript.claude_code import suggest_local
Skill = namedtuple("Skill", "name description")
skills = [Skill(n, d) for n, d in json.loads(sys.stdin.read())]
start = time.perf_counter()
suggest_local.suggest("review my code and post the summary to slack", skills)
print((time.perf_counter() - start) * 1000.0)
"""


def fresh_process_first_call(skills: Sequence[SkillLike], runs: int = 10) -> Dict[str, float]:
    """The first suggest() in a new interpreter (cold word caches), as a hook process pays it; import excluded."""
    import subprocess
    payload = json.dumps([[s.name, s.description] for s in skills])
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _FRESH, ROOT], input=payload, capture_output=True,
                             text=True, timeout=60, check=True)
        samples.append(float(out.stdout.strip()))
    return summary(samples)


def model_rows(prompts: List[Dict[str, Any]]) -> Dict[str, AnswerFn]:
    """The api backend's whole path (HTTP to the fake Messages API, reply parsing, skill validation) as answer_fns.

    There is no model here, so these rows measure the pipeline, not a model:
    ``api_fake_oracle``: the fake replies with the labels, fenced in chatty
    prose (what parsing and validation lose: should equal the oracle row);
    ``api_fake_hallucinating``: the labels plus two made-up skills and a
    blank query (what validation must drop); ``api_fake_failing``: HTTP 401
    every time, so the local ranker answers (should equal the local row).
    """
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from fake_anthropic import FakeAnthropic

    labels = {entry["prompt"]: entry for entry in prompts}

    api = FakeAnthropic([{"text": "{}"}])
    api.__enter__()  # one fake for the run (stopped at exit); each prompt gets its own scripted reply
    import atexit

    atexit.register(api.__exit__, None, None, None)
    env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "eval", "PATH": os.environ.get("PATH", "")}

    def through_api(reply_for):
        def answer(prompt: str, skills: Sequence[Any]) -> Dict[str, List[str]]:
            api.script = [api._normalise(reply_for(labels[prompt]))]
            got = suggest._ask_model(prompt, list(skills), "api", None, 5.0, env, [])
            return dict(got, backend=MODEL) if got is not None else suggest_local.suggest(prompt, skills)
        return answer

    def oracle(entry):
        body = json.dumps({"skills": entry["skills"], "toolQueries": entry["tools"]})
        return {"text": f"Here is my pick:\n```json\n{body}\n```\nHope that helps."}

    def hallucinating(entry):
        return {"text": json.dumps({"skills": entry["skills"] + ["made-up-skill", "plugin:nope"], "toolQueries": entry["tools"] + [" "]})}

    def failing(entry):  # not retried (a 529 would be, for seconds per prompt): the fallback is what is measured
        return {"status": 401, "error_type": "authentication_error", "error_message": "invalid x-api-key"}

    return {"api_fake_oracle": through_api(oracle), "api_fake_hallucinating": through_api(hallucinating),
            "api_fake_failing": through_api(failing)}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "heldout", "both"), default="dev",
                        help="dev (the default) to tune on; heldout or both only for the one report run after tuning")
    parser.add_argument("--misses", action="store_true", help="also list the prompts the local backend got wrong")
    parser.add_argument("--no-model-rows", dest="model_rows", action="store_false",
                        help="skip the rows that run the api backend against the fake Messages API")
    args = parser.parse_args(argv)
    skills, prompts = load_skills(), load_prompts()
    splits = ("dev", "heldout") if args.split == "both" else (args.split,)
    report: Dict[str, Any] = {
        "skills": len(skills), "prompts": len(prompts), "tools": len(tool_index()),
        "tool_score_floor": suggest_local.TOOL_SCORE_FLOOR,
    }
    # The skill index is built on a skill list's first prompt and reused after; a
    # hook process answers one prompt, so this cost is part of every hook call.
    # Timed with 100 skills (the set plus copies of its first 19 under other names),
    # the size the answer-time targets are stated for.
    hundred = skills + [SkillLike(s.name + "-copy", s.description, s.source) for s in skills[:100 - len(skills)]]
    builds = []
    for _ in range(20):
        suggest_local._CACHE.clear()
        start = time.perf_counter()
        suggest_local.suggest("review my code", hundred)
        builds.append((time.perf_counter() - start) * 1000.0)
    report["local_first_call_ms_100_skills"] = summary(builds)
    report["local_fresh_process_first_call_ms_100_skills"] = fresh_process_first_call(hundred)
    rows = {"local": suggest_local.suggest, "oracle": oracle_answer_fn(prompts)}
    if args.model_rows:
        rows.update(model_rows(prompts))
    for name, answer_fn in rows.items():
        report[name] = {}
        for split in splits:
            missed: List[Dict[str, Any]] = []
            report[name][split] = evaluate(answer_fn, split, skills=skills, prompts=prompts,
                                           misses=missed if args.misses and name == "local" else None)
            if args.misses and name == "local":
                report[name][split]["misses"] = missed
    # A gateway without the vectors data ranks by words and the thesaurus alone; the pipeline then
    # selects by the words' ranking, with a query's obvious best by the thesaurus-read words beside it
    # ("variant_without_vectors"); "variant_words_only" is that without the second search.
    report["variant_without_vectors"] = {
        name: {split: evaluate(answer_fn, split, skills=skills, prompts=prompts, vectors=False)["tools"]
               for split in splits}
        for name, answer_fn in rows.items()
    }
    report["variant_words_only"] = {
        name: {split: evaluate(answer_fn, split, skills=skills, prompts=prompts, vectors=False, meaning=False)["tools"]
               for split in splits}
        for name, answer_fn in rows.items()
    }
    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
