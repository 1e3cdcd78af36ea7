"""The one settings class; nothing else in perftrack reads ``os.environ``.

Every value can be set by an environment variable with the ``PERFTRACK_`` prefix
(``PERFTRACK_DATABASE_URL``, ``PERFTRACK_ADMIN_TOKEN``, ...) or a ``.env`` file.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

_PLACEHOLDER_SECRETS = frozenset({"changeme", "change-me", "secret", "admin", "password", "token", "test"})
# How long a flagged run's job keeps being measured again (tracker.workflows.reruns), seconds.
FLAGGED_RERUN_BUDGET_S = 900


CheckConclusion = Literal["success", "neutral", "failure", "cancelled", "skipped", "action_required"]


class CheckPolicy(BaseModel):
    """The conclusion of a ``/perf`` comparison's check run for each way it can end (docs/github-bot.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    regression: CheckConclusion = "failure"  # a result beyond its threshold, slower
    output_changed: CheckConclusion = "failure"  # an output changed beyond its tolerance
    too_noisy: CheckConclusion = "neutral"  # inconclusive after the rounds allowed
    success: CheckConclusion = "success"  # no change, or improvements only
    failed: CheckConclusion = "failure"  # nothing was measured
    cancelled: CheckConclusion = "cancelled"


def default_data_dir() -> Path:
    """Per-user data directory (``~/.local/share/perftrack`` on Linux)."""
    return Path(platformdirs.user_data_dir("perftrack", appauthor=False))


def default_suite_dir() -> Path:
    """The suites shipped with perftrack: the repository's ``suites/`` or the wheel's copy."""
    source_tree = Path(__file__).resolve().parent.parent / "suites"
    if source_tree.is_dir():
        return source_tree
    return Path(__file__).resolve().parent / "_bundled" / "suites"


ISSUE_PATTERN = re.compile(r"(?P<repository>[\w.-]+/[\w.-]+)#(?P<number>[1-9]\d{0,9})")


@dataclass(frozen=True)
class TrackingIssue:
    """``owner/name#number``."""

    repository: str
    number: int

    @classmethod
    def parse(cls, text: str) -> TrackingIssue:
        """Read ``owner/name#123``; a clear error otherwise."""
        match = ISSUE_PATTERN.fullmatch(text.strip())
        if match is None:
            raise ValueError(
                f"tracking issue {text!r} must read owner/name#NUMBER, e.g. sgl-project/sglang#12345"
            )
        return cls(repository=match["repository"], number=int(match["number"]))


