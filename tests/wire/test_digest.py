"""An upload's digest (its idempotency check), in versions: digests stored before the versions were
named still match their retries, a field added later never changes an older version's digest, and a
value an older version does not know has no digest in it."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

import wire
from wire import DIGEST_VERSION, JobResultIn, OutputIn, ResultIn, Since, digest_version
from wire.digests import field_version, upload_digest
from wire.files import FileIn

# A 1x1 PNG, written out: no encoder between the test and the digest.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC"
OUTPUT = {"digest": "sha256:" + "ab" * 32, "width": 1, "height": 1, "frames": [{"png_base64": PNG}]}
TRACE = {"name": "trace.json.gz", "content_base64": "H4sgdHJhY2U="}

# Digests of the uploads below as the code before versions (wire/results.py's _ADDED_LATER) stored
# them: unprefixed hex, output and files left out while at their default.
STORED_BEFORE_VERSIONS = {
    "bare": "2410c04797513057f288d917d0695bf9d44db1012bfdf60b4a49e9572d7bfd58",
    "output": "750375f0c7b4827aa9f3fd690e37178102696ad3068d1de5296b51520790e611",
    "files": "43e09a4545bd70bf982583baf97b05b8cf44165e71fe421b8d8f14bf4b2bbcbd",
}
# The same uploads in version 2. A change here means every retry of a stored upload is refused:
# a field added without a default or without its Since marker (see wire.digests).
VERSION_2 = {
    "bare": "v2:kntIeNtS8tBA-9UKkbuCtnmFCcKEL26CUIGqi-DnRfQ",
    "output": "v2:jQdcQKfbZyPzTgnqfASZSVQKopgMxhOfZQRx3zJhUDE",
    "files": "v2:TzMoPPe3Wush99F-gLVpHE6AdvzuNKMWpJee1jvTl8c",
}


def upload(name: str, **changes: Any) -> JobResultIn:
    body: dict[str, Any] = {
        "attempt": 2,
        "step_times_ms": [30.0, 30.5],
        "denoise_step_count": 2,
        "e2e_ms": 812.5,
        "stages": [{"name": "denoise", "duration_ms": 61.0}],
        "warnings": ["slow disk"],
        "environment": {"torch": "2.5.1"},
        "command": "sglang generate",
        "raw_log": "step 0 30.0\nstep 1 30.5\n",
        "measured_at": "2026-11-30T12:00:00+00:00",
    }
    if name == "output":
        body["output"] = OUTPUT
    if name == "files":
        body["files"] = [TRACE]
    return JobResultIn.model_validate({**body, **changes})


@pytest.mark.parametrize("name", sorted(STORED_BEFORE_VERSIONS))
def test_a_digest_stored_before_versions_matches_its_retry(name: str) -> None:
    stored = STORED_BEFORE_VERSIONS[name]
    assert digest_version(stored) == 1
    assert upload(name).digest(1) == stored
    assert upload(name).matches_digest(stored)


@pytest.mark.parametrize("name", sorted(VERSION_2))
def test_new_digests_are_in_the_current_version(name: str) -> None:
    assert DIGEST_VERSION == 2
    assert upload(name).digest() == VERSION_2[name]
    assert len(VERSION_2[name]) <= 64  # runs.payload_digest
    assert digest_version(VERSION_2[name]) == 2
    assert upload(name).matches_digest(VERSION_2[name])


@pytest.mark.parametrize(
    ("name", "stored"), [*STORED_BEFORE_VERSIONS.items(), *VERSION_2.items()], ids=lambda value: value[:8]
)
def test_a_changed_field_never_matches(name: str, stored: str) -> None:
    assert not upload(name, e2e_ms=812.6).matches_digest(stored)
    assert not upload(name, stages=[]).matches_digest(stored)


def test_a_value_of_a_later_field_never_matches_an_upload_without_it() -> None:
    for later in ("output", "files"):
        assert not upload(later).matches_digest(STORED_BEFORE_VERSIONS["bare"])
        assert not upload(later).matches_digest(VERSION_2["bare"])
        assert not upload("bare").matches_digest(STORED_BEFORE_VERSIONS[later])


def test_the_idempotency_key_is_not_digested() -> None:
    base = {
        "case": "flux-dev",
        "hardware": "h200",
        "commit": {"sha": "a" * 40},
        "step_times_ms": [30.0, 30.5],
    }
    keyed = ResultIn.model_validate({**base, "idempotency_key": "retry-0001"})
    assert keyed.digest() == ResultIn.model_validate(base).digest()
    # As the code before versions computed it; also the key of the upload without a key.
    assert keyed.digest(1) == "6f978269b4d0bde164d83ceffc1927a9e0756f1fe6a2eb36b652ca126cc30373"


def test_a_stored_text_names_its_version() -> None:
    assert digest_version("ab" * 32) == 1
    assert digest_version("v7:" + "A" * 43) == 7
    for text in (
        "AB" * 32,
        "ab" * 31,
        "v1:" + "A" * 43,
        "v0:" + "A" * 43,
        "v2:" + "A" * 42,
        "v2:" + "+" * 43,
        "",
    ):
        assert digest_version(text) is None
        assert not upload("bare").matches_digest(text)
    # Stored by a newer tracker (a version this one does not know): never taken for a retry.
    assert not upload("bare").matches_digest("v3:" + "A" * 43)


class _CountersBefore(BaseModel):
    frames: int = 0


class _Before(BaseModel):
    """An upload as it was in version 2."""

    steps: list[float]
    counters: list[_CountersBefore] = []


class _Counters(BaseModel):
    frames: int = 0
    fused: Annotated[int, Since(3)] = 0


class _Later(BaseModel):
    """The same upload two versions on: a field of version 3, a nested one of version 3, one of 4."""

    steps: list[float]
    counters: list[_Counters] = []
    note: Annotated[str, Since(3)] = ""
    flags: Annotated[list[str] | None, Since(4)] = None


def test_fields_added_later_leave_the_earlier_forms_as_they_were() -> None:
    before = _Before(steps=[1.0], counters=[_CountersBefore(frames=2)])
    later = _Later(steps=[1.0], counters=[_Counters(frames=2)])
    for version in (1, 2):
        assert upload_digest(later, version) == upload_digest(before, version) is not None


def test_a_later_field_with_a_value_has_no_form_before_it_came() -> None:
    plain = _Later(steps=[1.0])
    noted = _Later(steps=[1.0], note="warm cache")
    fused = _Later(steps=[1.0], counters=[_Counters(frames=2, fused=1)])
    flagged = _Later(steps=[1.0], flags=[])  # not at its default (None)
    for record in (noted, fused, flagged):
        assert upload_digest(record, 2) is None
        # Version 1 keeps a later field that holds a value: never the digest of one without it.
        assert upload_digest(record, 1) not in {None, upload_digest(plain, 1)}
    # Versions 3 and 4 are past this build's DIGEST_VERSION: no digest in them.
    assert upload_digest(plain, 3) is None


def _wire_models() -> list[type[BaseModel]]:
    for module in pkgutil.iter_modules(wire.__path__):
        importlib.import_module(f"wire.{module.name}")
    found: list[type[BaseModel]] = []
    pending: list[type[BaseModel]] = [BaseModel]
    while pending:
        for model in pending.pop().__subclasses__():
            pending.append(model)
            if model.__module__.startswith("wire."):
                found.append(model)
    return found


def test_every_marked_field_is_of_a_known_version_and_has_a_default() -> None:
    marked = {}
    for model in _wire_models():
        for name, info in model.model_fields.items():
            version = field_version(info)
            assert version <= DIGEST_VERSION, (
                f"{model.__name__}.{name}: Since({version}), raise DIGEST_VERSION"
            )
            if version > 1:
                assert not info.is_required(), f"{model.__name__}.{name}: a field added later needs a default"
                marked[f"{model.__name__}.{name}"] = version
    assert marked["MeasurementIn.output"] == 2
    assert marked["JobResultIn.files"] == 2


def test_since_refuses_the_first_version() -> None:
    with pytest.raises(ValueError, match="Since"):
        Since(1)


def test_files_build_as_the_trace_above() -> None:
    assert FileIn.model_validate(TRACE).content() == b"\x1f\x8b trace"
    assert OutputIn.model_validate(OUTPUT).frames[0].png().startswith(b"\x89PNG")
