"""Retrieval beyond shared words: neighbours, meaning vectors, their schema migration, and what inject shows."""

import sqlite3

from toolscript.memory import context, rank
from toolscript.memory import store as store_mod
from toolscript.memory.store import SCHEMA_VERSION, open_store

PROJECT = "/home/dev/chat"
DAY = 86400.0
NOW = 1795532400.0


def test_an_answer_is_found_through_the_question_before_it(tmp_path):
    """An answer rarely repeats its question's words: it ranks by the memory before it too."""
    with open_store(str(tmp_path / "m.db")) as store:
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY,
                  content="Caroline: What did you take away from Becoming Nicole?")
        answer = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY + 1,
                           content="Melanie: It taught me self-acceptance and that tough times pass.")
        for i in range(30):  # newer chat by the same speaker: on word share alone these tie and win as newer
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - DAY + i,
                      content="Melanie: see you at the lake on day %d" % i)
        found = [m.id for m, _ in store.search("What did Melanie take away from Becoming Nicole?", project=PROJECT, limit=3)]
        assert answer in found


def test_meaning_ranks_a_paraphrase_above_an_unrelated_memory(tmp_path):
    """Two memories share only the name with the question; the one that means what it asks comes first."""
    with open_store(str(tmp_path / "m.db")) as store:
        crash = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 5 * DAY,
                          content="John: my car was hit at the intersection, the accident wrecked the bumper")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 3 * DAY, content="Maria: lovely weather today")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - DAY,
                  content="John: I baked bread with my grandmother's recipe")
        store.fill_vectors()  # what the Stop hook does for the memories a turn added
        top = store.search("Was John in a vehicle collision?", project=PROJECT)[0][0]
        assert top.id == crash


def test_a_database_from_before_vectors_opens_searches_and_fills_them_in(tmp_path):
    path = str(tmp_path / "m.db")
    conn = sqlite3.connect(path)
    store_mod.MIGRATIONS[0](conn, True)  # the first schema, as earlier versions made it
    conn.execute("INSERT INTO memories(session, project, kind, content, created, digest, project_key) "
                 "VALUES ('s1', ?, 'note', 'Ran `make release`: published 1.2.0', 1.0, 'd1', ?)",
                 (PROJECT, store_mod.project_key(PROJECT)))
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with open_store(path) as store:
        assert store.stats()["schema"] == SCHEMA_VERSION
        assert [m.content for m, _ in store.search("release", project=PROJECT)] == ["Ran `make release`: published 1.2.0"]
        assert store.fill_vectors(10) == 1 and store.fill_vectors(10) == 0
        assert store.conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0] == 1
        store.forget(project=PROJECT)
        assert store.conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0] == 0  # forgotten with its memory


def test_import_computes_vectors_and_add_leaves_them_to_fill_vectors_until_the_table_is_read(tmp_path):
    import io
    import json

    from toolscript.search import vectors

    def count(store):
        return store.conn.execute("SELECT COUNT(*) FROM memory_vectors").fetchone()[0]

    vectors.reset()
    with open_store(str(tmp_path / "m.db")) as store:
        store.add(session="s1", project=PROJECT, kind="note", content="Edited src/app.py: fixed the login redirect")
        assert count(store) == 0  # a hook's add does not read the embedding table
        line = json.dumps({"project": PROJECT, "content": "Ran `pytest -q`: 12 passed", "created": 5.0})
        assert store.import_(io.StringIO(line + "\n")) == 1 and count(store) == 1
        store.add(session="s1", project=PROJECT, kind="note", content="Ran `make lint`: clean")
        assert count(store) == 2  # the table is in memory now: the vector comes with the memory
        assert store.fill_vectors() == 1 and count(store) == 3


def test_inject_carries_more_than_three_related_memories_within_the_budget(tmp_path):
    """The evidence is often the fourth or seventh match: every match near the best fits while the budget lasts."""
    with open_store(str(tmp_path / "m.db")) as store:
        ids = [store.add(session="s1", project=PROJECT, kind="note", created=NOW - 40 * DAY + i,
                         content="Gina: the dance studio %s" % topic)
               for i, topic in enumerate(["opens in June", "floor is maple", "has two mirrors", "needs a sign",
                                          "rent is due monthly", "hosts a recital"])]
        shown = []
        out = context.inject(store, "Tell me about Gina's dance studio", project=PROJECT, session="s2", now=NOW, shown=shown)
        assert sorted(shown) == sorted(ids)
        assert context.estimate_tokens(out) <= 600
        small = []
        context.inject(store, "Tell me about Gina's dance studio", project=PROJECT, session="s2", now=NOW,
                       budget_tokens=100, shown=small)
        assert 0 < len(small) < len(ids)  # the budget still rules


