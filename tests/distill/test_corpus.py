"""distill/corpus.py, the word-vector table's training sentences (stdlib only): its sources and their pins.

The Debian and man sources are cleaned, deduplicated and sorted; the pinned WordNet .deb is read for its
glosses and examples; the in-domain ``api`` source reads AWS operation docs (botocore) and Google discovery
methods.  The real wheels are pinned by sha256 and not needed here: small wheels of the same layout stand in, with the
pins patched to theirs, so the parsing, the refusal of another file and the (name words, sentence) pairs are
tested with the stdlib alone.
"""

import gzip
import hashlib
import json
import os
import re
import zipfile

import pytest

from conftest import REPO_ROOT, load_script


def _corpus_module():
    return load_script("distill/corpus.py")


def _wheel(path, files: dict) -> str:
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return str(path)


def _botocore_wheel(path) -> str:
    old = {"operations": {"CancelJob": {"documentation": "<p>An older model.</p>"}}}
    new = {"operations": {
        "CancelJob": {"documentation": "<p>Cancels a queued   <code>job</code>. It stays in the history.</p>"},
        "ListTagsForResource": {"documentation": "<p>Lists the tags of a resource.</p>"},
        "Undocumented": {},
    }}
    return _wheel(path, {
        "botocore/data/batch/2015-01-01/service-2.json.gz": gzip.compress(json.dumps(old).encode()),
        "botocore/data/batch/2016-08-10/service-2.json.gz": gzip.compress(json.dumps(new).encode()),
        "botocore/data/batch/2016-08-10/paginators-1.json": b"{}",
    })


def _google_wheel(path) -> str:
    doc = {"name": "gmail", "resources": {"users": {"resources": {"messages": {"methods": {
        "list": {"id": "gmail.users.messages.list", "description": "Lists the **messages** in the user's [mailbox](/x)."},
        "trash": {"id": "gmail.users.messages.trash", "description": "Moves the specified message to the trash."},
    }}}}}}
    return _wheel(path, {"googleapiclient/discovery_cache/documents/gmail.v1.json": json.dumps(doc).encode()})


def test_api_source_refuses_wheels_other_than_the_pinned_ones(tmp_path):
    corpus = _corpus_module()
    with pytest.raises(SystemExit, match="expected " + corpus.BOTOCORE_SHA256):
        corpus.api_operations(_botocore_wheel(tmp_path / "botocore.whl"))
    with pytest.raises(SystemExit, match="expected " + corpus.GOOGLEAPI_SHA256):
        corpus.google_operations(_google_wheel(tmp_path / "google.whl"))


def test_api_source_reads_the_newest_aws_model_and_google_methods_as_sentences_and_pairs(tmp_path, monkeypatch):
    corpus = _corpus_module()
    aws = _botocore_wheel(tmp_path / "botocore.whl")
    google = _google_wheel(tmp_path / "google.whl")
    for name, path in (("BOTOCORE", aws), ("GOOGLEAPI", google)):
        monkeypatch.setattr(corpus, name, path)
        monkeypatch.setattr(corpus, name + "_SHA256", hashlib.sha256(open(path, "rb").read()).hexdigest())
    # Only the newest model of a service counts; tags are stripped; an operation with no documentation is skipped.
    assert corpus.api_operations() == [("CancelJob", "Cancels a queued job . It stays in the history."),
                                       ("ListTagsForResource", "Lists the tags of a resource.")]
    assert corpus.google_operations() == [("list.messages", "Lists the messages in the user's mailbox."),
                                          ("trash.messages", "Moves the specified message to the trash.")]
    assert corpus.build(["api"]) == ["Cancels a queued job .", "Lists the messages in the user's mailbox.",
                                     "Lists the tags of a resource.", "Moves the specified message to the trash."]
    assert corpus.build(["api-google"]) == corpus.build(["api"])[1:2] + corpus.build(["api"])[3:]
    assert corpus.api_pairs() == [("cancel job", "Cancels a queued job ."),
                                  ("list messages", "Lists the messages in the user's mailbox."),
                                  ("list tags for resource", "Lists the tags of a resource."),
                                  ("trash messages", "Moves the specified message to the trash.")]
    assert "api" not in corpus.DEFAULT_SOURCES


