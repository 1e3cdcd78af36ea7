"""Property: any JSON value (lone surrogates, deep nesting, huge integers, NaN and ±Infinity as Python's
json writes them) in any free-form field of an upload is answered 2xx or 4xx, never 5xx, and every
page and API that shows the run, its series and the series' alert still answers 200."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.factories import regression_payloads, result_body
from wire import MAX_JSON_DEPTH

# The fields of an upload that are not one number or one short string: free-form objects, lists,
# nested records, long text.
FIELDS = (
    "environment",
    "perf_dump",
    "warnings",
    "sources",
    "stages",
    "compile",
    "output",
    "command",
    "raw_log",
)
SERIES = "qwen-image-t2i-1024/H200"
SHOWN = ("/api/v1/alerts", "/alerts", f"/api/v1/series/{SERIES}", f"/series/{SERIES}", "/commits/4739f2e")

_text = st.text(
    st.characters(exclude_categories=[]) | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    max_size=8,
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats()  # NaN and ±Infinity included
    | _text
)
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_text, children, max_size=3),
    max_leaves=10,
)


def _nested(depth: int, leaf: Any, as_dict: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


_deep = st.builds(_nested, st.integers(MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH + 3), _scalars, st.booleans())
_objects = st.dictionaries(_text, _values | _deep, max_size=3)
_uploads = (
    st.fixed_dictionaries({"environment": _objects})
    | st.fixed_dictionaries({"perf_dump": _objects})
    | st.dictionaries(st.sampled_from(FIELDS), _values | _deep, min_size=1, max_size=2)
)


@pytest.fixture
def alerted(client: TestClient, runner_token: str) -> str:
    """The three regression imports (an alert in the series), and the runner token."""
    for body in regression_payloads():
        answer = client.post(
            "/api/v1/results", json=body, headers={"Authorization": f"Bearer {runner_token}"}
        )
        assert answer.status_code == 201, answer.text
    return runner_token


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fields=_uploads)
@example(fields={"environment": {"gpu": "\udfff"}})  # the probe's finding, always tried first
@example(fields={"perf_dump": {"\ud800": [float("nan"), float("inf"), 10**400]}})
@example(fields={"environment": _nested(MAX_JSON_DEPTH - 2, "\udfff", as_dict=True)})
def test_any_json_in_a_free_form_field_is_answered_and_shown(
    client: TestClient, alerted: str, fields: dict[str, Any]
) -> None:
    body = result_body(commit={"sha": "4739f2e"}, **fields)
    headers = {"Authorization": f"Bearer {alerted}", "Content-Type": "application/json"}
    answer = client.post("/api/v1/results", content=json.dumps(body), headers=headers)
    assert 200 <= answer.status_code < 500, answer.text
    if answer.status_code >= 400:
        return
    run_id = answer.json()["run_id"]
    [alert] = client.get("/api/v1/alerts").json()
    for url in (
        f"/api/v1/runs/{run_id}",
        f"/runs/{run_id}",
        *SHOWN,
        *(f"{at}/{alert['id']}" for at in ("/alerts", "/api/v1/alerts")),
    ):
        assert client.get(url).status_code == 200, url
