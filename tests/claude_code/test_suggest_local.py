"""Tests for toolscript.claude_code.suggest_local: the `local` suggestion backend (no model).

Its quality on the held-out half of bench/suggest_eval/ is held to floors
(measured minus a small margin; the false-positive rate as a ceiling), so a
change that makes it worse fails.  bench/suggest_eval.py prints the figures.
"""

import json
from typing import NamedTuple

import pytest

from conftest import load_script
from toolscript.claude_code import suggest_local
from toolscript.claude_code.suggest_local import TOOL_SCORE_FLOOR, nothing_wanted, suggest, tool_queries


def _load_harness():
    return load_script("bench/suggest_eval.py")


harness = _load_harness()


class Skill(NamedTuple):  # the fields of toolscript.claude_code.skills.Skill that the backend reads
    name: str
    description: str
    source: str = "user"


@pytest.fixture(scope="module")
def skills():
    return harness.load_skills()


EMPTY = {"skills": [], "toolQueries": []}

# -- the evaluation set ------------------------------------------------------------

# Held-out figures, measured after the rules were chosen on dev only (bench/suggest_eval/README.md):
# skills precision 0.822, recall 0.769; tools precision 0.711, recall 0.600; no suggestion for any
# "nothing" prompt.  Floors sit a few points under; the false-positive rate is held at what was measured.
HELDOUT_FLOORS = {"skills": {"precision": 0.78, "recall": 0.72}, "tools": {"precision": 0.67, "recall": 0.56}}
HELDOUT_FP_CEILING = 0.0


@pytest.fixture(scope="module")
def heldout():
    return harness.evaluate(suggest_local.suggest, "heldout")


@pytest.mark.parametrize("kind", ["skills", "tools"])
@pytest.mark.parametrize("figure", ["precision", "recall"])
def test_heldout_quality_floor(heldout, kind, figure):
    assert heldout[kind][figure] >= HELDOUT_FLOORS[kind][figure], heldout


def test_heldout_nothing_prompts_rarely_get_a_suggestion(heldout):
    assert heldout["fp_rate"] <= HELDOUT_FP_CEILING, heldout


def test_eval_set_shape_and_split_rule():
    prompts = harness.load_prompts()  # raises when a stored split breaks the sha256 rule
    skills = {s.name for s in harness.load_skills()}
    assert len(prompts) >= 180
    assert sum(p["kind"] == "nothing" for p in prompts) >= 60
    for p in prompts:
        assert set(p["skills"]) <= skills
        assert p["kind"] == ("both" if p["skills"] and p["tools"] else "skill" if p["skills"]
                             else "tool" if p["tools"] else "nothing")
    assert {p["split"] for p in prompts} == {"dev", "heldout"}


def test_oracle_row_shows_the_search_stage_keeps_every_labelled_tool():
    prompts = harness.load_prompts()
    oracle = harness.evaluate(harness.oracle_answer_fn(prompts), "all", prompts=prompts)
    assert oracle["skills"]["recall"] == 1.0 and oracle["tools"]["recall"] == 1.0
    assert oracle["fp_rate"] == 0.0


# -- prompts that need nothing --------------------------------------------------------


@pytest.mark.parametrize("prompt", [
    "hi", "Hello!", "hey claude", "good morning", "thanks", "thank you so much, that worked", "thx", "ok",
    "okay cool", "yes", "yes do it", "go ahead", "continue", "keep going", "sounds good, proceed", "no",
    "lgtm", "perfect 👍", "y", "?", "...", "", "   \n", "/clear", "/compact focus on the tests", "/model",
    "/plugin:command arg", "ありがとう", "never mind",
])
def test_greetings_acks_and_slash_commands_want_nothing(prompt, skills):
    assert nothing_wanted(prompt)
    assert suggest(prompt, skills) == EMPTY


@pytest.mark.parametrize("prompt", [
    "commit this", "/etc/hosts is missing the staging entry", "extract the tables from report.pdf",
    "what time is it in Tokyo?",
])
def test_task_prompts_are_not_skipped(prompt):
    assert not nothing_wanted(prompt)


@pytest.mark.parametrize("prompt", [
    "what's the capital of australia", "tell me a joke", "who are you?",
    "rename the variable `tmp` to `buffer` in reader.py",
])
def test_small_talk_and_plain_requests_get_no_skill(prompt, skills):
    assert suggest(prompt, skills)["skills"] == []


# -- skills -------------------------------------------------------------------------


