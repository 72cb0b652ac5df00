"""Errors that reach the user as one line.

``UserError`` is what library code raises when the user can fix the problem
(bad config, server not reachable, wrong argument).  The CLI prints its message
on one line, without a traceback, and exits with its ``exit_code``.
"""


class UserError(Exception):
    """A failure the user can act on; ``str(err)`` says what to do next."""

    exit_code = 1

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