def test_a_question_about_when_gets_each_memory_s_date(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        when = 1683633600.0  # 9 May 2023, midday UTC: the same calendar day in any timezone
        store.add(session="s1", project=PROJECT, kind="note", created=when, content="Caroline: I went to the LGBTQ support group")
        out = context.inject(store, "When did Caroline go to the support group?", project=PROJECT, session="s2",
                             now=when + 90 * DAY)
        assert "(9 May 2023), note:" in out
        plain = context.inject(store, "What did Caroline do at the support group?", project=PROJECT, session="s3",
                               now=when + 90 * DAY)
        assert "2023" not in plain and "note:" in plain


def test_a_question_naming_a_date_prefers_memories_recorded_around_it(tmp_path):
    may_4 = 1683201600.0  # 4 May 2023, midday UTC
    with open_store(str(tmp_path / "m.db")) as store:
        around = store.add(session="s1", project=PROJECT, kind="note", created=may_4,
                           content="Maria: I had dinner with my mother last night")
        store.add(session="s2", project=PROJECT, kind="note", created=may_4 + 60 * DAY,
                  content="Maria: dinner with my cousin was fun")
        found = store.search("Who did Maria have dinner with on May 3, 2023?", project=PROJECT)
        assert found[0][0].id == around  # without the date, the newer one wins the tie


def test_the_memory_after_a_question_is_taken_as_its_answer(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 30 * DAY,
                  content="Jon: What are your plans now with the advice you got at the networking event?")
        answer = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 30 * DAY + 1,
                           content="Gina: I'm sprucing up my pitch and building a website.")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 30 * DAY + 2,
                  content="Jon: Sounds good, Gina.")
        for i in range(5):  # newer talk of the same event, each a statement, each followed by small talk
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - DAY + 2 * i,
                      content="Gina: the networking event %d was fun" % i)
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - DAY + 2 * i + 1,
                      content="Jon: nice, see you %d" % i)
        found = [m.id for m, _ in store.search("What plans does Gina have after the advice at the networking event?",
                                               project=PROJECT, limit=2)]
        assert answer in found  # second only to the question


def test_a_word_the_memory_says_another_way_finds_it_in_both_modes(tmp_path):
    """"pre-production" is said "staging" in the memory: search's thesaurus bridges it, and the same in the LIKE fallback."""
    for fts in (True, False):
        with open_store(str(tmp_path / f"m{fts}.db"), fts=fts) as store:
            staging = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 5 * DAY,
                                content="Remember: the staging deploy runs `make deploy ENV=staging` from the ops box")
            store.add(session="s1", project=PROJECT, kind="note", created=NOW - DAY, content="Ran `pytest -q`: 52 passed")
            found = [m.id for m, _ in store.search("how do I push a release to the pre-production environment", project=PROJECT)]
            assert found[:1] == [staging], fts


def test_the_word_itself_outranks_a_word_that_stands_for_it(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        said = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 5 * DAY,
                         content="Decision: the directory layout keeps fixtures beside their tests")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - DAY,
                  content="Decision: the folder layout keeps snapshots beside their tests")
        found = [m.id for m, _ in store.search("which directory holds the fixtures layout", project=PROJECT)]
        assert found[0] == said


def test_only_a_rare_word_looks_for_its_synonyms():
    """A word that finds many memories is matched already; its synonyms would add noise and time."""
    common, rare = rank.RARE + 1, 3
    assert rank.related_terms("delete the folder", ["delete", "folder"], [common, rare])
    assert all(word == 1 for _, word in rank.related_terms("delete the folder", ["delete", "folder"], [common, rare]))
    assert rank.related_terms("delete the folder", ["delete", "folder"], [common, common]) == []


def test_a_memory_by_the_person_asked_about_outranks_one_addressed_to_them(tmp_path):
    """Both memories have the question's words; the one its speaker said comes first, though older."""
    with open_store(str(tmp_path / "m.db")) as store:
        said = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY,
                         content="John: boxing twice a week keeps me sane")
        for i in range(4):  # unrelated talk between them: no neighbour carries either
            store.add(session="s1", project=PROJECT, kind="note", created=NOW - 8 * DAY + i,
                      content="Maria: the garden has %d new tomatoes" % i)
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - DAY,
                  content="Maria: John, boxing twice a week keeps you sane")
        store.fill_vectors()  # the same meaning either way: only who said it tells them apart
        found = [m.id for m, _ in store.search("How often does John go boxing?", project=PROJECT)]
        assert found[0] == said


