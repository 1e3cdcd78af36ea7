"""The domain's states and kinds as StrEnums, defined here once and imported from here.

Plain Python, so the pure packages (``statistics``, the diagnosis rules) use them without the models.
The models store them as short strings (VARCHAR + CHECK, :func:`tracker.models.base.str_enum`). The
wire format may not import the tracker: where it carries one of these values it spells the values as a
``Literal`` of its own (e.g. a result's ``status``), and ingest maps it onto the enum.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Workload(StrEnum):
    """What executes a case: the real ``sglang generate`` or the embedded CPU toy pipeline."""

    SGLANG = "sglang"
    TOY = "toy"


class RunMode(StrEnum):
    """``generate``: one CLI process per run; ``serve``: a server, N timed requests after warmup."""

    GENERATE = "generate"
    SERVE = "serve"


class JobReason(StrEnum):
    """Why a job exists; a job is unique per candidate, case, hardware and reason."""

    NIGHTLY = "nightly"
    PR = "pr"
    BISECT = "bisect"
    CONFIRM = "confirm"
    MANUAL = "manual"
    EVIDENCE = "evidence"  # a culprit's (or regression's) run with compile logs and a profiler on


class JobState(StrEnum):
    """Job life cycle: ``queued → leased → done | failed``; ``cancelled`` by a user."""

    QUEUED = "queued"
    LEASED = "leased"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


# A job waiting for or holding a lease, and one that ended (no lease takes it again).
PENDING_JOB_STATES = (JobState.QUEUED, JobState.LEASED)
FINISHED_JOB_STATES = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class RunStatus(StrEnum):
    """A run measured something (``ok``) or failed with a reason and no number."""

    OK = "ok"
    FAILED = "failed"


class RunSource(StrEnum):
    """Where a run came from: a leased job, or an import made outside any job."""

    JOB = "job"
    IMPORT = "import"


class Metric(StrEnum):
    """Series metrics; ``denoise_step_ms`` is the metric of record."""

    DENOISE_STEP_MS = "denoise_step_ms"
    DENOISE_STAGE_MS = "denoise_stage_ms"
    E2E_MS = "e2e_ms"
    PEAK_MEMORY_MB = "peak_memory_mb"
    GRAPH_BREAKS = "graph_breaks"
    OUTPUT = "output"  # the seeded output changed (an alert of kind ``output``; values are PSNR, dB)


class Direction(StrEnum):
    """Which way a change went for the user: slower/bigger is a regression."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"


class AlertStatus(StrEnum):
    """Alert triage: ``open → acknowledged → fixed | invalid | expected``."""

    OPEN = "open"
    ACKNOWLEDGED = "acknowledged"
    FIXED = "fixed"
    INVALID = "invalid"
    EXPECTED = "expected"


class AlertState(StrEnum):
    """How an alert reads to people (lists, pages, the API, the bot): its status, except that a live
    suspect is never ``open``: ``confirming`` while paired rounds decide, ``unconfirmed`` once they
    refuted it or could not tell it from noise (never stored: :func:`tracker.detection.triage.alert_state`)."""

    OPEN = "open"
    CONFIRMING = "confirming"
    UNCONFIRMED = "unconfirmed"
    ACKNOWLEDGED = "acknowledged"
    FIXED = "fixed"
    EXPECTED = "expected"
    INVALID = "invalid"


class EstimateBasis(StrEnum):
    """What the figure shown for an alert rests on."""

    PAIRED = "paired"  # the paired rounds of its last good and first bad commits: estimate and interval
    DETECTION = "detection"  # detection's first estimate from the runs either side (no paired rounds)
    OUTPUT = "output"  # the seeded output's PSNR against the case's tolerance, dB (not a time)


class Verdict(StrEnum):
    """Outcome of an A/B comparison of one case on one hardware kind."""

    PENDING = "pending"
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no_change"
    INCONCLUSIVE = "inconclusive"


class OutputStatus(StrEnum):
    """How a run's seeded output compares with the one it is checked against.

    ``identical``: the same pixels (equal digests); ``same``: different pixels, but every frame at
    or above the case's PSNR tolerance; ``changed``: some frame below it; ``missing``: one side
    kept no output, so nothing could be compared.
    """

    IDENTICAL = "identical"
    SAME = "same"
    CHANGED = "changed"
    MISSING = "missing"


