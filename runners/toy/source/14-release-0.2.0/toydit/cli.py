"""The command line: ``python -m toydit generate`` takes the flags ``sglang generate`` takes."""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Sequence

from .request import Request, ServerArgs


def _boolean(text: str) -> bool:
    """Read ``true``/``false`` the way sglang's boolean server args accept them."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; unknown or abbreviated flags are errors."""
    parser = argparse.ArgumentParser(prog="python -m toydit", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="{generate}")
    generate = commands.add_parser(
        "generate", help="generate one image, like `sglang generate`", allow_abbrev=False
    )
    generate.add_argument("--model-path", default="toydit/ToyDiT-T2I")
    generate.add_argument("--prompt", required=True)
    generate.add_argument("--negative-prompt", default=" ")
    generate.add_argument("--width", type=int, default=256)
    generate.add_argument("--height", type=int, default=256)
    generate.add_argument("--num-frames", type=int, default=1)
    generate.add_argument("--num-inference-steps", type=int, default=20)
    generate.add_argument("--guidance-scale", type=float, default=4.0)
    generate.add_argument("--seed", type=int, default=42)
    generate.add_argument("--num-gpus", type=int, default=1)
    generate.add_argument("--enable-torch-compile", action="store_true")
    # As sglang 0.5.18 did: --warmup gave way to one mode. Only "request" warms up here; "server" is
    # the HTTP server's own warmup, which `generate` never runs (sglang's default with compile on).
    generate.add_argument(
        "--warmup-mode",
        choices=("off", "request", "server"),
        default=None,
        help="off; request: a one-step warmup copy of the request first; server: the server's warmup",
    )
    generate.add_argument(
        "--offload-during-compile",
        action="store_true",
        help="offload DiT layers while the compile warmup runs",
    )
    generate.add_argument("--dit-layerwise-offload", type=_boolean, default=False, metavar="{true,false}")
    generate.add_argument("--dit-cpu-offload", type=_boolean, default=False, metavar="{true,false}")
    generate.add_argument("--perf-dump-path", default=None, help="write per-stage and per-step times as JSON")
    generate.add_argument("--save-output", action="store_true", help="write the generated image as a PNG")
    generate.add_argument("--output-path", default="outputs", help="directory --save-output writes into")
    generate.add_argument("--output-file-name", default=None, help="file name (default: from the prompt)")
    generate.add_argument("--profile", action="store_true", help="torch.profiler trace of denoising steps")
    generate.add_argument(
        "--num-profiled-timesteps", type=int, default=5, help="steps profiled after one warmup step (-1: all)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run it; returns the process exit code."""
    args = build_parser().parse_args(argv)
    request = Request(
        prompt=args.prompt,
        negative_prompt=args.negative_prompt,
        width=args.width,
        height=args.height,
        num_frames=args.num_frames,
        num_inference_steps=args.num_inference_steps,
        guidance_scale=args.guidance_scale,
        seed=args.seed,
    )
    server_args = ServerArgs(
        model_path=args.model_path,
        num_gpus=args.num_gpus,
        enable_torch_compile=args.enable_torch_compile,
        warmup=args.warmup_mode == "request",
        offload_during_compile=args.offload_during_compile,
        dit_layerwise_offload=args.dit_layerwise_offload,
        dit_cpu_offload=args.dit_cpu_offload,
        perf_dump_path=args.perf_dump_path,
    )
    # torch warns at import when NumPy is missing; the toy never converts to NumPy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    # Inductor validates each vector ISA the CPU reports by building a probe library and loading
    # it in a child Python: about a second of CPU in every process, warm cache or not. The CPU's
    # flags, which it reads anyway, are enough here. Must be set before torch is imported.
    os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")
    # Imported here so that `--help` and flag errors answer before torch is imported.
    from .generate import generate
    from .profiler import configure
    from .save import OutputOptions

    if args.profile:
        configure(args.num_profiled_timesteps)

    output = OutputOptions(args.save_output, args.output_path, args.output_file_name)
    return generate(request, server_args, output)