@pytest.mark.parametrize("prompt, expected", [
    ("merge these two PDF files and fill in the form fields", "document-skills:pdf"),
    ("my helm chart fails to render: error converting YAML to JSON in the deployment template", "helm-charts"),
    ("commit my work", "commit-commands:commit"),
    ("update CHANGELOG.md with the fixes since the last tag", "changelog"),
    ("kubectl says the pod is in CrashLoopBackOff", "k8s-troubleshooting"),
])
def test_a_clear_skill_prompt_puts_that_skill_first(prompt, expected, skills):
    assert suggest(prompt, skills)["skills"][:1] == [expected]


def test_typos_still_find_the_skill(skills):
    assert suggest("cna you reveiw the teraform modules", skills)["skills"][:1] == ["terraform"]


def test_skill_ranking_uses_the_skills_given_not_the_eval_set():
    mine = [Skill("deploy-prod", "Deploys the app to production with blue/green switching. Use when shipping."),
            Skill("unrelated", "Bakes bread.")]
    assert suggest("deploy to production please, blue green", mine)["skills"] == ["deploy-prod"]
    assert suggest("deploy to production please, blue green", [])["skills"] == []


def test_skills_without_description_or_name_are_tolerated():
    odd = [Skill("pdf", ""), Skill("", "Handles PDF files. Use when working with PDF."), object()]
    answer = suggest("split this pdf into pages", odd)
    assert answer["skills"] in ([], ["pdf"])


# -- tool queries -------------------------------------------------------------------


@pytest.mark.parametrize("prompt, tool", [
    ("post a message to the #general slack channel saying the deploy is done", "slack__slack_post_message"),
    ("what time is it in Sydney right now", "time__get_current_time"),
    ("fetch https://example.com/docs and summarize it", "fetch__fetch"),
    ("list the tables in the sqlite database", "sqlite__list_tables"),
])
def test_a_clear_tool_prompt_yields_a_query_that_finds_the_tool(prompt, tool, skills):
    queries = suggest(prompt, skills)["toolQueries"]
    assert tool in harness.tools_shown(queries, TOOL_SCORE_FLOOR)


def test_tool_queries_drop_chat_words_and_read_urls_as_url():
    queries = tool_queries("Could you please fetch https://example.com/a?b=c for me")
    assert queries == ["fetch url"]


def test_a_multi_clause_prompt_is_searched_clause_by_clause():
    queries = tool_queries("read the latest messages in #incidents on slack and then write a postmortem")
    assert queries == ["read latest messages channel", "write postmortem"]  # a clause's first words


@pytest.mark.parametrize("prompt", [
    "what's the difference between a list and a tuple in python?", "what are the differences between tcp and udp",
    "how does python's GIL affect threads", "explain what a closure is", "what is a monad", "why is my loop slow?",
    "what does the walrus operator do",
])
def test_a_question_about_a_concept_gets_no_tool_query(prompt):
    assert suggest_local.knowledge_question(prompt) and tool_queries(prompt) == []


@pytest.mark.parametrize("prompt", [
    "what time is it in Tokyo?", "what is the current working directory", "how do I list open PRs on github",
    "show me the difference between main and this branch", "what's the git status",
])
def test_questions_about_the_state_of_things_and_tasks_still_get_queries(prompt):
    assert not suggest_local.knowledge_question(prompt) and tool_queries(prompt)


def test_a_question_is_told_from_a_request_by_its_first_word():
    assert suggest_local.asks_question("what's the git status") and suggest_local.asks_question("Is the build green?")
    assert not suggest_local.asks_question("show me the git status") and not suggest_local.asks_question("")


def test_right_now_asks_for_the_current_state():
    assert tool_queries("what time is it in Sydney right now") == ["time sydney current"]
    assert tool_queries("what time is it now?") == ["time current"]
    assert tool_queries("now fix the tests") == ["fix tests"]  # "now" as a word of the conversation


def test_a_query_is_a_clauses_first_words():
    assert tool_queries("search the web for the latest node.js LTS release notes") == ["search web latest node"]


def test_auxiliaries_and_prepositions_leave_a_querys_words_to_what_it_is_about():
    # "did" and "about" would take the place of "slack" and "outage" among a query's four words.
    assert tool_queries("what did people say in #incidents on slack today") == ["people say channel slack"]
    assert tool_queries("reply in the slack thread about the outage that we rolled back") == ["reply slack thread outage"]


def test_names_of_particular_things_are_left_out_of_tool_queries():
    # A quoted message, an owner/repo pair and a path name no tool; a #name is a channel.
    prompt = "post 'deploy of v2 finished' to #releases on slack"
    assert tool_queries(prompt) == ["post channel slack"]
    assert tool_queries("fork acme/widgets-api to my account") == ["fork account"]


