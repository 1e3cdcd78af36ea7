"""The column types that differ between the databases (tracker/models/base.py) read back what was
written, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tracker.enums import OutboxKind
from tracker.models import GithubOutbox, HardwareKind, Runner

pytestmark = pytest.mark.dialect

PAYLOAD: dict[str, Any] = {
    "body": "Qwen-Image denoise step 263.7 → 287.6 ms (+9.1 %) 🐢",
    "nested": {"steps": [263.7, 287.6], "none": None, "flag": True},
    "empty": {},
    "big": 2**53,
}


def test_json_columns_give_back_nested_values_unicode_and_nulls(session: Session) -> None:
    row = GithubOutbox(
        kind=OutboxKind.COMMENT, repository="sgl-project/sglang", target="103", payload=PAYLOAD
    )
    session.add(row)
    session.commit()
    session.expire_all()
    stored = session.scalar(select(GithubOutbox).where(GithubOutbox.id == row.id))
    assert stored is not None
    assert stored.payload == PAYLOAD


def test_big_ids_count_up_and_utc_times_come_back_aware(session: Session) -> None:
    kind = session.scalar(select(HardwareKind).limit(1))
    assert kind is not None
    written = dt.datetime(2026, 12, 3, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    first = Runner(name="types-a", hardware_kind=kind, labels={}, last_heartbeat_at=written)
    second = Runner(name="types-b", hardware_kind=kind, labels={"rack": "b"})
    session.add_all([first, second])
    session.commit()
    session.expire_all()
    assert second.id > first.id > 0
    heartbeat = session.get(Runner, first.id).last_heartbeat_at  # type: ignore[union-attr]
    assert heartbeat == written
    assert heartbeat is not None
    assert heartbeat.utcoffset() == dt.timedelta(0)
    assert second.created_at.tzinfo is not None


def test_a_naive_time_is_refused_before_it_reaches_the_database(session: Session) -> None:
    kind = session.scalar(select(HardwareKind).limit(1))
    naive = dt.datetime(2026, 1, 1)  # noqa: DTZ001 (the point of the test)
    session.add(Runner(name="types-naive", hardware_kind=kind, labels={}, last_heartbeat_at=naive))
    with pytest.raises(Exception, match="naive datetimes are ambiguous"):
        session.commit()