class Settings(BaseSettings):
    """perftrack configuration, validated once at start-up."""

    model_config = SettingsConfigDict(env_prefix="PERFTRACK_", env_file=".env", extra="ignore")

    environment: Literal["development", "production", "test"] = "development"
    data_dir: Path = Field(default_factory=default_data_dir)
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL; empty means an SQLite file perftrack.db in data_dir.",
    )
    suite_dir: Path = Field(default_factory=default_suite_dir)

    # Bootstrap: when set, an admin token with this value exists (hashed) after start-up.
    admin_token: SecretStr | None = None
    # Signs the dashboard's sign-in cookie. Unset outside production: a random key per process
    # (sign-ins do not survive a restart); production refuses to start without a real one.
    session_secret: SecretStr | None = None
    session_max_age_s: int = Field(default=12 * 3600, ge=60, description="how long a dashboard sign-in lasts")
    # Dashboard sign-in throttle (tracker.access.throttle): after sign_in_failures_allowed wrong
    # tokens from one client address (IPv6: its /64), every sign-in from it gets 429 for
    # sign_in_delay_s, doubled by each further failure up to sign_in_max_delay_s; the count starts
    # over sign_in_window_s after the last failure and wait. All clients together get the same after
    # sign_in_global_failures_allowed failures (0: no global ceiling).
    sign_in_failures_allowed: int = Field(default=5, ge=1)
    sign_in_global_failures_allowed: int = Field(default=100, ge=0)
    sign_in_window_s: int = Field(default=900, ge=1)
    sign_in_delay_s: int = Field(default=10, ge=1)
    sign_in_max_delay_s: int = Field(default=900, ge=1)

    # Client side (import-log --server, the runner): where the tracker is and the token to use.
    server_url: str | None = None
    token: SecretStr | None = None
    http_timeout_s: float = Field(default=30.0, gt=0)

    # Limits: requests over them are refused with 413, never half-stored.
    max_request_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    max_log_bytes: int = Field(default=8 * 1024 * 1024, gt=0)
    max_steps_per_run: int = Field(default=10_000, gt=0)
    max_page_size: int = Field(default=1000, gt=0)
    series_default_limit: int = Field(default=500, gt=0)

    # Job queue: how long a lease lasts without a heartbeat, how often a job is tried.
    lease_seconds: int = Field(default=300, ge=5)
    max_attempts: int = Field(default=3, ge=1, le=20)
    runner_offline_after_s: int = Field(default=120, ge=5, description="no heartbeat for this long: offline")
    # A run measured under contention or throttling is measured again, each time after the runner
    # waited for a quiet moment, until this long after its first flagged try (0: never again);
    # then it is kept excluded and its bisection step skipped. Contention comes and goes: a
    # neighbour's build or test run is over within minutes.
    flagged_rerun_budget_s: int = Field(default=FLAGGED_RERUN_BUDGET_S, ge=0)
    # A CPU run (no GPU) measured while other processes took a share of the machine is flagged as
    # contended. Off for CPU runners on a host that is shared by design (a CI box running tests
    # beside them): their runs are then stored clean, as noisy as that host; GPU throttling and CPU
    # steal are flagged either way.
    flag_cpu_contention: bool = True

    # Where the dashboard is reachable from outside (links in PR comments and commit statuses).
    public_url: str | None = None

    # GitHub bot: REST API base (GitHub Enterprise: https://HOST/api/v3), the webhook's shared
    # secret, and either a GitHub App (id + private key, PEM text or a path) or a personal token.
    github_api_url: str = "https://api.github.com"
    github_webhook_secret: SecretStr | None = None
    github_app_id: int | None = None
    github_app_private_key: SecretStr | None = None
    github_token: SecretStr | None = None
    github_allowed_users: list[str] = Field(
        default_factory=list, description="may run /perf without write access to the repository"
    )
    github_status_context: str = "perftrack/perf"
    # A /perf comparison adds rounds while it is inconclusive, up to this many (or the rounds asked
    # for, when more): each round is two runs of GPU time per case × hardware.
    github_max_rounds: int = Field(default=8, ge=1, le=64)
    # A push to a PR that ran /perf re-runs its last command on the new head (the old head's
    # comparison, if still running, is cancelled); a PR carrying this label is measured on every push
    # (bare /perf) and when the label is added. Empty: no label. Either way the pusher (labeller)
    # needs write access, checked for each head, and a fork's pushes are never measured on their own.
    github_rerun_on_push: bool = True
    github_perf_label: str | None = None
    # App mode: a /perf comparison is also a check run on the head; its conclusion per outcome
    # (CheckPolicy), overridden per repository by github_check_policies (keys owner/name).
    github_check_policy: CheckPolicy = Field(default_factory=lambda: CheckPolicy())
    github_check_policies: dict[str, CheckPolicy] = Field(default_factory=dict)
    # A confirmed group whose culprit came from a pull request is told on that PR, in one comment
    # edited as the group grows (docs/github-bot.md); overridden per repository (keys owner/name).
    github_tell_culprits: bool = True
    github_tell_culprits_repositories: dict[str, bool] = Field(default_factory=dict)
    # A group whose alerts were first confirmed longer ago than this is not told on its culprit's PR,
    # and a culprit comment still unsent this long after it was queued is dropped: no late comments
    # on old pull requests (a server given GitHub credentials later, a long outage).
    github_culprit_max_age_days: int = Field(default=7, ge=1)
    # Handled webhook deliveries are kept this long (GitHub lets one redeliver for 3 days).
    github_delivery_retention_days: int = Field(default=14, ge=3)
    # owner/name#NUMBER: after each nightly ends, a summary comment goes to this issue.
    github_nightly_issue: str | None = None

    # Scheduler: run the nightly schedules and periodic sweeps in this process (one leader among
    # all processes), how often the sweeps run, and how often each series gets an A/A calibration.
    scheduler_enabled: bool = False
    # A server that runs no scheduler expires leases and evaluates the series uploads marked itself,
    # every 5 s (tracker/scheduling/housekeeping.py); false leaves both to a `perftrack scheduler`.
    housekeeping: bool = True
    sweep_interval_s: int = Field(default=60, ge=5)
    # Detection after an upload: inline (the alert exists when the upload returns) or deferred (the
    # upload marks its series; the leading scheduler evaluates marked series every few seconds).
    # Deferred keeps uploads fast at scale and needs a scheduler running (scheduler_enabled,
    # `perftrack scheduler`, or a server's housekeeping).
    detection_deferred: bool = False
    calibration_interval_days: int = Field(default=0, ge=0, description="0: no scheduled calibrations")

    # Observability: /metrics asks for this bearer token when set (open otherwise); logs go to
    # stderr as text or as one JSON object per line, at this level and above.
    metrics_token: SecretStr | None = None
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_log_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("github_nightly_issue")
    @classmethod
    def _tracking_issue(cls, value: str | None) -> str | None:
        if value:
            TrackingIssue.parse(value)
        return value or None

    @field_validator("database_url")
    @classmethod
    def _normalise_postgres_url(cls, value: str) -> str:
        # A bare postgresql:// URL would pick psycopg2, which perftrack does not install.
        if value.startswith(("postgresql://", "postgres://")):
            return "postgresql+psycopg://" + value.split("://", 1)[1]
        return value

    @model_validator(mode="after")
    def _refuse_placeholder_secrets(self) -> Settings:
        if self.environment == "production" and self.admin_token is not None:
            token = self.admin_token.get_secret_value()
            if token.lower() in _PLACEHOLDER_SECRETS or len(token) < 24:
                raise ValueError(
                    "PERFTRACK_ADMIN_TOKEN looks like a placeholder; use at least 24 random characters"
                )
        return self

    @model_validator(mode="after")
    def _session_secret(self) -> Settings:
        if self.session_secret is None:
            if self.environment == "production":
                raise ValueError("PERFTRACK_SESSION_SECRET is required in production (32+ random characters)")
            self.session_secret = SecretStr(secrets.token_urlsafe(32))
            return self
        value = self.session_secret.get_secret_value()
        if self.environment == "production" and (value.lower() in _PLACEHOLDER_SECRETS or len(value) < 32):
            raise ValueError(
                "PERFTRACK_SESSION_SECRET looks like a placeholder; use at least 32 random characters"
            )
        return self

    @property
    def effective_database_url(self) -> str:
        """The configured URL, or the default SQLite file in the data directory."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'perftrack.db'}"

    @property
    def git_cache_dir(self) -> Path:
        """Where the tracker keeps blob-less mirrors of tracked repositories, for bisection."""
        return self.data_dir / "git"

    def tells_culprits(self, repository: str) -> bool:
        """Whether the bot comments on the culprit's pull request of ``repository`` (owner/name, its
        own entry in ``github_tell_culprits_repositories`` compared without case, else the default)."""
        wanted = repository.lower()
        found = (on for name, on in self.github_tell_culprits_repositories.items() if name.lower() == wanted)
        return next(found, self.github_tell_culprits)

    @property
    def has_github_credentials(self) -> bool:
        """Whether the bot can write to GitHub: an App (id and private key) or a token is set."""
        app = self.github_app_id is not None and self.github_app_private_key is not None
        return app or self.github_token is not None

    def culprit_telling(self) -> CulpritTelling:
        """Whether a culprit's pull request is told, as these settings say (docs/github-bot.md)."""
        return CulpritTelling(
            can_send=self.has_github_credentials,
            max_age=dt.timedelta(days=self.github_culprit_max_age_days),
            turned_on=self.tells_culprits,
        )

    @property
    def is_sqlite(self) -> bool:
        """Whether the database is an SQLite file (the embedded default)."""
        return self.effective_database_url.startswith("sqlite")


@dataclass(frozen=True)
class CulpritTelling:
    """Whether this server tells culprits' pull requests (:mod:`tracker.github.culprits`): it can write
    to GitHub, the repository has telling on, and the news is at most ``max_age`` old. Made by
    :meth:`Settings.culprit_telling` where the settings are known and handed down to the workflows;
    a caller with none passes ``None``: nothing is told."""

    can_send: bool
    max_age: dt.timedelta
    turned_on: Callable[[str], bool]  # per repository (owner/name)

    def tells(self, repository: str) -> bool:
        """Whether a comment on a pull request of ``repository`` can be sent."""
        return self.can_send and self.turned_on(repository)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
