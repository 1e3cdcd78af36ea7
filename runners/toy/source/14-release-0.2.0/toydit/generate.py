"""``generate``: set up the pipeline, run the optional warmup and the request, report like sglang."""

from __future__ import annotations

import gc
import os
import sys
import time
import traceback

import torch

from . import compile_stats
from .log import CYAN, GREEN, RESET, get_logger
from .offload import disable_offload, enable_offload
from .perf_dump import write_perf_dump
from .pipeline import Pipeline, RequestOutput
from .request import Request, ServerArgs
from .save import OutputOptions, save_output

# Intra-op threads. One by default: the toy shares a small machine with the tracker and the
# runner, and a single thread keeps step times steady when another process wakes up.
NUM_THREADS = int(os.environ.get("TOYDIT_NUM_THREADS", "1"))
# The torch.compile backend. Dynamo traces, breaks graphs and counts the same with any backend;
# tests pick "aot_eager" to skip the C++ compiler.
COMPILE_BACKEND = os.environ.get("TOYDIT_COMPILE_BACKEND", "inductor")


def log_sampling_params(request: Request) -> None:
    """The "Sampling params:" block sglang prints before a request."""
    lines = [f"{name:>29}: {value}" for name, value in request.sampling_params().items()]
    get_logger().info("Sampling params:\n%s", "\n".join(lines))


def peak_rss_mb() -> float | None:
    """Peak resident memory of this process in MiB, where the platform reports it."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return round(peak / (1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0), 1)


def generate(request: Request, server_args: ServerArgs, output_options: OutputOptions | None = None) -> int:
    """Generate one image; returns the exit code."""
    logger = get_logger()
    torch.set_num_threads(NUM_THREADS)
    logger.info("Loading required modules: ['text_encoder', 'tokenizer', 'vae', 'transformer', 'scheduler']")
    pipeline = Pipeline(server_args.model_path)
    if server_args.dit_layerwise_offload:
        enable_offload(pipeline.transformer.blocks)
    if server_args.enable_torch_compile:
        pipeline.compile(COMPILE_BACKEND)
    logger.info("Pipeline instantiated")
    if server_args.num_gpus != 1:
        logger.info("toydit runs on the CPU; --num-gpus %d is ignored", server_args.num_gpus)
    logger.info(
        "Worker 0: Initialized device, model, and distributed environment. (cpu, torch %s, %d thread%s)",
        torch.__version__,
        NUM_THREADS,
        "" if NUM_THREADS == 1 else "s",
    )
    logger.info("Processing prompt 1/1: %s", request.prompt[:100])
    client_start = time.perf_counter()
    try:
        with torch.inference_mode():
            if server_args.warmup:
                logger.info("Processing warmup req...")
                warmup_start = time.perf_counter()
                # Compiling needs memory for compiled code and activations at once: keep the DiT's
                # weights offloaded while the warmup compiles them, resident again for serving.
                offload = server_args.offload_during_compile and not server_args.dit_layerwise_offload
                if offload:
                    enable_offload(pipeline.transformer.blocks)
                pipeline.run(request.with_steps(1))
                if offload:
                    disable_offload(pipeline.transformer.blocks)
                logger.info("Warmup req processed in %.2f seconds", time.perf_counter() - warmup_start)
            # As sglang's server does after its warmup: what exists now lives as long as the process,
            # so move it out of the cyclic collector's way; no full collection pauses a measured step.
            gc.freeze()
            before = compile_stats.snapshot()
            log_sampling_params(request)
            output = pipeline.run(request)
            counters = compile_stats.snapshot()
    except Exception as error:
        traceback.print_exc()
        logger.error("Failed to generate output for prompt 1: %s", error)
        return 1
    save_output(output.pixels, request, output_options or OutputOptions())
    report(output, server_args, request, counters, counters.since(before), time.perf_counter() - client_start)
    return 0


def report(
    output: RequestOutput,
    server_args: ServerArgs,
    request: Request,
    counters: compile_stats.DynamoCounters,
    measured: compile_stats.DynamoCounters,
    client_seconds: float,
) -> None:
    """The lines sglang prints after a request, the perf dump, and the compile counters."""
    logger = get_logger()
    if server_args.perf_dump_path:
        meta: dict[str, object] = {
            "model_path": server_args.model_path,
            "device": "cpu",
            "torch_version": torch.__version__,
            "num_threads": NUM_THREADS,
            "torch_compile": server_args.enable_torch_compile,
            "compile_backend": COMPILE_BACKEND if server_args.enable_torch_compile else None,
            "warmup": server_args.warmup,
            "width": request.width,
            "height": request.height,
            "num_frames": request.num_frames,
            "num_inference_steps": request.num_inference_steps,
            "guidance_scale": request.guidance_scale,
            "seed": request.seed,
            "output_digest": output.digest,
            "peak_rss_mb": peak_rss_mb(),
        }
        write_perf_dump(server_args.perf_dump_path, output.timings, counters, measured, meta)
        logger.info(f"Metrics dumped to: {CYAN}%s{RESET}", server_args.perf_dump_path)
    logger.info(
        "Output digest: sha256:%s (seed %d, %dx%d, %d frame%s)",
        output.digest,
        request.seed,
        request.width,
        request.height,
        request.num_frames,
        "" if request.num_frames == 1 else "s",
    )
    # sglang prints these three with 2 decimals; a toy request lasts a tenth of a second, so it
    # prints 4, or the log would disagree with the perf dump by more than rounding should.
    logger.info(f"Pixel data generated successfully in {GREEN}%.4f{RESET} seconds", client_seconds)
    logger.info("Completed batch processing. Generated 1 outputs in %.4f seconds", client_seconds)
    if server_args.warmup:
        logger.info(
            f"Warmed-up request processed in {GREEN}%.4f{RESET} seconds (with warmup excluded)",
            output.timings.total_duration_ms / 1000.0,
        )
    logger.info("Dynamo counters: %s", counters.summary())
    sys.stdout.flush()
