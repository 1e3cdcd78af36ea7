"""The contract probe: answers questions about one installed sglang release, by running sglang's own code.

Runs INSIDE the contract environment that ``scripts/sglang_contract_env.sh`` installs, never under the
project's own packages: ``.venv/bin/python -P probe.py`` with ``PYTHONPATH=stubs:.sglang/<v>/pkg:
.sglang/<v>/deps`` and ``HF_HUB_OFFLINE=1`` (``tests/contract/sglang/env.py`` starts it so). It imports
the standard library, sglang and what sglang itself imports (torch for one 8×8 image), nothing of perftrack.

Why a long-lived server: importing sglang's CLI modules takes 20–40 s on this 2-core machine (about 6,000
modules: torch, transformers, diffusers, and 450 (0.5.10) to 1,200 (0.5.23) of sglang's own). So the probe imports once, says
``{"ready": true, ...}``, then reads one JSON request per line on stdin and writes one JSON answer per
line on stdout, until stdin closes. Its file descriptor 1 is moved to stderr before anything is imported,
so whatever sglang prints or logs (its log handler writes to stdout) lands on stderr and never in the
protocol. Requests (``"id"`` is echoed back when given):

``{"cmd": "version"}``
    ``sglang.__version__`` and the installed dist-info's version.
``{"cmd": "options", "command": "generate"|"serve", "argv": [...]}``
    The option table of the parser that ``sglang generate`` / ``sglang serve`` build for a diffusion
    model. ``argv`` (default none) is what the pipeline-specific pre-parse sees: without a model path,
    options added by ``add_resolved_pipeline_config_cli_args`` are absent.
``{"cmd": "parse", "command": ..., "argv": [...]}`` and ``{"cmd": "help", "command": ..., "argv": [...]}``
    Run the real entry point, ``sglang.cli.main.main()``, with ``sys.argv = ["sglang", command, *argv]``:
    the top-level parser, the dispatch, the diffusion parser's ``parse_known_args``,
    ``ServerArgs.from_cli_args`` (with the ``default_args`` the release's serve passes). Four names are
    replaced for the call, and put back after it: ``get_is_diffusion_model`` (the probe has no model, so
    it says every model is a diffusion model; ``--model-type`` other than auto/diffusion is refused),
    ``DiffGenerator`` in the generate command and the serve command's launch function (stand-ins that
    record the ``ServerArgs`` and sampling parameters and stop before any model loads), and serve's
    ``kill_process_tree`` (its ``finally`` would kill this process's children). ``parse`` answers ``ok``,
    the exit code Python would give (``null`` when the command reached the model), the stderr text, and
    a subset of ``ServerArgs``; ``help`` answers the captured stdout (``columns`` sets ``COLUMNS``, 80).
    Values ``ServerArgs`` derives from the device (offload switches, backends) are the CPU's here.
``{"cmd": "output_line", "path": "/abs/x.png"}``
    sglang's logger, configured by its ``configure_logger`` as at start-up, then ``post_process_sample``
    saves an 8×8 black image to ``path``: the captured "Output saved to ..." line, colour codes kept.
``{"cmd": "perf_dump", "path": ..., "steps_ms": [...], "stages": {...}, "memory": {...}}``
    The generate command's own ``maybe_dump_performance`` (``PerformanceLogger.dump_benchmark_report``)
    writes the ``--perf-dump-path`` file from those numbers.
``{"cmd": "served_memory_line", "peak_memory_mb": 47616.5}``
    Serve's ``process_generation_batch`` run with a stand-in scheduler client whose one result has that
    peak: the line it logs. Where the function cannot run, its own f-string is read from its source and
    rendered; ``how`` says which.

The last three live in ``probe_console.py``, loaded from beside this file. Anything else, or anything that fails, is answered ``{"error": "..."}``; the probe does not exit.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import importlib
import importlib.metadata
import importlib.util
import io
import json
import logging
import os
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

COMMANDS = ("generate", "serve")
# The ServerArgs fields a parse answers with, where the release has them.
SERVER_ARGS_FIELDS = (
    "model_path", "warmup_mode", "warmup", "warmup_steps", "enable_torch_compile", "num_gpus", "tp_size",
    "sp_degree", "ulysses_degree", "ring_degree", "enable_cfg_parallel", "dit_layerwise_offload",
    "dit_cpu_offload", "text_encoder_cpu_offload", "vae_cpu_offload", "attention_backend", "backend",
    "host", "port", "output_path", "log_level", "pipeline_class_name",
)  # fmt: skip
ACTION_KINDS = {
    argparse._StoreAction: "store",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._StoreConstAction: "store_const",
    argparse._AppendAction: "append",
    argparse._AppendConstAction: "append_const",
    argparse._CountAction: "count",
    argparse._HelpAction: "help",
    argparse._VersionAction: "version",
}
# sglang's own actions, by class name: the module that defines them moved between releases.
SGLANG_ACTION_KINDS = {"StoreBoolean": "boolean", "RaiseNotImplementedAction": "not_implemented"}


class _Stopped(Exception):
    """Raised by the stand-ins where sglang would start loading a model."""


class _Capture:
    """What the stand-ins saw: the ServerArgs and, for generate, the sampling parameters."""

    def __init__(self) -> None:
        self.server_args: Any = None
        self.sampling: dict[str, Any] | None = None

    def generator_class(self) -> type:
        capture = self

        class ProbeDiffGenerator:
            @classmethod
            def from_pretrained(cls, *args: Any, server_args: Any = None, **kwargs: Any) -> Any:
                capture.server_args = server_args
                return cls()

            def generate(self, *args: Any, sampling_params_kwargs: Any = None, **kwargs: Any) -> Any:
                capture.sampling = dict(sampling_params_kwargs or {})
                raise _Stopped

            def shutdown(self) -> None:
                pass

        return ProbeDiffGenerator

    def launch(self, server_args: Any, *args: Any, **kwargs: Any) -> None:
        self.server_args = server_args
        raise _Stopped


@contextlib.contextmanager
def _replaced(module: types.ModuleType, name: str, value: Any) -> Iterator[None]:
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


@contextlib.contextmanager
def _process_argv(argv: list[str]) -> Iterator[None]:
    """``sys.argv`` as the real process has it: sglang's pre-parses and ServerArgs read it."""
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


