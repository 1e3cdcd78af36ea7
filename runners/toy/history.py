"""The toy repository's scripted history: which sources each commit writes, and what it should do.

Every commit is a directory under ``source/``: ``01-initial`` holds the whole first tree, each later
directory holds the full new text of the files that commit changes. Directory names sort in
history order (the numbers are labels, not positions: ``07`` is unused since the custom-op fix
moved after incident 2). The two fixes exist twice, as their own commit on a pull-request branch
opened right after the regression, and later on ``main``, written from the same directory so that
both carry the same patch (``git patch-id --stable`` agrees).

Both fixes land on ``main`` only after both regressions: the commit before the first of them
(``11-digest-log-line``) holds incident 1 and incident 2 at once, so a pull-request comparison
based there sees #101 improve both cases and #102 the offload case, alone or stacked.

Effects were measured on a 2-core CPU with torch 2.13.0 (``python -m benchmarks.toy_noise``, which
also measures the A/A noise; ``benchmarks/toy_incidents.py`` for every commit); the numbers in
``effect`` are what to expect there, not limits. Step times are the thread's CPU time per
denoising step (see the toy's ``pipeline.py``).

Every ``main`` commit that came from a pull request says so as a squash merge does, ``Title (#N)``
(``tracker.vcs.pulls`` reads it): the culprits of both incidents are #87 and #94, so the tracker
tells their pull requests. Documentation commits, the first commit and the release were pushed
directly and name none.

The last commit (#103, token merging) is faster and changes the seeded picture beyond the 40 dB
tolerance (``changes_output``): a speed-up the output check, not the step time, must question.
``benchmarks/toy_output_change.py`` measures its step time (A B A B) and PSNR/SSIM.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "source"

# The flags under which incident 2 shows: it only happens when the warmup compiles with the
# offload hooks installed.
OFFLOAD_FLAGS = ("enable-torch-compile", "warmup", "offload-during-compile")
COMPILE_FLAGS = ("enable-torch-compile",)


class ChangeKind(StrEnum):
    """What a commit does to the measured denoising step time."""

    BASELINE = "baseline"
    NEUTRAL = "neutral"
    REGRESSION = "regression"
    FIX = "fix"
    SPEEDUP = "speedup"


@dataclass(frozen=True)
class Author:
    """Author and committer of a commit."""

    name: str
    email: str


MIRA = Author("Mira Castell", "mira@toydit.invalid")
JONAS = Author("Jonas Weber", "jonas@toydit.invalid")
PRIYA = Author("Priya Raman", "priya@toydit.invalid")


@dataclass(frozen=True)
class Step:
    """One commit of the script.

    ``source`` names the directory under ``source/`` with the files the commit writes;
    ``needs_flags`` are the case flags without which the effect does not show; ``small_with`` the
    case flags with which it shows only a little, near or under a 2 % threshold (measured
    -2 to -5 % with 50 steps, +1 to -1 % with 400, on 2-core machines): there an alert for it is
    right, and no alert is not a miss.
    """

    source: str
    title: str
    body: str
    kind: ChangeKind
    effect: str
    author: Author
    incident: int | None = None
    needs_flags: tuple[str, ...] = ()
    small_with: tuple[str, ...] = ()
    changes_output: bool = False  # the seeded picture changes beyond the 40 dB PSNR tolerance


@dataclass(frozen=True)
class PullRequestSpec:
    """A pull request left open on its own branch: it forks from ``main`` after ``fork_after``."""

    number: int
    branch: str
    fork_after: str  # source of the main step it branches off
    step: Step  # its single commit
    lands_as: str  # source of the main step that later applies the same patch
    fixes: str | None = None  # source of the regression it fixes (None: a change of its own)


MAIN: tuple[Step, ...] = (
    Step(
        "01-initial",
        "Toy DiT text-to-image pipeline",
        "A seeded single-stream DiT (adaLN, rotary attention), a flow-matching Euler\n"
        "scheduler and a stand-in VAE, run as sglang's pipeline stages with sglang's\n"
        "log lines and --perf-dump-path JSON. --enable-torch-compile compiles the DiT.",
        ChangeKind.BASELINE,
        "the reference point",
        MIRA,
    ),
    Step(
        "02-document-flags",
        "README: document the generate flags",
        "List every flag `python -m toydit generate` takes and the environment it reads.",
        ChangeKind.NEUTRAL,
        "none: documentation only",
        PRIYA,
    ),
    Step(
        "03-sampling-params-on-request",
        "Move the sampling-params block onto Request (#84)",
        "Request.sampling_params() names the fields sglang prints before a request;\n"
        "generate only formats them. The log output is unchanged.",
        ChangeKind.NEUTRAL,
        "none: refactor, same output",
        JONAS,
    ),
    Step(
        "04-fused-layernorm",
        "Use a fused LayerNorm kernel in the DiT blocks (#87)",
        "ATen's native LayerNorm normalises in one pass instead of the mean,\n"
        "variance and scaling ops F.layer_norm is traced into. The kernel is opaque,\n"
        "so keep torch.compile out of it with torch._dynamo.disable.",
        ChangeKind.REGRESSION,
        "denoise step about +65-85 % with torch.compile, in both cases: every call of the disabled "
        "kernel is a graph break; the one inside the block loop makes Dynamo skip the DiT's forward "
        "(graph_breaks > 0, several small graphs instead of one)",
        JONAS,
        incident=1,
        needs_flags=COMPILE_FLAGS,
    ),
    Step(
        "05-scheduler-tensor-sigmas",
        "Scheduler: compute the sigma schedule with tensor ops (#89)",
        "Same shifted schedule, computed in float64 and stored as float32.",
        ChangeKind.NEUTRAL,
        "none: runs once per request, outside the denoising loop",
        PRIYA,
    ),
    Step(
        "06-log-compile-setup",
        "Log the torch.compile setup (#90)",
        "Say which backend compiles the transformer, so that a log shows how it ran.",
        ChangeKind.NEUTRAL,
        "none: one log line at start-up",
        MIRA,
    ),
    Step(
        "08-batch-cfg",
        "Run both CFG branches through the DiT as one batch (#91)",
        "Classifier-free guidance ran the DiT twice per step, for the prompt and for\n"
        "the negative prompt. Concatenate them into a batch of two: one forward.",
        ChangeKind.SPEEDUP,
        "denoise step about -30-35 % whenever guidance is on (guidance scale > 1), in both cases",
        PRIYA,
    ),
    Step(
        "09-document-perf-dump",
        "README: document the perf dump and the Dynamo counters",
        "What --perf-dump-path writes, and what each compile counter means.",
        ChangeKind.NEUTRAL,
        "none: documentation only",
        MIRA,
    ),
    Step(
        "10-offload-during-compile",
        "Offload DiT layers while the compile warmup runs (#94)",
        "With --offload-during-compile the warmup request runs with the layerwise\n"
        "offload hooks installed, so compilation does not hold the weights and its\n"
        "own memory at once; the hooks are removed once the warmup is done.",
        ChangeKind.REGRESSION,
        "denoise step about +20 % with --offload-during-compile (none without), on top of incident "
        "1: the hooks (one per weight layer, under torch.compiler.disable) break the graph inside "
        "the block loop and inside every block during the warmup; Dynamo marks the DiT's forward "
        "SKIP and, not guarding on module hooks, keeps running each block as graphs split at every "
        "hooked layer after the hooks are gone (frames_skipped = 1, measured_request.frames_compiled "
        "= 0). On its own (after #101) it costs about +60 %",
        MIRA,
        incident=2,
        needs_flags=OFFLOAD_FLAGS,
    ),
    Step(
        "11-digest-log-line",
        "Log seed and size with the output digest (#96)",
        "Makes two logs' digests comparable at a glance.",
        ChangeKind.NEUTRAL,
        "none: one log line",
        PRIYA,
    ),
    Step(
        "12-custom-op-layernorm",
        "Register the fused LayerNorm as a torch.library custom op (#101)",
        "torch._dynamo.disable made every call a graph break. As a custom op with a\n"
        "fake implementation the kernel stays inside the compiled graph as one\n"
        "opaque call.",
        ChangeKind.FIX,
        "denoise step about -25-30 % in the compile case, graph_breaks back to 0 (on the H200 the "
        "custom op was 1.9 % faster than before the regression); only +1 to -5 % in the offload "
        "case while incident 2 is there, where its break is one of four in every block",
        JONAS,
        incident=1,
        needs_flags=COMPILE_FLAGS,
        small_with=OFFLOAD_FLAGS,
    ),
    Step(
        "13-dynamo-reset",
        "Reset Dynamo after removing the offload hooks (#102)",
        "Code compiled while the hooks were installed keeps the DiT's forward skipped.\n"
        "torch._dynamo.reset() right after the hooks are removed makes the next call\n"
        "compile the DiT again, as one graph. Harmless where no hooks were installed.",
        ChangeKind.FIX,
        "denoise step about -35 % in the offload case, to the compile case's level: the first "
        "measured step recompiles the whole DiT (measured_request.frames_compiled = 1)",
        JONAS,
        incident=2,
        needs_flags=OFFLOAD_FLAGS,
    ),
    Step(
        "14-release-0.2.0",
        "Release 0.2.0",
        "Bump the version. The command line follows sglang 0.5.18: --warmup gives\n"
        "way to --warmup-mode {off,request,server}, and paths and timings are printed\n"
        "in colour, as sglang prints them.",
        ChangeKind.NEUTRAL,
        "none",
        MIRA,
    ),
    Step(
        "15-merge-image-tokens",
        "Merge adjacent image tokens in the DiT blocks (#103)",
        "Token merging: average horizontally adjacent image tokens in pairs before the\n"
        "blocks and copy each pair's output back to both after them. Every block\n"
        "projects a quarter fewer tokens; neighbouring latent cells are much alike.",
        ChangeKind.SPEEDUP,
        "denoise step about -11-14 % in both cases (2-core CPU, 6 interleaved A B rounds: -14.3 % "
        "compile, -11.4 % offload, medians), and the picture changes beyond the tolerance: PSNR "
        "27.1 dB, SSIM 0.913 against the commit before (python benchmarks/toy_output_change.py)",
        PRIYA,
        changes_output=True,
    ),
)

_BY_SOURCE = {step.source: step for step in MAIN}


def _pull_request_step(source: str) -> Step:
    """The pull request's own commit: the main step's patch, with its title before the merge."""
    landed = _BY_SOURCE[source]
    title = landed.title.rsplit(" (#", 1)[0]
    return Step(
        landed.source,
        title,
        landed.body,
        landed.kind,
        landed.effect,
        landed.author,
        landed.incident,
        landed.needs_flags,
        landed.small_with,
        landed.changes_output,
    )


PULL_REQUESTS: tuple[PullRequestSpec, ...] = (
    PullRequestSpec(
        number=101,
        branch="pr/101-custom-op-layernorm",
        fork_after="04-fused-layernorm",
        step=_pull_request_step("12-custom-op-layernorm"),
        fixes="04-fused-layernorm",
        lands_as="12-custom-op-layernorm",
    ),
    PullRequestSpec(
        number=102,
        branch="pr/102-dynamo-reset",
        fork_after="10-offload-during-compile",
        step=_pull_request_step("13-dynamo-reset"),
        fixes="10-offload-during-compile",
        lands_as="13-dynamo-reset",
    ),
    # Faster, and the picture changes: the output check (not the step time) must catch it.
    PullRequestSpec(
        number=103,
        branch="pr/103-merge-image-tokens",
        fork_after="14-release-0.2.0",
        step=_pull_request_step("15-merge-image-tokens"),
        lands_as="15-merge-image-tokens",
    ),
)


def step_files(step: Step) -> dict[str, bytes]:
    """The files a step writes, keyed by their path in the repository (``/``-separated)."""
    root = SOURCE / step.source
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    if not files:
        raise FileNotFoundError(f"toy source directory {root} holds no files")
    return files
