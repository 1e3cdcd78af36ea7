"""The lines ``sglang generate`` prints that the log parser reads, as regular expressions.

Wording follows sglang's multimodal_gen runtime (StageProfiler, the scheduler's warmup logging,
DiffGenerator's summary lines). Numbers are matched loosely (see ``NUMBER``) and validated by
the caller, so that "nan" or "-1.0" produce a warning instead of passing unseen.
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
# Per request, after the last stage; "GB" is GiB.
PEAK = re.compile(rf"Peak GPU memory: (?P<v>{NUMBER}) ?GB")
# Run summary over the real (non-warmup) requests; "MB" is MiB.
MAX_PEAK = re.compile(rf"Memory usage - Max peak: (?P<v>{NUMBER}) ?MB")
# Client-side, per prompt: for the first prompt of a --warmup run this includes the warmup.
PIXEL = re.compile(rf"Pixel data generated successfully in (?P<v>{NUMBER}) seconds")
BATCH = re.compile(rf"Completed batch processing\. Generated (?P<n>\d+) outputs? in (?P<v>{NUMBER}) seconds")
# Run summary with --warmup: the first real request's own time, warmup excluded.
WARMED_UP = re.compile(rf"Warmed-up request processed in (?P<v>{NUMBER}) seconds")
# Scheduler warmup logging; newer versions show a "Warmup requests" bar (or k/N lines in CI).
WARMUP_START = re.compile(r"Processing warmup req\b")
WARMUP_DONE = re.compile(rf"Warmup req(?: \(\d+/\d+\))? processed in (?P<v>{NUMBER}) seconds")
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
# --warmup on a command line, or warmup=True in a server-args dump (not --warmup-steps etc.).
WARMUP_FLAG = re.compile(r"--warmup(?![\w-])(?!=(?:false|False|0)\b)|\bwarmup(?:=|': |\": )True\b")
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
