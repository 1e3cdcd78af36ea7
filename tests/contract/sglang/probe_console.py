"""What sglang writes when it saves an output, dumps metrics and serves a request: the probe's console part.

Loaded by ``probe.py`` (inside the contract environment, beside the imported sglang); standard library and
sglang only, torch for one 8×8 image. Every line comes out of sglang's own code and its own log handler,
set up by its ``configure_logger`` as at start-up (``[%m-%d %H:%M:%S] message``, ANSI colours kept),
writing into a buffer instead of the console.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import dataclasses
import inspect
import io
import logging
import os
import types
from collections.abc import Callable, Iterator
from typing import Any


class SglangConsole:
    """sglang's console, captured: the log lines its code prints, one request at a time."""

    def __init__(self, logging_utils: types.ModuleType) -> None:
        self.logging_utils = logging_utils

    @contextlib.contextmanager
    def capture(self) -> Iterator[tuple[io.StringIO, logging.Formatter | None]]:
        """sglang's root log handler as ``configure_logger`` makes it, writing to a buffer meanwhile."""
        root = logging.getLogger()
        saved_handlers, saved_level = list(root.handlers), root.level
        console = io.StringIO()
        with contextlib.redirect_stdout(console):  # the handler binds sys.stdout when it is made
            self.logging_utils.configure_logger(server_args=types.SimpleNamespace(log_level="info"))
        try:
            yield console, root.handlers[0].formatter
        finally:
            root.handlers[:] = saved_handlers
            root.setLevel(saved_level)

    def output_line(self, entry_utils: types.ModuleType, path: str) -> dict[str, Any]:
        """``post_process_sample`` saves an 8×8 black image to ``path``; the "Output saved to" line."""
        import torch

        if not os.path.isabs(path):
            return {"error": "path must be absolute"}
        with self.capture() as (console, formatter):
            entry_utils.post_process_sample(
                torch.zeros((3, 8, 8)), entry_utils.DataType.IMAGE, 1, save_output=True, save_file_path=path
            )
        lines = console.getvalue().splitlines()
        return {
            "line": next((line for line in lines if "Output saved to" in line), None),
            "lines": lines,
            "log_format": getattr(formatter, "_fmt", None),
            "date_format": getattr(formatter, "datefmt", None),
            "how": "post_process_sample() saved an 8x8 image; its logger as configure_logger() sets it up",
        }

    def perf_dump(self, generate_module: types.ModuleType, request: dict[str, Any]) -> dict[str, Any]:
        """The generate command's ``maybe_dump_performance`` writes ``request["path"]`` from the numbers."""
        path = str(request["path"])
        stages = {str(name): float(ms) for name, ms in dict(request.get("stages", {})).items()}
        metrics = {  # the dict a GenerationResult carries from the scheduler to the CLI
            "request_id": request.get("request_id", "probe-request"),
            "stages": stages,
            "steps": [float(step) for step in request.get("steps_ms", [])],
            "total_duration_ms": float(request.get("total_duration_ms", sum(stages.values()))),
            "memory_snapshots": dict(request.get("memory", {})),
        }
        args = argparse.Namespace(perf_dump_path=path)
        server_args = types.SimpleNamespace(model_path=request.get("model", "probe/model"))
        prompt = request.get("prompt", "a prompt")
        with self.capture() as (console, _):
            generate_module.maybe_dump_performance(
                args, server_args, prompt, types.SimpleNamespace(metrics=metrics)
            )
        return {
            "ok": os.path.exists(path),
            "lines": console.getvalue().splitlines(),
            "how": "maybe_dump_performance() of sglang generate (PerformanceLogger.dump_benchmark_report)",
        }

    def served_memory_line(
        self, openai_utils: types.ModuleType, peak_memory_mb: float, prompt: str
    ) -> dict[str, Any]:
        """The line serve's ``process_generation_batch`` logs for a request's peak memory."""
        try:
            lines = self._run_process_generation_batch(openai_utils, peak_memory_mb, prompt)
            how = "process_generation_batch() ran with a stand-in scheduler client"
        except Exception as error:
            lines = self._render_from_source(openai_utils, peak_memory_mb)
            how = (
                f"process_generation_batch() could not run here ({type(error).__name__}: {error}); "
                "its own f-string was read from the source and logged through its logger"
            )
        peak_lines = [line for line in lines if "eak" in line and "emory" in line]
        return {"line": peak_lines[-1] if peak_lines else None, "lines": lines, "how": how}

    def _run_process_generation_batch(
        self, openai_utils: types.ModuleType, peak_memory_mb: float, prompt: str
    ) -> list[str]:
        function = openai_utils.process_generation_batch
        # A result the scheduler has already saved (output_file_paths), so nothing is encoded here.
        result = types.SimpleNamespace(
            error=None, output=None, output_file_paths=["/probe/output.png"], raw_frame_batches=None,
            peak_memory_mb=peak_memory_mb, audio=None, audio_sample_rate=None,
        )  # fmt: skip

        class SchedulerClient:
            async def forward(self, batches: Any) -> Any:
                return result

        class TraceContext:
            def trace_req_finish(self, *args: Any, **kwargs: Any) -> None:
                pass

        batch = types.SimpleNamespace(prompt=prompt, trace_ctx=TraceContext())
        with contextlib.ExitStack() as stack:
            if "get_global_server_args" in function.__code__.co_names:
                stack.enter_context(_default_global_server_args(function))
            console, _ = stack.enter_context(self.capture())
            asyncio.run(function(SchedulerClient(), batch))
        return console.getvalue().splitlines()

    def _render_from_source(self, openai_utils: types.ModuleType, peak_memory_mb: float) -> list[str]:
        """The fallback: find ``logger.info(f"...Peak memory...")`` in the module's source and run it."""
        for node in ast.walk(ast.parse(inspect.getsource(openai_utils))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "info"
                and node.args
                and isinstance(node.args[0], ast.JoinedStr)
                and "Peak memory" in ast.unparse(node.args[0])
            ):
                expression = compile(ast.Expression(node.args[0]), openai_utils.__name__, "eval")
                result = types.SimpleNamespace(peak_memory_mb=peak_memory_mb)
                # sglang's own f-string, from its installed source: the package under test.
                message = eval(expression, {"result": result})  # noqa: S307
                with self.capture() as (console, _):
                    openai_utils.logger.info(message)
                return console.getvalue().splitlines()
        return []


@contextlib.contextmanager
def _default_global_server_args(function: Callable[..., Any]) -> Iterator[None]:
    """While none is set, ServerArgs' field defaults stand for the serving process's global arguments."""
    namespace = function.__globals__["get_global_server_args"].__globals__
    if namespace.get("_global_server_args") is not None:
        yield
        return
    defaults = {}
    for field in dataclasses.fields(namespace["ServerArgs"]):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    namespace["_global_server_args"] = types.SimpleNamespace(**defaults)
    try:
        yield
    finally:
        namespace["_global_server_args"] = None
