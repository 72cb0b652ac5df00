"""A fake ``claude`` for the warm conversation's tests: it speaks ``--input-format stream-json``
as the real CLI was observed to (2.1.330 and 2.1.337), and does on demand what the real one
cannot be made to do (answer late, exit, ignore ``/clear``).

``install(bin_dir, record)`` writes it as ``bin_dir/claude``.  Each start appends one JSON
line to ``record``: ``{"pid", "argv", "env"}``, then every user message it reads:
``{"pid", "message"}``.  For each user message it prints, one JSON object a line:

* ``/clear`` -> ``{"type": "conversation_reset"}`` and a ``result`` with ``num_turns: 0``
  (with ``FAKE_CLAUDE_NO_CLEAR=1``: treated as any other message);
* anything else -> an ``assistant`` event and a ``result`` whose ``result`` is
  ``answer to: <message>`` (or ``$FAKE_CLAUDE_ANSWER``).  A message starting with
  ``sleep:SECONDS `` is answered that much later (every one ``$FAKE_CLAUDE_DELAY`` seconds
  later); ``exit`` ends the process without answering.

Started without ``--input-format`` it is a cold ``claude -p``: it reads the question from
stdin and prints one result, ``cold answer to: <question>``.
"""

import os
import stat
import sys

SCRIPT = r'''
import json, os, sys, time
record = os.environ["FAKE_CLAUDE_RECORD"]
def note(entry):
    with open(record, "a") as fh:
        fh.write(json.dumps(entry) + "\n")
note({"pid": os.getpid(), "argv": sys.argv[1:], "env": {k: v for k, v in os.environ.items() if k.startswith(("TOOLSCRIPT", "CLAUDE"))}})
def send(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()
if "--input-format" not in sys.argv:  # a cold claude -p: the question on stdin, one JSON result out
    message = sys.stdin.read()
    note({"pid": os.getpid(), "message": message})
    print(json.dumps({"type": "result", "is_error": False, "result": os.environ.get("FAKE_CLAUDE_ANSWER") or "cold answer to: " + message,
                      "modelUsage": {"claude-haiku-fake": {}}}))
    sys.exit(0)
send({"type": "system", "subtype": "ui_invalidate"})
turns = 0
for line in sys.stdin:
    message = json.loads(line)["message"]["content"]
    note({"pid": os.getpid(), "message": message})
    send({"type": "system", "subtype": "init", "model": "claude-haiku-fake"})
    if message == "/clear" and not os.environ.get("FAKE_CLAUDE_NO_CLEAR"):
        send({"type": "conversation_reset", "trigger": "clear"})
        send({"type": "result", "subtype": "success", "is_error": False, "num_turns": 0, "result": ""})
        continue
    if message == "exit":
        sys.exit(3)
    if message.startswith("sleep:"):
        time.sleep(float(message.split()[0][6:]))
    time.sleep(float(os.environ.get("FAKE_CLAUDE_DELAY") or 0))
    turns += 1
    text = os.environ.get("FAKE_CLAUDE_ANSWER") or "answer to: " + message
    send({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})
    send({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "result": text,
          "usage": {"input_tokens": 7, "output_tokens": 3}, "modelUsage": {"claude-haiku-fake": {}}})
'''


def install(bin_dir: str, record: str) -> str:
    """Write the fake as ``bin_dir/claude`` (records to ``record``, via FAKE_CLAUDE_RECORD: see ``env``)."""
    path = os.path.join(bin_dir, "claude")
    if os.path.lexists(path):
        os.unlink(path)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"#!{sys.executable}\n{SCRIPT}")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def env(bin_dir: str, record: str, **extra: str) -> dict:
    """An environment whose ``claude`` is the fake."""
    found = {"PATH": os.pathsep.join([bin_dir, "/usr/bin", "/bin"]), "HOME": bin_dir, "FAKE_CLAUDE_RECORD": record}
    found.update(extra)
    return found


def records(record: str) -> list:
    import json

    if not os.path.exists(record):
        return []
    with open(record, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def starts(record: str) -> list:
    """The ``{"pid", "argv", "env"}`` of every start, in order."""
    return [entry for entry in records(record) if "argv" in entry]


def messages(record: str) -> list:
    """Every user message the fakes read, in order."""
    return [entry["message"] for entry in records(record) if "message" in entry]
