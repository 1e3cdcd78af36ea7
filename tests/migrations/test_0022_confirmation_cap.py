"""0022: a case's cap on a suspect's paired rounds, and a hardware kind's, on both databases: the
suite's caps are stored, a downgrade keeps the cases and their kinds, and cases from before the
revision read as uncapped (the policy's 16)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, inspect, select, text

from tests.conftest import SUITES
from tracker import db
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import load_suites, parse_suite
from tracker.detection.confirmation import POLICY, max_rounds_for
from tracker.models import Case

pytestmark = pytest.mark.dialect

ZIMAGE = "z-image-turbo-serve-gb300"
CAPPED = (
    (SUITES / "sglang-diffusion.toml")
    .read_text()
    .replace(
        "threshold_pct = 3.0",
        "threshold_pct = 3.0\nconfirmation_max_rounds = 32\nconfirmation_caps = { GB300 = 48 }",
        1,
    )
)


def _columns(engine: Engine, table: str) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns(table)}


def test_0022_stores_the_suite_s_caps_and_a_downgrade_keeps_the_cases(scratch_db_url: str) -> None:
    db.upgrade(scratch_db_url)
    engine = db.make_engine(scratch_db_url)
    sessions = db.make_session_factory(engine)
    try:
        with db.session_scope(sessions) as session:
            sync_suites(session=session, suites=[parse_suite(CAPPED)])
        with engine.connect() as connection:
            stored = connection.execute(
                text(
                    "SELECT c.confirmation_max_rounds, h.confirmation_max_rounds FROM cases c "
                    "JOIN case_hardware h ON h.case_id = c.id WHERE c.slug = :slug"
                ),
                {"slug": ZIMAGE},
            ).one()
            uncapped = connection.execute(
                text("SELECT count(*) FROM cases WHERE confirmation_max_rounds IS NULL")
            ).scalar_one()
        assert tuple(stored) == (32, 48)
        assert uncapped == len(load_suites(SUITES)[0].cases) - 1

        db.downgrade(scratch_db_url, "0021")
        assert "confirmation_max_rounds" not in _columns(engine, "cases")
        assert "confirmation_max_rounds" not in _columns(engine, "case_hardware")
        with engine.connect() as connection:
            kept = connection.execute(
                text(
                    "SELECT c.threshold_pct, count(h.id) FROM cases c JOIN case_hardware h "
                    "ON h.case_id = c.id WHERE c.slug = :slug GROUP BY c.threshold_pct"
                ),
                {"slug": ZIMAGE},
            ).one()
        assert tuple(kept) == (3.0, 1)

        db.upgrade(scratch_db_url)
        with db.session_scope(sessions) as session:
            case = session.scalars(select(Case).where(Case.slug == ZIMAGE)).one()
            assert (case.confirmation_max_rounds, case.confirmation_cap_for("GB300")) == (None, None)
            assert max_rounds_for(case, "GB300") == POLICY.max_rounds  # stored before: uncapped
            sync_suites(session=session, suites=[parse_suite(CAPPED)])
        with db.session_scope(sessions) as session:
            case = session.scalars(select(Case).where(Case.slug == ZIMAGE)).one()
            assert (max_rounds_for(case), max_rounds_for(case, "GB300")) == (32, 48)
    finally:
        engine.dispose()
