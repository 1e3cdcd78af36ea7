"""What an alert group's notices say about each alert: the first finding of its diagnosis.

Diagnoses are read here, above detection, and handed to
:func:`tracker.detection.group_notices.tell_group` as a callback, so they are read only when a
notice is built (a group with news and a subscription that wants it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.orm import Session

from tracker.detection.group_notices import Describe
from tracker.diagnosis.loading import alert_diagnoses
from tracker.models import Alert


def diagnosis_notes(session: Session) -> Describe:
    """A describer of alerts: per alert id, its diagnosis's most telling finding (none: no entry)."""

    def describe(alerts: Sequence[Alert]) -> Mapping[int, str]:
        found = alert_diagnoses(session=session, alerts=alerts)
        return {alert_id: findings[0].summary for alert_id, findings in found.items() if findings}

    return describe