def test_a_query_the_chosen_skill_explains_is_still_asked_and_a_named_servers_tool_is_shown(skills):
    # The skill covers the database work; the prompt names postgres, whose query tool is shown beside it.
    prompt = "query the postgres db: how many users signed up last week"
    answer = suggest(prompt, skills)
    assert answer["skills"] == ["db-migrations"] and answer["toolQueries"] == ["query postgres db many"]
    shown = harness.tools_shown(answer["toolQueries"], skill_chosen=True, prompt=prompt,
                                skill_words=harness.suggest.chosen_skill_words(answer["skills"], skills))
    assert shown == ["postgres__query"]
    # A prompt that names no server gets the skill alone.
    notes = "write release notes for 2.0 from the merged PRs"
    answer = suggest(notes, skills)
    assert answer["skills"] == ["release-notes"]
    assert harness.tools_shown(answer["toolQueries"], skill_chosen=True, prompt=notes,
                               skill_words=harness.suggest.chosen_skill_words(answer["skills"], skills)) == []


def test_one_word_clauses_are_not_queries_when_longer_ones_exist():
    assert tool_queries("bump the version, tag it, publish") == ["bump version tag publish"]
    assert tool_queries("list the slack channels, then post a message") == ["list slack channels", "post message"]


def test_pasted_code_does_not_become_a_tool_query():
    prompt = "why does this fail?\n\n    def get_file(name):\n        return open(name).read()\n"
    assert all("open" not in q.split() for q in tool_queries(prompt))


# -- shape, determinism, hostile input --------------------------------------------------


def test_at_most_three_of_each(skills):
    prompt = ", ".join(
        ["review the pdf, docx, xlsx and pptx files", "then write the changelog and release notes",
         "fix the terraform, helm and docker setup", "post to slack", "create a github issue",
         "query postgres", "check redis keys", "take a puppeteer screenshot"])
    answer = suggest(prompt, skills)
    assert set(answer) == {"skills", "toolQueries"}
    assert 1 <= len(answer["skills"]) <= 3 and 1 <= len(answer["toolQueries"]) <= 3
    assert all(isinstance(q, str) and q for q in answer["toolQueries"])


def test_output_is_deterministic_and_independent_of_skill_order(skills):
    prompt = "write a blameless postmortem for the outage and post it to slack"
    first = suggest(prompt, skills)
    assert suggest(prompt, skills) == first
    assert suggest(prompt, list(reversed(skills))) == first
    assert json.loads(json.dumps(first)) == first


@pytest.mark.timeout(60)
@pytest.mark.parametrize("prompt", [
    "pdf " * 25_000,  # 100 KB
    "review this log please\n" + "ERROR frobnicator failed at line 42 in module xyz\n" * 2_000,
    "!@#$%^&*()_+-=[]{};':\",./<>?" * 100,
    "ünïcödé Ωμέγα 中文 PDF を抽出して 🚀🚀🚀",
    "extract \ud800 text from the \udfff pdf",
    "\x00\x01\x02 commit \x7f",
    "/" * 1000,
])
def test_hostile_input_returns_a_valid_answer(prompt, skills):
    answer = suggest(prompt, skills)
    assert set(answer) == {"skills", "toolQueries"}
    assert len(answer["skills"]) <= 3 and len(answer["toolQueries"]) <= 3
    json.dumps(answer).encode("utf-8")  # no lone surrogates leak into the answer
    for query in answer["toolQueries"]:
        harness.tool_index().search(query, limit=5)


def test_only_the_start_of_a_huge_prompt_is_read(skills):
    # A huge paste is ranked by its first few KB, so its cost does not grow with its size.
    head = "merge these two PDF files and fill in the form fields. "
    assert suggest(head + "zzz " * 30_000, skills)["skills"][:1] == ["document-skills:pdf"]
    assert suggest("zzz " * 30_000 + head, skills)["skills"] == []


def test_non_string_prompt_wants_nothing(skills):
    assert nothing_wanted(None)  # type: ignore[arg-type]


def test_a_long_skill_list_does_not_inflate_scores(skills):
    # 400 more skills, each about one made-up topic: the rarity of a word is read
    # relative to the list's size, so the eval set's floors still hold.
    words = ["zq" + chr(97 + i // 26) + chr(97 + i % 26) for i in range(400)]  # "zqaa", "zqab", ...
    filler = [Skill(f"topic-{w}", f"Handles the {w} workflow and its {w} files. Use when working on {w}.")
              for w in words]
    many = list(skills) + filler
    assert suggest("commit this", many)["skills"][:1] == ["commit-commands:commit"]
    assert suggest("merge these two PDF files and fill in the form fields", many)["skills"][:1] == \
        ["document-skills:pdf"]
    assert suggest("what's the capital of australia", many)["skills"] == []
    assert suggest("the zqah files need a cleanup", many)["skills"][:1] == ["topic-zqah"]
