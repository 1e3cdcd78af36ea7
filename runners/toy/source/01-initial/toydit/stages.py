"""Stage timing and logging in the words of sglang's StageProfiler."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from .log import get_logger
from .perf_dump import RequestTimings

# (name in "Running pipeline stages: [...]", class name in the stage's own lines)
STAGES = (
    ("input_validation_stage", "InputValidationStage"),
    ("prompt_encoding_stage_primary", "TextEncodingStage"),
    ("conditioning_stage", "ConditioningStage"),
    ("timestep_preparation_stage", "TimestepPreparationStage"),
    ("latent_preparation_stage", "LatentPreparationStage"),
    ("denoising_stage", "DenoisingStage"),
    ("decoding_stage", "DecodingStage"),
)


@contextmanager
def stage(name: str, timings: RequestTimings) -> Iterator[None]:
    """Log ``[name] started...``, time the block, log ``finished in`` (or the error) and record the time."""
    logger = get_logger()
    logger.info("[%s] started...", name)
    start = time.perf_counter()
    try:
        yield
    except Exception as error:
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        logger.error("[%s] Error during execution after %.4f ms: %s", name, elapsed_ms, error)
        raise
    elapsed = time.perf_counter() - start
    timings.stages.append((name, elapsed * 1000.0))
    logger.info("[%s] finished in %.4f seconds", name, elapsed)