def test_corpus_refuses_a_packages_file_other_than_the_pinned_one(tmp_path):
    corpus = _corpus_module()
    other = tmp_path / "Packages"
    other.write_text("Package: x\nDescription: not the pinned Debian file\n")
    with pytest.raises(SystemExit, match="expected 515e692f"):
        corpus.debian(str(other))


def test_corpus_sentences_are_cleaned_deduplicated_and_sorted():
    corpus = _corpus_module()
    assert corpus.clean("  copy   files and\ndirectories.  More text here.") == "copy files and directories."
    assert corpus.clean("two words") == "" and corpus.clean(" ".join(["word"] * 33)) == ""
    man = corpus.build(["man"])
    assert man == sorted(man) and len({s.lower() for s in man}) == len(man) and len(man) > 3000
    picked = corpus.sample(["Alpha beta gamma", "alpha BETA gamma", "delta epsilon zeta", "eta theta iota"], 2)
    assert len(picked) == 2 and picked == corpus.sample(["eta theta iota", "delta epsilon zeta", "Alpha beta gamma"], 2)


def test_corpus_never_reads_the_evaluation_sets():
    """No set's requests, and only the first set's catalogs (set00) with an explicit ``dev`` source."""
    corpus = _corpus_module()
    source = open(os.path.join(REPO_ROOT, "distill", "corpus.py"), encoding="utf-8").read()
    assert not re.search(r"set(0[1-9]|[1-9][0-9])", source) and "queries" not in source
    assert "dev" not in corpus.DEFAULT_SOURCES


def _fake_deb(path, files: dict) -> str:
    """A .deb as dpkg builds it (an ar archive: debian-binary, control.tar.xz, data.tar.xz) holding ``files``."""
    import io
    import tarfile

    def tar_xz(members: dict) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
            for name, data in members.items():
                info = tarfile.TarInfo("./" + name.lstrip("/"))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    out = b"!<arch>\n"
    for name, data in (("debian-binary", b"2.0\n"), ("control.tar.xz", tar_xz({"control": b"Package: x\n"})),
                       ("data.tar.xz", tar_xz(files))):
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode("ascii") + data
        out += b"\n" if len(data) % 2 else b""
    path.write_bytes(out)
    return str(path)


def test_corpus_wordnet_source_reads_glosses_and_examples_from_the_pinned_deb(tmp_path, monkeypatch):
    """WordNet's synsets become 'lemma, lemma: definition' sentences and its quoted examples sentences of their own."""
    corpus = _corpus_module()
    licence = "  1 This software and database is being provided to you, the LICENSEE\n"
    verb = (licence + '00134328 30 v 02 barbarize 0 barbarise 0 004 @ 00126264 v 0000 02 + 09 00 | make crude or savage'
            ' in behavior or speech; "his years in prison have barbarized the young man"  \n')
    adj = '00001740 00 a 01 able(p) 0 005 ! 00002098 a 0101 | (usually followed by `to\') having the means to do'
    adj += ' something; "able to swim"; "she was able to program her computer"  \n'
    files = {f"/usr/share/wordnet/data.{part}": b"" for part in ("noun", "adv")}
    files["/usr/share/wordnet/data.verb"] = verb.encode()
    files["/usr/share/wordnet/data.adj"] = adj.encode()
    deb = _fake_deb(tmp_path / "wordnet-base.deb", files)
    with pytest.raises(SystemExit, match="expected 61060d96"):
        corpus.wordnet(deb)
    monkeypatch.setattr(corpus, "WORDNET_SHA256", hashlib.sha256(open(deb, "rb").read()).hexdigest())
    assert corpus.wordnet(deb) == ["barbarize, barbarise: make crude or savage in behavior or speech",
                                   "able: (usually followed by `to') having the means to do something"]
    assert corpus.wordnet_examples(deb) == ["his years in prison have barbarized the young man", "able to swim",
                                            "she was able to program her computer"]
    built = corpus.build(["wordnet", "wordnet-examples"], wordnet_path=deb)
    assert built == sorted(corpus.wordnet(deb) + corpus.wordnet_examples(deb))