@contextlib.contextmanager
def _captured_output(columns: int = 80) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Capture stdout and stderr; log handlers bound to the capture meanwhile are moved back after."""
    out, err = io.StringIO(), io.StringIO()
    saved_columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)  # argparse wraps help to the terminal's width
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        if saved_columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved_columns
        for handler in _all_stream_handlers():
            if handler.stream in (out, err):
                handler.setStream(sys.stdout if handler.stream is out else sys.stderr)


def _all_stream_handlers() -> list[logging.StreamHandler[Any]]:
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values())]
    return [
        handler
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler)
    ]


def _json_safe(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return _json_safe(value.value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    return str(value)


def _exit_code(code: object) -> int:
    """The status Python gives ``SystemExit(code)``: None is 0, an int itself, anything else 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def option_table(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """Every optional argument of ``parser``, in the recorded format, sorted by first flag."""
    rows = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        kind = ACTION_KINDS.get(type(action)) or SGLANG_ACTION_KINDS.get(type(action).__name__, "other")
        row: dict[str, Any] = {
            "flags": list(action.option_strings),
            "dest": action.dest,
            "kind": kind,
            "nargs": action.nargs,
            "choices": None if action.choices is None else [str(choice) for choice in action.choices],
            "type": "str",
            "const": _json_safe(action.const),
            "required": bool(action.required),
        }
        if action.type in (int, float, str):
            row["type"] = action.type.__name__
        elif action.type is not None:
            row["type_name"] = getattr(action.type, "__qualname__", None) or repr(action.type)
        if kind == "other":
            row["action_class"] = type(action).__qualname__
        rows.append(row)
    return sorted(rows, key=lambda row: row["flags"][0])


class Probe:
    """One imported sglang release and the requests it answers."""

    def __init__(self) -> None:
        import sglang
        import sglang.cli.generate
        import sglang.cli.main
        import sglang.cli.serve
        import sglang.multimodal_gen.runtime.entrypoints.cli.generate as mm_generate
        import sglang.multimodal_gen.runtime.entrypoints.cli.serve as mm_serve
        import sglang.multimodal_gen.runtime.entrypoints.openai.utils as openai_utils
        import sglang.multimodal_gen.runtime.entrypoints.utils as entry_utils
        import sglang.multimodal_gen.runtime.utils.logging_utils as logging_utils

        self.sglang = sglang
        self.cli_main = sglang.cli.main
        self.cli_generate = sglang.cli.generate
        self.cli_serve = sglang.cli.serve
        self.mm_generate = mm_generate
        self.mm_serve = mm_serve
        self.openai_utils = openai_utils
        self.entry_utils = entry_utils
        self.logging_utils = logging_utils
        launches = [name for name in ("dispatch_launch", "launch_server") if hasattr(mm_serve, name)]
        self.serve_launch_name = next(
            name for name in launches if name in mm_serve.execute_serve_cmd.__code__.co_names
        )
        self.console = _load_sibling("probe_console").SglangConsole(logging_utils)

    def handle_line(self, line: str) -> dict[str, Any]:
        """One request line in, one answer out; never raises."""
        try:
            request = json.loads(line)
        except json.JSONDecodeError as error:
            return {"error": f"not JSON: {error}"}
        if not isinstance(request, dict):
            return {"error": "a request is a JSON object"}
        handler = getattr(self, f"cmd_{request.get('cmd')}", None)
        if not isinstance(request.get("cmd"), str) or handler is None:
            return {"error": f"unknown cmd {request.get('cmd')!r}", "id": request.get("id")}
        try:
            answer: dict[str, Any] = handler(request)
        except Exception as error:
            answer = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
        if "id" in request:
            answer["id"] = request["id"]
        return answer

    def cmd_version(self, request: dict[str, Any]) -> dict[str, Any]:
        import sglang_cpu_stubs

        return {
            "version": getattr(self.sglang, "__version__", None) or importlib.metadata.version("sglang"),
            "dist_version": importlib.metadata.version("sglang"),
            "stubbed": list(sglang_cpu_stubs.STUBBED_PACKAGES),
        }

    def cmd_options(self, request: dict[str, Any]) -> dict[str, Any]:
        command, argv = _command_and_argv(request)
        with _process_argv(["sglang", command, *argv]), _captured_output():
            parser = argparse.ArgumentParser()
            if command == "generate":
                self.mm_generate.add_multimodal_gen_generate_args(parser)
            else:
                self.mm_serve.add_multimodal_gen_serve_args(parser)
        return {"command": command, "options": option_table(parser)}

    def cmd_parse(self, request: dict[str, Any]) -> dict[str, Any]:
        command, argv = _command_and_argv(request)
        capture, outcome = self._run_main(command, argv, int(request.get("columns", 80)))
        answer: dict[str, Any] = {"ok": capture.server_args is not None, **outcome}
        server_args = capture.server_args
        if server_args is not None:
            answer["server_args"] = {
                name: _json_safe(getattr(server_args, name))
                for name in SERVER_ARGS_FIELDS
                if hasattr(server_args, name)
            }
            explicit = getattr(server_args, "_explicit_arg_names", None)
            if explicit is not None:
                answer["explicit_args"] = sorted(explicit)
        if capture.sampling is not None:
            answer["sampling"] = {k: _json_safe(v) for k, v in capture.sampling.items() if k != "request_id"}
        return answer

    def cmd_help(self, request: dict[str, Any]) -> dict[str, Any]:
        command, argv = _command_and_argv(request)
        if not {"-h", "--help"} & set(argv):
            return {"error": "help needs -h or --help in argv (otherwise the command would run)"}
        _, outcome = self._run_main(command, argv, int(request.get("columns", 80)))
        return {"text": outcome["stdout"], "exit_code": outcome["exit_code"], "stderr": outcome["error"]}

    def _run_main(self, command: str, argv: list[str], columns: int) -> tuple[_Capture, dict[str, Any]]:
        for index, arg in enumerate(argv):
            model_type = argv[index + 1] if arg == "--model-type" and index + 1 < len(argv) else None
            if arg.startswith("--model-type="):
                model_type = arg.partition("=")[2]
            if model_type not in (None, "auto", "diffusion"):
                raise ValueError(f"the probe runs the diffusion backend only, not --model-type {model_type}")
        capture = _Capture()
        exit_code: int | None = 0
        error_text = ""
        exception = None
        with contextlib.ExitStack() as stack:
            always_diffusion: Callable[[str], bool] = lambda _model_path: True  # noqa: E731
            stack.enter_context(_replaced(self.cli_generate, "get_is_diffusion_model", always_diffusion))
            stack.enter_context(_replaced(self.cli_serve, "get_is_diffusion_model", always_diffusion))
            stack.enter_context(_replaced(self.cli_serve, "kill_process_tree", lambda *a, **k: None))
            stack.enter_context(_replaced(self.mm_generate, "DiffGenerator", capture.generator_class()))
            stack.enter_context(_replaced(self.mm_serve, self.serve_launch_name, capture.launch))
            stack.enter_context(_process_argv(["sglang", command, *argv]))
            out, err = stack.enter_context(_captured_output(columns))
            try:
                self.cli_main.main()
            except _Stopped:
                exit_code = None
            except SystemExit as stop:
                exit_code = _exit_code(stop.code)
                if stop.code is not None and not isinstance(stop.code, int):
                    error_text = f"{stop.code}\n"
            except Exception as error:
                exit_code = 1
                exception = type(error).__name__
                error_text = f"{type(error).__name__}: {error}\n"
        outcome = {"exit_code": exit_code, "error": err.getvalue() + error_text, "stdout": out.getvalue()}
        if exception is not None:
            outcome["exception"] = exception
        return capture, outcome

    def cmd_output_line(self, request: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.console.output_line(self.entry_utils, str(request["path"]))
        return answer

    def cmd_perf_dump(self, request: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.console.perf_dump(self.mm_generate, request)
        return answer

    def cmd_served_memory_line(self, request: dict[str, Any]) -> dict[str, Any]:
        peak_memory_mb, prompt = float(request["peak_memory_mb"]), str(request.get("prompt", "a prompt"))
        answer: dict[str, Any] = self.console.served_memory_line(self.openai_utils, peak_memory_mb, prompt)
        return answer


def _command_and_argv(request: dict[str, Any]) -> tuple[str, list[str]]:
    command = request.get("command")
    if command not in COMMANDS:
        raise ValueError(f"command must be one of {COMMANDS}, not {command!r}")
    argv = request.get("argv", [])
    if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
        raise ValueError("argv must be a list of strings")
    return command, list(argv)


def _load_sibling(name: str) -> types.ModuleType:
    """A module beside this file, loaded by path: this folder is not on sys.path (``python -P``)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"no {name}.py beside {__file__}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _claim_stdout() -> TextIO:
    """Keep file descriptor 1 for the protocol and point it, for everyone else, at stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    return protocol


def _send(protocol: TextIO, answer: dict[str, Any]) -> None:
    protocol.write(json.dumps(answer, default=str) + "\n")
    protocol.flush()


def main() -> int:
    """Import sglang once, then answer requests line by line until stdin closes."""
    protocol = _claim_stdout()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download a model, whoever started us
    started = time.monotonic()
    import sglang_cpu_stubs

    sglang_cpu_stubs.install()
    probe = Probe()
    version = probe.cmd_version({})
    _send(protocol, {"ready": True, **version, "import_s": round(time.monotonic() - started, 1)})
    for line in sys.stdin:
        if line.strip():
            _send(protocol, probe.handle_line(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
