"""Claude models: reaching one, and the ``toolscript ask`` loop that lets one call tools.

* ``backends``: which way to reach a model (``choose_backend``) and one question, one
  answer through it (``complete``, a ``Reply``).
* ``messages``: the Messages API (an API key or a gateway's token).
* ``claude_cli``: the ``claude -p`` CLI, for people who log in with a subscription.
* ``ask``: the ask loop over the Messages API, its tools and allow list.
* ``ask_claude``: the same question handed to ``claude -p`` with the gateway as its tools.
* ``history``: the ask loop's saved conversations.

``ModelError`` is defined here, not in ``backends``: both backends raise it and
``backends`` imports them (in ``complete``), so it must live below all three.  The
prompt hook imports ``backends`` to choose a backend; defining the error here costs it no
extra module.
"""

from typing import Optional

from toolscript.errors import UserError


class ModelError(UserError):
    """A model call failed; ``kind`` says how, ``str(err)`` is one safe line saying what to do.

    kind: "auth" | "rate_limit" | "overloaded" | "server" | "timeout" | "network" |
    "bad_request" | "bad_reply" | "not_logged_in" | "unavailable".
    """

    def __init__(self, kind: str, message: str, status: Optional[int] = None) -> None:
        super().__init__(" ".join(message.split()))
        self.kind = kind
        self.status = status
