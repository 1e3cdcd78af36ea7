"""What the fuzz campaigns share: the tokens they authenticate with, the figures they report, and
the Hypothesis settings that keep them bounded (seeded, no shrinking, no example database).

The campaigns: every OpenAPI operation (tests/web/schemathesis_run.py), the GitHub webhook with
signed payloads (tests/web/fuzz_webhook.py), the HTML pages (tests/web/fuzz_pages.py), the
runner's register-claim-upload-release sequences (tests/web/fuzz_lifecycle.py) and the sequences
schemathesis chains by the links it infers (tests/web/fuzz_stateful.py).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, seed, settings

Test = TypeVar("Test", bound=Callable[..., Any])


@dataclass(frozen=True)
class Tokens:
    """The secrets the campaigns authenticate with: an admin token, a runner token for the OpenAPI
    campaign, and one runner token per runner name for the sequences (a token is bound to a runner)."""

    admin: str
    runner: str
    runners: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Figures:
    """What a campaign did and found."""

    title: str = "OpenAPI operations"
    operations: int = 0
    examples: int = 0
    seconds: float = 0.0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: dict[str, str] = field(default_factory=dict)  # "what: first line" -> full report
    started: float = field(default_factory=time.monotonic, repr=False)

    def found(self, key: str, report: str) -> None:
        """Record a finding; the first report of each distinct key is kept."""
        self.failures.setdefault(key, report)

    def server_errors(self) -> list[int]:
        """The 5xx statuses answered."""
        return [status for status in self.statuses if status >= 500]

    def stop(self) -> Figures:
        """Note the time the campaign took."""
        self.seconds = time.monotonic() - self.started
        return self

    def summary(self) -> str:
        """The figures as a few lines of text."""
        statuses = ", ".join(f"{status}: {count}" for status, count in sorted(self.statuses.items()))
        lines = [
            f"== {self.title}",
            f"operations tested: {self.operations}",
            f"examples generated: {self.examples}",
            f"seconds: {self.seconds:.1f}",
            f"responses by status: {statuses}",
            f"distinct failures: {len(self.failures)}",
        ]
        lines += [f"  {key}" for key in sorted(self.failures)]
        return "\n".join(lines)


def first_line(error: BaseException) -> str:
    """The first meaningful line of an exception's message (or its type)."""
    text = str(error).strip()
    for line in text.splitlines():
        line = line.strip(" -_=")
        if line:
            return line[:160]
    return type(error).__name__


def bounded_settings(max_examples: int, **extra: Any) -> settings:
    """Hypothesis settings without shrinking: findings are recorded, not raised, so a run stays
    bounded and reports every distinct failure."""
    return settings(
        max_examples=max_examples,
        phases=[Phase.explicit, Phase.generate],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        **extra,
    )


def bounded(max_examples: int, seed_value: int) -> Callable[[Test], Test]:
    """:func:`bounded_settings`, seeded."""

    def apply(test: Test) -> Test:
        return seed(seed_value)(bounded_settings(max_examples)(test))

    return apply
