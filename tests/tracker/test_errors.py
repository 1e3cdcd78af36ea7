"""Every error the tracker raises on purpose belongs to the one tree in tracker/errors.py."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import tracker
from tracker.errors import ExternalServiceError, InvalidInput, PerftrackError
from tracker.github.client import GithubError, GithubSetupError
from tracker.github.commands import CommandError
from tracker.vcs.branch_head import BranchUnavailable
from tracker.vcs.history import HistoryUnavailable


def _tracker_errors() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for module_info in pkgutil.walk_packages(tracker.__path__, prefix="tracker."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found.append(value)
    return found


def test_every_public_tracker_error_is_a_perftrack_error() -> None:
    errors = _tracker_errors()
    assert {error.__name__ for error in errors} >= {
        "GithubError",
        "GithubSetupError",
        "CommandError",
        "HistoryUnavailable",
        "BranchUnavailable",
    }
    strays = [
        f"{error.__module__}.{error.__name__}" for error in errors if not issubclass(error, PerftrackError)
    ]
    assert strays == []


def test_a_command_error_is_invalid_input_that_reads_as_its_message() -> None:
    error = CommandError("`rounds` needs a number, e.g. `rounds 4`")
    assert isinstance(error, InvalidInput)
    assert str(error) == error.message == "`rounds` needs a number, e.g. `rounds 4`"
    assert error.field == "command"


def test_git_and_github_failures_are_external_service_errors() -> None:
    for error in (BranchUnavailable, GithubError, GithubSetupError, HistoryUnavailable):
        assert issubclass(error, ExternalServiceError)
