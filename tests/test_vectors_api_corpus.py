"""distill/corpus.py's in-domain ``api`` source: AWS operation docs (botocore) and Google discovery methods.

The real wheels are pinned by sha256 and not needed here: small wheels of the same layout stand in, with the
pins patched to theirs, so the parsing, the refusal of another file and the (name words, sentence) pairs are
tested with the stdlib alone.
"""

import gzip
import hashlib
import json
import zipfile

import pytest

from conftest import load_script


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
