"""The lines ``sglang generate`` and ``sglang serve`` print that the log parser reads, as regular expressions.

Wording follows sglang's multimodal_gen runtime, checked against 0.5.10, 0.5.14, 0.5.16, 0.5.17
and 0.5.23 (paths below are under ``sglang/multimodal_gen/``). sglang colours some values
(``{GREEN}%.2f{RESET}``); the text is cleaned of those codes before any pattern here sees it.
Numbers are matched loosely (see ``NUMBER``) and validated by the caller, so that "nan" or
"-1.0" produce a warning instead of passing unseen.
"""

from __future__ import annotations

import re

from runners.parsing._logtext import NUMBER

STAGE = r"\[(?P<stage>[A-Za-z_][\w.]*)\]"
# StageProfiler: "[%s] started...", "[%s] finished in %.4f seconds".
STARTED = re.compile(rf"{STAGE} started\.\.\.")
FINISHED = re.compile(rf"{STAGE} finished in (?P<v>{NUMBER}) seconds")
AVERAGE = re.compile(rf"{STAGE} average time per step: (?P<v>{NUMBER}) seconds")
# sglang prints "[%s] Error during execution after %.4f ms: %s"; accept seconds too.
STAGE_ERROR = re.compile(
    rf"{STAGE} Error during execution after (?P<v>{NUMBER}) ?(?P<unit>ms|s|seconds)\b:?\s*(?P<msg>.*)"
)
# Per request, after the last stage; "GB" is GiB (gpu_worker.do_mem_analysis, up to 0.5.17;
# at DEBUG level in the published wheels).
PEAK = re.compile(rf"Peak GPU memory: (?P<v>{NUMBER}) ?GB")
# Per served request, after its response is ready; "MB" is MiB, the same peak reserved memory
# (runtime/entrypoints/openai/utils.py, process_generation_batch: "Peak memory usage: %.2f MB").
PEAK_USAGE = re.compile(rf"Peak memory usage: (?P<v>{NUMBER}) ?MB")
# Run summary over the real (non-warmup) requests; "MB" is MiB
# (runtime/entrypoints/diffusion_generator.py, _log_summary).
MAX_PEAK = re.compile(rf"Memory usage - Max peak: (?P<v>{NUMBER}) ?MB")
# Client-side, per prompt: for the first prompt of a warmed-up run this includes the warmup
# (runtime/utils/logging_utils.py, log_generation_timer).
PIXEL = re.compile(rf"Pixel data generated successfully in (?P<v>{NUMBER}) seconds")
BATCH = re.compile(rf"Completed batch processing\. Generated (?P<n>\d+) outputs? in (?P<v>{NUMBER}) seconds")
# Run summary whenever warmup is not off: the first real request's own time, warmup excluded
# (runtime/entrypoints/diffusion_generator.py, _log_summary).
WARMED_UP = re.compile(rf"Warmed-up request processed in (?P<v>{NUMBER}) seconds")
# Scheduler warmup logging. Up to 0.5.10: "Processing warmup req..." and "Warmup req processed
# in"; since 0.5.14 a tqdm bar "Warmup requests" (its "k/N" as log lines when CI=true), the
# warmup itself silent (runtime/server_warmup.py; stages/base.py hides a warmup's stage lines).
WARMUP_START = re.compile(r"Processing warmup req\b")
WARMUP_DONE = re.compile(rf"Warmup req(?: \(\d+/\d+\))? processed in (?P<v>{NUMBER}) seconds")
# 0.5.23: "%s processing failed: %s" with "warmup req (1024x1024, 1 step)" as the first %s.
WARMUP_FAILED = re.compile(r"(?i)\bwarmup req\b.*processing failed:?\s*(?P<msg>.*)")
WARMUP_COUNT = re.compile(r"Warmup requests: (?P<k>\d+)/(?P<n>\d+)\b")
SERVER_READY = re.compile(r"The server is fired up and ready to roll")
# Lines that begin a request.
REQUEST_START = re.compile(r"Processing prompt \d+/\d+|Sampling params:|Running pipeline stages:")
# gpu_worker and DiffGenerator error lines for a request that raised.
REQUEST_ERROR = re.compile(
    r"(?:Error executing request \S+|Failed to generate output for prompt(?: \d+)?):?\s*(?P<msg>.*)"
)
OOM = re.compile(r"(?P<device>CUDA|NPU|HIP|XPU|MPS) out of memory|OutOfMemoryError")
OOM_SIZE = re.compile(r"Tried to allocate (?P<size>\d+(?:\.\d+)? ?[KMGT]i?B)")
# "Sampling params:" block entry.
INFER_STEPS = re.compile(r"^\s*(?:infer_steps|num_inference_steps)\s*[:=]\s*(?P<n>\d+)\s*,?\s*$")
# --warmup on a command line, or warmup=True / "warmup": true in a server-args dump (not
# --warmup-steps etc.); sglang up to 0.5.17.
WARMUP_FLAG = re.compile(r"--warmup(?![\w-])(?!=(?:false|False|0)\b)|\bwarmup(?:=|': |\": )(?:True|true)\b")
# --warmup-mode {off,request,server} (0.5.14 on; the only warmup option since 0.5.18), on a
# command line or as "warmup_mode": "request" in the "server_args: {...}" JSON line
# (runtime/server_args/server_args.py logs it with json.dumps); a repr shows warmup_mode='request'.
WARMUP_MODE = re.compile(
    r"--warmup-mode(?:=|\s+)[\"']?(?P<flag>[A-Za-z]+)"
    r"|\bwarmup_mode(?:\"|')?\s*[:=]\s*[\"']?(?P<dump>[A-Za-z]+)"
)
# A new run pasted after another: the command line that started it.
COMMAND_LINE = re.compile(r"(?:^|[\s$#>])sglang\s+generate(?:\s|$)")
# Lines that say the run died, whatever else the log shows.
SCHEDULER_DEAD = re.compile(
    r"\b(?:Rank \d+ )?scheduler (?:process )?is dead\b|\bScheduler (?:process )?died\b", re.I
)
EXIT_CODE = re.compile(
    r"\b(?:Exit code|exited with (?:exit )?code|exit status)[:=]?\s*(?P<code>-?\d+)\b", re.I
)
KILLED = re.compile(r"\bkilled by signal (?P<signal>\d+|SIG[A-Z]+)\b", re.I)
NCCL = re.compile(
    r"\bNCCL error\b|\bnccl(?:System|Internal|UnhandledCuda|InvalidUsage|InvalidArgument|Remote)Error\b"
    r"|Watchdog caught collective operation timeout|\bProcessGroupNCCL\b.*\btime(?:d )?out\b",
    re.I,
)
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):")
# The line that ends a traceback: "ValueError: msg", "torch.OutOfMemoryError: ...", "KeyboardInterrupt".
EXCEPTION = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?::\s*(?P<msg>.*))?$")