class ComparisonState(StrEnum):
    """Comparison life cycle."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


# A comparison that will change no more: its verdicts stand (or it was given up).
FINISHED_COMPARISON_STATES = (ComparisonState.DONE, ComparisonState.FAILED, ComparisonState.CANCELLED)


class ComparisonKind(StrEnum):
    """Why a comparison exists: a pull request (or any A/B asked for), an A/A calibration, the paired
    confirmation of a suspect change, or a bisection step too close to call on one run."""

    PR = "pr"
    CALIBRATION = "calibration"
    CONFIRMATION = "confirmation"
    BISECT = "bisect"


class AlertConfirmation(StrEnum):
    """How an alert's change was established (stored as a short string).

    ``pending``: paired rounds are deciding (a *suspect*, not yet an alert); ``confirmed``: the
    paired interval lies beyond the threshold; ``refuted``: it lies short of it; ``too_noisy``:
    still inconclusive at the round cap (never confirmed); ``not_possible``: imported results,
    or runs that could not be repeated; ``held``: imported results held over several runs.
    """

    PENDING = "pending"
    CONFIRMED = "confirmed"
    HELD = "held"
    REFUTED = "refuted"
    TOO_NOISY = "too_noisy"
    NOT_POSSIBLE = "not_possible"
    NOT_NEEDED = "not_needed"

    @property
    def established(self) -> bool:
        """Whether the change is taken as real: confirmed by paired rounds, or held over later runs."""
        return self in ESTABLISHED_CONFIRMATIONS


# Confirmations that make an alert a real change (bisection starts there, detection knows the break).
ESTABLISHED_CONFIRMATIONS = (AlertConfirmation.CONFIRMED, AlertConfirmation.HELD)


class BisectionState(StrEnum):
    """Where an alert's bisection stands (``None`` on the alert: not started).

    ``queued``: the commits between the last good and first bad ones are not stored yet and wait
    to be listed from git, outside any request (:mod:`tracker.workflows.bisections`);
    ``not_needed``: the last good and first bad commits are adjacent; ``running``: steps are being
    measured; ``found``: one culprit left; ``gave_up``: the commits that could be measured leave
    several in doubt; ``unavailable``: no history to bisect (it may be requested again).
    """

    QUEUED = "queued"
    NOT_NEEDED = "not_needed"
    RUNNING = "running"
    FOUND = "found"
    GAVE_UP = "gave_up"
    UNAVAILABLE = "unavailable"


class BisectionOutcome(StrEnum):
    """What one bisection step showed of its commit."""

    PENDING = "pending"  # being measured
    GOOD = "good"  # at the level before the change
    BAD = "bad"  # at the level after it
    SKIPPED = "skipped"  # could not be built, measured or called: its neighbour is tried


class AttemptOutcome(StrEnum):
    """How one lease of a job ended; only ``done`` produced a result."""

    DONE = "done"
    FAILED = "failed"
    RELEASED = "released"
    LEASE_EXPIRED = "lease expired"  # the API has always said it with a space


class OutboxKind(StrEnum):
    """What an outbox row does on GitHub (see :mod:`tracker.github.outbox`)."""

    COMMENT = "comment"  # the comparison's one comment, created once and edited in place
    REPLY = "reply"  # a new comment on a pull request
    REACTION = "reaction"  # a reaction to a comment
    STATUS = "status"  # a commit status on the PR's head sha
    CHECK = "check"  # the comparison's check run on the head sha (App mode), created once, then edited
    CULPRIT = "culprit"  # a group's one comment on its culprit's merged PR, created once, then edited


class Arm(StrEnum):
    """Which side of a comparison a job measures."""

    BASE = "base"
    HEAD = "head"


class TokenRole(StrEnum):
    """What a token may do: runners upload results; admins also triage and manage."""

    RUNNER = "runner"
    ADMIN = "admin"


class PatchKind(StrEnum):
    """How a patch of a candidate is named: a commit sha, or a pull request's head ref."""

    COMMIT = "commit"
    PULL = "pull"


def enum_values(enum_cls: type[StrEnum]) -> list[Any]:
    """The stored values of an enum, for messages that list what is valid."""
    return [member.value for member in enum_cls]


class DeliveryState(StrEnum):
    """A webhook delivery: ``pending`` until the bot carried it out (``done``) or gave up (``failed``)."""

    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


class NotificationFormat(StrEnum):
    """The body an outgoing webhook sends (see :mod:`tracker.notifications`)."""

    SLACK = "slack"  # Slack-compatible incoming-webhook JSON: text and mrkdwn blocks
    JSON = "json"  # the event as JSON, signed with HMAC-SHA256 like GitHub's webhooks


class NotificationEvent(StrEnum):
    """What a notification tells."""

    # An alert group's events, each sent once per group (docs/notifications.md). Named ``alert.*``
    # before migration 0028, which maps what was stored; the API still takes the old names.
    GROUP_CONFIRMED = "group.confirmed"  # a group first holds a confirmed alert not told before
    GROUP_CULPRIT = "group.culprit"  # bisection named the group's culprit commit
    GROUP_FIXED = "group.fixed"  # the group's derived state became fixed
    PR_VERDICT = "pr.verdict"  # a pull request's comparison reached its verdict
    NIGHTLY_SUMMARY = "nightly.summary"  # what a night ran, changed, left open and saw fixed
    TEST = "test"  # the "send a test" action


class NotificationSubject(StrEnum):
    """What a notification is about: the kind of the subject whose id it carries."""

    ALERT = "alert"  # deliveries queued before migration 0028 (alert events are group events since)
    GROUP = "group"  # an alert group (its confirmed, culprit and fixed events)
    COMPARISON = "comparison"
    NIGHTLY_RUN = "nightly_run"
    SUBSCRIPTION = "subscription"  # a test delivery is about its own subscription
