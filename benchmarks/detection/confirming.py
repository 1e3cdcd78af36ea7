"""Streaming with the service's confirmation: nightly detection, suspects settled by paired rounds.

Each series is walked night by night, as the service sees it. After night ``t``'s run lands:

1. ``detect_changes`` runs on the series so far, leaving out the runs refuted suspects excluded,
   with the first bad commits of confirmed suspects as known breaks (the service passes its
   confirmed alerts' culprits and first bad commits, ``tracker.series.state.known_breaks``);
2. every change it reports (established or a suspect) that is **new** becomes a suspect. It is
   not new, as in the service's alert matching (``tracker.detection.alert_matching.matching_alert``, simplified to
   commits and directions), when a suspect in the same direction has the same first bad commit,
   whatever its outcome (a refuted one only with the same last good commit: when the refutation
   excluded the last good run, the first bad commit against an earlier one is a new question).
   Refuted and too-noisy suspects match only their own commit: paired rounds found no change
   there, so a change found next to one is another suspect (a load phase refuted at its first
   night is found again one night later, and refuted again; a too-noisy suspect does not take in
   a real change a few nights on). A confirmed suspect pins its step: a change up to three
   commits away in its direction, while detection no longer reports one at its commit, is the
   same change moved, not a second one. Not mirrored: the service also retires a too-noisy
   suspect whose nightly run lies far above its commit's paired runs and measures that commit
   again (``tracker.detection.confirmation``); the benchmark's nights are drawn once;
3. :func:`tracker.statistics.paired_rounds.plan_change` plans it (everything here was measured by perftrack's
   runners, so ``can_rerun`` is true) and, for ``confirm``, paired rounds of the last good and first
   bad commits are drawn **on night t** (:func:`benchmarks.detection.runmodel.paired_round`) and
   judged by :func:`tracker.statistics.confirmation.judge_confirmation` — adding rounds as ``rounds_wanted``
   asks, up to the policy's cap — until the judgement is final;
4. confirmed: an alert at the first bad commit; refuted: the nightly run farther from its own
   arm's paired level (last good or first bad: the paired rounds say the two commits share one
   level, not which nightly run was off) leaves the series from the next detection on; too noisy:
   an unconfirmed alert, never counted as confirmed.

Rounds are not series points. Last good is the newest commit before the first bad one that still
has a run in the series (a refuted run is not a level to compare with).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.detection.dataset import LabelledSeries
from benchmarks.detection.peers import THRESHOLD_PCT
from benchmarks.detection.runmodel import paired_round
from tracker.comparisons.calibration import MAX_PRIOR_DOF
from tracker.statistics.ab import ComparisonStats, NoisePrior, RoundValues
from tracker.statistics.changepoints import Change, Detection, DetectorConfig, detect_changes
from tracker.statistics.confirmation import ConfirmationOutcome, judge_confirmation
from tracker.statistics.paired_rounds import ChangeAction, ConfirmationPolicy, plan_change, same_size

# The prior as the service hands it over (``tracker.comparisons.calibration.series_noise_prior``): the series'
# noise with its differences as degrees of freedom, at most this many. ``judge_confirmation`` caps
# the weight it gives it (``ConfirmationPolicy.max_prior_dof``), for the service and here alike.
PRIOR_DOF = MAX_PRIOR_DOF


@dataclass(frozen=True, slots=True)
class Suspect:
    """One change detection reported, and how its confirmation ended."""

    first_bad: int  # commit index in the series
    last_good: int
    direction: int  # +1 slower
    night: int  # when it was found and confirmed
    detected_pct: float
    established: bool  # detection's own view when it was found
    outcome: ConfirmationOutcome
    rounds: int
    paired_pct: float | None  # the paired estimate and interval when the judgement was final
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None


@dataclass(frozen=True, slots=True)
class StreamOutcome:
    """Every suspect of one series, in the order they were found."""

    suspects: tuple[Suspect, ...]
    points: int

    @property
    def rounds(self) -> int:
        """Paired rounds spent on the series (each round runs both arms)."""
        return sum(suspect.rounds for suspect in self.suspects)

    def with_outcome(self, outcome: ConfirmationOutcome) -> list[Suspect]:
        """The suspects whose confirmation ended so."""
        return [suspect for suspect in self.suspects if suspect.outcome is outcome]


def _direction(change: Change) -> int:
    return 1 if change.is_regression else -1


# A confirmed change pins its step: a change of about its size that detection places this close to
# it, in the same direction, while no longer reporting one at the confirmed commit, is the same
# change moved (the service's ``tracker.detection.alert_matching.MATCH_RADIUS``).
PIN_RADIUS = 3


def _matches(
    suspects: list[Suspect],
    first_bad: int,
    last_good: int,
    direction: int,
    reported: set[tuple[int, int]],
    change_pct: float,
) -> bool:
    """Whether a change at ``first_bad`` is a suspect already known (the service's matching).

    A refuted suspect whose *last good* run was the one excluded (the off run) no longer matches
    its first bad commit: compared with an earlier last good commit it is a new question. A
    confirmed suspect also matches a change of about its size (``same_size``) up to
    :data:`PIN_RADIUS` commits away in its direction while detection reports none at its own commit
    (``reported``: index and direction of every change reported now): the step moved, it did not
    happen twice; never across another confirmed suspect's commit (the level moved in between).
    """
    for known in suspects:
        if known.direction != direction:
            continue
        if known.first_bad == first_bad and (
            known.outcome is not ConfirmationOutcome.REFUTED or known.last_good == last_good
        ):
            return True
        if (
            known.outcome is ConfirmationOutcome.CONFIRMED
            and abs(known.first_bad - first_bad) <= PIN_RADIUS
            and (known.first_bad, direction) not in reported
            and not _confirmed_between(suspects, known, first_bad)
            and same_size(
                change_pct,
                known.paired_pct if known.paired_pct is not None else known.detected_pct,
                THRESHOLD_PCT,
            )
        ):
            return True
    return False


def _confirmed_between(suspects: list[Suspect], known: Suspect, first_bad: int) -> bool:
    """Whether another confirmed suspect's first bad commit lies strictly between ``known``'s and ``first_bad``."""
    low, high = sorted((known.first_bad, first_bad))
    return any(
        other is not known and other.outcome is ConfirmationOutcome.CONFIRMED and low < other.first_bad < high
        for other in suspects
    )


def _off_run(series: LabelledSeries, last_good: int, first_bad: int, rounds: Sequence[RoundValues]) -> int:
    """The commit whose nightly run lies farther from its arm's mean in the paired rounds (logs)."""
    base = statistics.fmean(math.log(pair.base) for pair in rounds)
    head = statistics.fmean(math.log(pair.head) for pair in rounds)
    good_off = abs(math.log(series.values[last_good]) - base)
    bad_off = abs(math.log(series.values[first_bad]) - head)
    return last_good if good_off > bad_off else first_bad


def series_prior(detection: Detection, prior_dof: int | None) -> NoisePrior | None:
    """The prior handed to the judgement: the series' noise, with at most ``prior_dof`` degrees of freedom."""
    if prior_dof is None or detection.noise is None:
        return None
    return NoisePrior(noise_pct=detection.noise.cv_pct, dof=min(prior_dof, detection.noise.differences))


def confirm(
    series: LabelledSeries,
    *,
    last_good: int,
    first_bad: int,
    night: int,
    regression: bool,
    prior: NoisePrior | None,
    policy: ConfirmationPolicy,
    rng: np.random.Generator,
    threshold_pct: float = THRESHOLD_PCT,
) -> tuple[ConfirmationOutcome, list[RoundValues], ComparisonStats | None]:
    """Draw and judge paired rounds on ``night`` until final: the outcome, the rounds, statistics."""
    rounds: list[RoundValues] = []
    scheduled = policy.initial_rounds
    while True:
        while len(rounds) < scheduled:
            rounds.append(paired_round(series.model, last_good, first_bad, night, rng))
        judgement = judge_confirmation(
            rounds,
            regression=regression,
            threshold_pct=threshold_pct,
            scheduled=scheduled,
            prior=prior,
            policy=policy,
        )
        if judgement.outcome is not ConfirmationOutcome.MORE_ROUNDS:
            return judgement.outcome, rounds, judgement.stats
        if judgement.rounds_wanted <= scheduled:
            raise RuntimeError(f"more rounds asked without more scheduled: {judgement.reason}")
        scheduled = judgement.rounds_wanted


def stream_with_confirmation(
    series: LabelledSeries,
    *,
    prior_dof: int | None = PRIOR_DOF,
    policy: ConfirmationPolicy | None = None,
    config: DetectorConfig | None = None,
    threshold_pct: float = THRESHOLD_PCT,
    exclude_off_run: bool = True,
) -> StreamOutcome:
    """Walk ``series`` night by night with detection and paired confirmation, as the service would.

    Parameters
    ----------
    series
        The labelled series; its nightly runs and its run model (for the paired rounds).
    prior_dof
        Weight of the series' noise as the judgement's prior (``None``: no prior).
    policy
        Round counts of a confirmation.
    config
        Detector settings (defaults when omitted).
    threshold_pct
        The model's threshold, for detection and for the judgement.
    exclude_off_run
        A refuted suspect excludes whichever nightly run (last good or first bad) lies farther from
        its own arm's paired level, as the service now does; ``False`` is the old rule (always the
        first bad commit's run), kept as a what-if.

    Returns
    -------
    StreamOutcome
        Every suspect and how it ended.
    """
    policy = policy or ConfirmationPolicy()
    rng = np.random.default_rng(series.draw_seed)
    kept: list[int] = []  # commits whose nightly run is in the series
    suspects: list[Suspect] = []
    for night in range(len(series.values)):
        kept.append(night)
        if len(kept) < 2:
            continue
        confirmed = {
            suspect.first_bad for suspect in suspects if suspect.outcome is ConfirmationOutcome.CONFIRMED
        }
        detection = detect_changes(
            [[series.values[index]] for index in kept],
            threshold_pct=threshold_pct,
            config=config,
            known_breaks=[position for position, index in enumerate(kept) if index in confirmed],
        )
        prior = series_prior(detection, prior_dof)
        refuted: set[int] = set()
        reported = {(kept[change.index], _direction(change)) for change in detection.changes}
        for change in detection.changes:
            first_bad = kept[change.index]
            direction = _direction(change)
            plan = plan_change(change, can_rerun=True, policy=policy)
            if plan.action is not ChangeAction.CONFIRM or plan.last_good_index is None:
                continue
            last_good = kept[plan.last_good_index]
            if _matches(suspects, first_bad, last_good, direction, reported, change.change_pct):
                continue
            outcome, rounds, stats = confirm(
                series,
                last_good=last_good,
                first_bad=first_bad,
                night=night,
                regression=direction > 0,
                prior=prior,
                policy=policy,
                rng=rng,
                threshold_pct=threshold_pct,
            )
            suspects.append(
                Suspect(
                    first_bad=first_bad,
                    last_good=last_good,
                    direction=direction,
                    night=night,
                    detected_pct=change.change_pct,
                    established=change.established,
                    outcome=outcome,
                    rounds=len(rounds),
                    paired_pct=stats.change_pct if stats else None,
                    ci_low_pct=stats.ci_low_pct if stats else None,
                    ci_high_pct=stats.ci_high_pct if stats else None,
                )
            )
            if outcome is ConfirmationOutcome.REFUTED:
                refuted.add(_off_run(series, last_good, first_bad, rounds) if exclude_off_run else first_bad)
        kept = [index for index in kept if index not in refuted]
    return StreamOutcome(suspects=tuple(suspects), points=len(series.values))
