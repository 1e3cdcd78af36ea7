"""0021: a calibration's order effect columns, on both databases: calibrations stored before the
revision keep every figure they had and read as "not measured", and a downgrade keeps the rows."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select, text

from tests.conftest import SUITES
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites
from tracker.models import Calibration, Case, HardwareKind

pytestmark = pytest.mark.dialect

ORDER_COLUMNS = {"order_effect_pct", "order_effect_low_pct", "order_effect_high_pct"}


def test_0021_calibrations_from_before_have_no_order_effect_and_downgrade_keeps_them(
    scratch_db_url: str,
) -> None:
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    sessions = db.make_session_factory(engine)
    try:
        with db.session_scope(sessions) as session:
            sync_suites(session=session, suites=load_suites(SUITES))
            session.add(
                Calibration(
                    case_id=session.scalars(select(Case.id).where(Case.slug == "qwen-image-t2i-1024")).one(),
                    hardware_kind_id=session.scalars(
                        select(HardwareKind.id).where(HardwareKind.name == "H200")
                    ).one(),
                    rounds=3,
                    round_noise_pct=0.8,
                    threshold_pct=2.0,
                    false_verdict_rate={"2": 0.0},
                    mde_pct={"2": 9.5},
                    order_effect_pct=-2.6,
                    order_effect_low_pct=-5.9,
                    order_effect_high_pct=0.7,
                )
            )
        db.downgrade(scratch_db_url, "0020")
        assert ORDER_COLUMNS.isdisjoint(
            column["name"] for column in inspect(engine).get_columns("calibrations")
        )
        with engine.connect() as connection:
            kept = connection.execute(text("SELECT rounds, round_noise_pct FROM calibrations")).all()
        assert [tuple(row) for row in kept] == [(3, 0.8)]
        db.upgrade(scratch_db_url)
        assert {column["name"] for column in inspect(engine).get_columns("calibrations")} >= ORDER_COLUMNS
        with db.session_scope(sessions) as session:
            calibration = session.scalars(select(Calibration)).one()
            assert (calibration.rounds, calibration.round_noise_pct, calibration.mde_pct) == (
                3,
                0.8,
                {"2": 9.5},
            )
            assert calibration.order_effect_pct is None  # measured before rounds alternated: not a guess
            assert calibration.order_effect_low_pct is None
            assert calibration.order_effect_high_pct is None
    finally:
        engine.dispose()
