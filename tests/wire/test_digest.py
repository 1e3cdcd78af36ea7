"""An upload's digest (its idempotency check) survives fields added after uploads were stored."""

from __future__ import annotations

import base64
import hashlib
import io
import json

from PIL import Image

from wire import JobResultIn, OutputIn

OLD_FIELDS = {"output", "files"}  # added by issue 17: not in the digest of any upload stored before


def digest_before_the_new_fields(result: JobResultIn) -> str:
    """The digest as it was computed before ``output`` and ``files`` existed."""
    payload = result.model_dump(mode="json", exclude={"idempotency_key", *OLD_FIELDS})
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 20, 30)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_result_without_the_new_fields_keeps_its_old_digest() -> None:
    result = JobResultIn(attempt=1, step_times_ms=[30.0, 30.5])
    assert result.digest() == digest_before_the_new_fields(result)


def test_an_output_is_part_of_the_digest() -> None:
    bare = JobResultIn(attempt=1, step_times_ms=[30.0, 30.5])
    output = OutputIn(digest="sha256:" + "a" * 64, width=8, height=8, frames=[{"png_base64": png()}])
    with_output = JobResultIn(attempt=1, step_times_ms=[30.0, 30.5], output=output)
    assert with_output.digest() != bare.digest()
