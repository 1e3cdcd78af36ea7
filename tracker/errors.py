"""The tracker's error hierarchy; ``web`` maps it to HTTP status codes in one handler.

::

    PerftrackError
    ├── InvalidInput            422: a field is wrong (``field`` names it)
    │   └── CommandError        a ``/perf`` command that cannot be carried out (tracker.github.commands)
    ├── PayloadTooLarge         413: a body or log is over the configured limit
    ├── NotFound                404: no such case, run, commit, ...
    ├── Conflict                409: the request contradicts stored state
    ├── AuthError               401: missing, malformed, unknown or revoked token
    │   └── Forbidden           403: a valid token without the needed role
    ├── ExternalServiceError    502: git or GitHub did not answer as needed
    │   ├── GithubError         a GitHub call failed (tracker.github.client)
    │   │   └── GithubSetupError    the App is not installed or its credentials are refused
    │   ├── HistoryUnavailable  commits cannot be listed from a mirror (tracker.vcs.history)
    │   ├── BranchUnavailable   a branch head cannot be resolved (tracker.vcs.branch_head)
    │   └── TreeUnavailable     a tree's files cannot be listed (tracker.catalog.path_coverage)
    ├── MalformedDelivery       400: a webhook delivery without a field it needs (tracker.github.events)
    └── SuiteError              a suite file is malformed (file, line, field)

The errors of git and GitHub are defined next to the code that talks to them; the web maps each
through its base here.
"""

from __future__ import annotations


class PerftrackError(Exception):
    """Base of every error the tracker raises on purpose."""


class InvalidInput(PerftrackError):
    """A value the caller sent is not acceptable; ``field`` is its dotted path."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class PayloadTooLarge(PerftrackError):
    """A request body or log exceeds a configured size limit."""


class NotFound(PerftrackError):
    """The named object does not exist."""


class Conflict(PerftrackError):
    """The request contradicts what is already stored."""


class AuthError(PerftrackError):
    """Authentication failed: no token, a malformed one, an unknown one or a revoked one."""


class Forbidden(AuthError):
    """The token is valid but its role does not allow this action."""


class ExternalServiceError(PerftrackError):
    """git or GitHub failed, refused or answered something unusable; trying later may succeed."""


class SuiteError(PerftrackError):
    """A suite file cannot be loaded; the message names the file, line and field."""

    def __init__(self, path: str, line: int | None, field: str | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        what = f" [{field}]" if field else ""
        super().__init__(f"{where}{what}: {message}")
        self.path = path
        self.line = line
        self.field = field
        self.message = message
