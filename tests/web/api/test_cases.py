"""/api/v1/cases: each case with the threshold and the cap on a suspect's paired rounds that apply,
per hardware kind too."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.conftest import SUITES
from tracker.catalog.cases import sync_suites
from tracker.catalog.suites import parse_suite

ZIMAGE = "z-image-turbo-serve-gb300"
SUITE_TEXT = (SUITES / "sglang-diffusion.toml").read_text()


def test_an_uncapped_case_shows_the_policy_s_cap_on_every_kind(client: TestClient) -> None:
    cases = client.get("/api/v1/cases").json()
    assert cases
    assert {case["confirmation_max_rounds"] for case in cases} == {16}
    assert {kind["confirmation_max_rounds"] for case in cases for kind in case["hardware"]} == {16}


def test_a_raised_cap_shows_on_the_case_and_a_kind_s_own_on_that_kind(
    client: TestClient, session: Session
) -> None:
    capped = SUITE_TEXT.replace(
        "threshold_pct = 3.0",
        "threshold_pct = 3.0\nconfirmation_max_rounds = 32\nconfirmation_caps = { GB300 = 48 }",
    )
    sync_suites(session=session, suites=[parse_suite(capped)])
    session.commit()
    case = client.get(f"/api/v1/cases/{ZIMAGE}").json()
    assert case["confirmation_max_rounds"] == 32
    assert case["hardware"] == [{"name": "GB300", "threshold_pct": 3.0, "confirmation_max_rounds": 48}]
    listed = {case["slug"]: case for case in client.get("/api/v1/cases").json()}
    assert listed[ZIMAGE] == case
    assert listed["qwen-image-t2i-1024"]["confirmation_max_rounds"] == 16


def test_the_openapi_schema_says_what_a_cap_costs(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("CaseOut", "CaseHardwareOut"):
        cap = schemas[name]["properties"]["confirmation_max_rounds"]
        assert "each round is two runs" in cap["description"]
