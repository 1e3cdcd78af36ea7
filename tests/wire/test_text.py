"""Text UTF-8 cannot encode (a lone UTF-16 surrogate) in any string or key of a body is refused,
naming where it is; a stored value is repaired on read; messages never carry one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from wire import (
    JobResultIn,
    ResultIn,
    RunnerIn,
    describe_errors,
    escape_unencodable,
    replace_unencodable,
    unencodable_text,
    validation_message,
)
from wire.limits import MAX_LABEL_VALUE, MAX_RUNNER_LABELS

LONE = "\udfff"  # what json.loads makes of the JSON text "\udfff"
RESULT = {
    "case": "qwen-image-t2i-1024",
    "hardware": "H200",
    "commit": {"sha": "669a9bd"},
    "step_times_ms": [263.0],
}


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"environment": {"gpu": LONE}}, "environment.gpu holds"),
        ({"perf_dump": {"a b": [1, {"x": f"ok {LONE}"}]}}, "perf_dump['a b'][1].x holds"),
        ({"environment": {f"k{LONE}": 1}}, "a key of environment holds"),
        ({"warnings": ["fine", "\ud800"]}, "warnings[1] holds"),
    ],
)
def test_the_first_unencodable_string_is_named_by_its_path(value: dict[str, Any], where: str) -> None:
    problem = unencodable_text(value)
    assert problem is not None
    assert str(problem).startswith(where)
    assert escape_unencodable(str(problem)) == str(problem)  # the message itself is sendable


def test_sound_text_passes_whatever_its_depth() -> None:
    value: Any = "😀 ünïcode"
    for _ in range(50_000):  # deeper than any recursion limit: the walk is iterative
        value = [value]
    assert unencodable_text(value) is None
    assert unencodable_text(json.loads('"\\ud83d\\ude00"')) is None  # a pair is one character


@pytest.mark.parametrize("field", ["environment", "perf_dump"])
def test_a_free_form_field_refuses_a_lone_surrogate_naming_it(field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        ResultIn.model_validate({**RESULT, field: {"nested": [{"deep": f"x{LONE}"}]}})
    message = validation_message(raised.value)
    assert message.startswith(f"{field}: {field}.nested[0].deep holds a lone UTF-16 surrogate (U+DFFF)")
    assert LONE not in message


def test_the_job_upload_and_the_runner_refuse_one_too() -> None:
    with pytest.raises(ValidationError, match="environment"):
        JobResultIn.model_validate({"attempt": 1, "step_times_ms": [1.0], "environment": {LONE: "x"}})
    with pytest.raises(ValidationError, match="labels"):
        RunnerIn.model_validate({"name": "r1", "hardware": "H200", "gpu_count": 1, "labels": {"k": LONE}})


@pytest.mark.parametrize(
    "labels",
    [
        {"rack": "x" * (MAX_LABEL_VALUE + 1)},
        {f"k{index}": "v" for index in range(MAX_RUNNER_LABELS + 1)},
        {"two words": "v"},
        {"rack": "a\nb"},
        {"rack": "a\u202eb"},  # a right-to-left override: a format character
    ],
)
def test_runner_labels_are_bounded_and_printable(labels: dict[str, str]) -> None:
    with pytest.raises(ValidationError) as raised:
        RunnerIn.model_validate({"name": "r1", "hardware": "H200", "gpu_count": 1, "labels": labels})
    assert validation_message(raised.value).startswith("labels")


def test_usual_runner_labels_are_kept() -> None:
    labels = {"rack": "a", "topology.kubernetes.io/zone": "eu-west-1a", "owner": "A. Dev <a.dev@example.org>"}
    runner = RunnerIn.model_validate({"name": "r1", "hardware": "H200", "gpu_count": 1, "labels": labels})
    assert runner.labels == labels


def test_messages_escape_a_surrogate_in_a_location() -> None:
    message = describe_errors([{"loc": ("body", "results", 0, f"k{LONE}"), "msg": f"bad {LONE}"}])
    assert message == "results[0].k\\udfff: bad \\udfff"


def test_replacing_keeps_sound_text_and_replaces_each_surrogate() -> None:
    value = {"gpu": LONE, f"{LONE}k": [f"a{LONE}b", "😀"], "n": 1.5}
    assert replace_unencodable(value) == {"gpu": "\ufffd", "\ufffdk": ["a\ufffdb", "😀"], "n": 1.5}


def test_nan_and_infinity_in_a_free_form_object_become_null() -> None:
    odd = {"x": float("nan"), "y": [float("inf"), 1.5], "z": {"w": float("-inf")}}
    upload = ResultIn.model_validate({**RESULT, "environment": odd, "perf_dump": odd})
    assert upload.environment == upload.perf_dump == {"x": None, "y": [None, 1.5], "z": {"w": None}}
    same = ResultIn.model_validate(
        {**RESULT, "environment": upload.environment, "perf_dump": upload.perf_dump}
    )
    assert upload.digest() == same.digest()