def test_names_asked_are_the_words_written_as_names():
    terms = ["often", "john", "go", "boxing"]
    assert rank.names_asked("How often does John go boxing?", terms) == [1]
    assert rank.names_asked("Boxing: how often does john go?", terms) == []  # a sentence's first word is no name
    assert rank.names_asked("Did Maria call? Then John went", ["maria", "call", "then", "john", "went"]) == [0, 3]
    # A prompt full of capitalised words (a pasted traceback) looks up only the first few.
    many = "Why did TypeError in Parser call Lexer via Token from Reader?"
    assert len(rank.names_asked(many, ["typeerror", "parser", "call", "lexer", "via", "token", "reader"])) == 3


def test_the_same_speaker_s_next_turn_goes_on_with_what_they_said(tmp_path):
    """John's turn after Maria's reply shares no word with the question but his name: it follows his first turn."""
    with open_store(str(tmp_path / "m.db")) as store:
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY,
                  content="John: I joined a boxing club downtown last week")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY + 1,
                  content="Maria: Nice! I'm baking bread today.")
        went_on = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY + 2,
                            content="John: The coach makes us skip rope for an hour first.")
        for i in range(10):  # newer small talk: on words alone John's turns tie with his answer, and are newer
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - DAY + 2 * i,
                      content="Maria: see you on day %d" % i)
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - DAY + 2 * i + 1,
                      content="John: sure, day %d it is" % i)
        store.fill_vectors()
        found = [m.id for m, _ in store.search("What does John do at his boxing club?", project=PROJECT, limit=3)]
        assert went_on in found


def test_where_the_pool_cuts_equal_matches_the_closest_in_meaning_go_on(tmp_path):
    """More memories than the pool holds share only the name: the one that means what is asked is older than all."""
    with open_store(str(tmp_path / "m.db")) as store:
        crash = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 30 * DAY,
                          content="John: my car was hit at the intersection, the accident wrecked the bumper")
        store.conn.execute("BEGIN")
        for i in range(rank.POOL + 50):  # each answered by Maria: no neighbour shares the name
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - 20 * DAY + 2 * i,
                      content="John: I baked bread with my grandmother's recipe, loaf %d" % i)
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - 20 * DAY + 2 * i + 1,
                      content="Maria: lovely weather today, %d" % i)
        store.conn.execute("COMMIT")
        store.fill_vectors()
        found = [m.id for m, _ in store.search("Was John in a vehicle collision?", project=PROJECT, limit=5)]
        assert crash in found


def test_a_turn_is_found_through_the_same_speaker_s_next_turn(tmp_path):
    """The photo's turn shares only the name with the question; the speaker's turn after the reply says what it shows."""
    with open_store(str(tmp_path / "m.db")) as store:
        photo = store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY,
                          content="Melanie: By the way, take a look at this.")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY + 1,
                  content="Caroline: Wow, that is lovely.")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY + 2,
                  content="Melanie: Yeah, I painted that lake sunrise last year!")
        for i in range(10):  # newer small talk: on words alone Melanie's turns tie with the photo's, and are newer
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - DAY + 2 * i,
                      content="Caroline: see you on day %d" % i)
            store.add(session="s2", project=PROJECT, kind="note", created=NOW - DAY + 2 * i + 1,
                      content="Melanie: sure, day %d it is" % i)
        store.fill_vectors()
        found = [m.id for m, _ in store.search("When did Melanie paint a sunrise?", project=PROJECT, limit=3)]
        assert photo in found


def test_a_project_s_ranking_does_not_depend_on_other_projects_memories(tmp_path):
    """A word's rarity is counted in the project searched: another project growing changes nothing here."""
    with open_store(str(tmp_path / "m.db")) as store:
        for i in range(6):
            store.add(session="s1", project=PROJECT, kind="note", created=NOW - 9 * DAY + i,
                      content="Deploy %d of the api went out" % i)
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - 2 * DAY,
                  content="The canary deploy of the api failed on a migration")
        store.add(session="s1", project=PROJECT, kind="note", created=NOW - DAY, content="Rolled back the migration")
        query = "why did the canary deploy fail"
        before = [(m.id, score) for m, score in store.search(query, project=PROJECT)]
        for i in range(300):
            store.add(session="s2", project="/home/dev/other", kind="note", created=NOW - 3 * DAY + i,
                      content="Unrelated chore number %d" % i)
        after = [(m.id, score) for m, score in store.search(query, project=PROJECT)]
        assert len(before) >= 2 and after == before
