"""The sglang workload: ``sglang generate`` (one process, perf dump) or ``sglang serve`` (timed requests).

One class serves the real sglang and the CPU toy pipeline: the executable is an argv prefix
(``("sglang", "generate")`` here, ``(sys.executable, "-m", "toydit", "generate")`` for the toy,
run in the tree with the tree on ``PYTHONPATH``). What the process printed is cleaned of colour
codes once, here, before the output capture, the trace search and the parsers read it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runners.jobenv import job_environ
from runners.jobspec import CaseSpec
from runners.outputs import OUTPUT_DIR_NAME, CapturedOutput, capture_output, output_options
from runners.parsing import clean_console_text
from runners.workloads.base import CapturedFile, WorkloadContext, WorkloadResult
from runners.workloads.cli.discovery import HelpFailed, OptionsCache
from runners.workloads.cli.intents import UnsupportedOption
from runners.workloads.cli.options import CliOptions
from runners.workloads.commandline import (
    DEFAULT_GENERATE,
    DEFAULT_SERVE,
    SHOWN_ENV,
    benchmark_env,
    build_generate_command,
    build_serve_command,
    generate_options,
    render_command,
    render_options,
    serve_options,
)
from runners.workloads.compile_log import CompileEventCounter, compile_counters
from runners.workloads.conditions import CpuSampler
from runners.workloads.environment import EnvironmentProbe, interpreter_for
from runners.workloads.phases import ProcessPhases
from runners.workloads.process import SUBPROCESS_LAUNCH, LogCapture, run_process
from runners.workloads.profiling import collect_trace, profile_env, profile_options
from runners.workloads.serve import (
    ServeSettings,
    free_port,
    is_video,
    request_body,
    request_path,
    run_served,
    unsupported_task,
)
from runners.workloads.watch import RunConditions, Tee

__all__ = [
    "PERF_DUMP_NAME",
    "SETUP_FAILED",
    "SglangWorkload",
    "build_generate_command",
    "build_serve_command",
]

PERF_DUMP_NAME = "perf_dump.json"
# The start of a failure reason for a run that never started: the candidate's command line cannot
# express the case (or could not be asked what it accepts). Not a measurement, never a regression.
SETUP_FAILED = "setup failed"


@dataclass(frozen=True)
class SglangWorkload:
    """Runs a case with ``sglang generate`` or ``sglang serve``; see :class:`runners.workloads.base.Workload`.

    ``base_env`` is the environment the benchmark inherits (``None``: the runner's own through the
    job allow-list of :mod:`runners.jobenv`, so PATH, HF_HOME and the like reach it and the agent's
    token does not); ``extra_env`` is added on top (e.g. the toy's shared
    ``TORCHINDUCTOR_CACHE_DIR``). ``python`` runs the torch/sglang version probe (``None``: the
    interpreter behind the executable); ``probe=None`` captures no environment at all.
    ``cpu_sampler`` makes the sampler of what else the machine did during the run (``None``: none);
    its result and the GPUs' clocks and throttle reasons go to the environment's ``conditions``.

    Before each run the candidate's own command line is asked which options it accepts
    (``options_cache``, once per commit; generate again with the case's ``--model-path`` when an
    option is missing, serve with ``serve_help_args``), and the case is spelled in that build's options
    (:mod:`runners.workloads.cli.intents`); what it cannot express ends the run as a setup failure.
    ``sync_steps`` asks sglang for device-synchronised step times (``None``: leave it, the toy times
    its own steps); the run's environment records which clock was asked for as ``step_timing``.
    """

    generate_executable: tuple[str, ...] = DEFAULT_GENERATE
    serve_executable: tuple[str, ...] = DEFAULT_SERVE
    extra_env: Mapping[str, str] = field(default_factory=dict)
    base_env: Mapping[str, str] | None = None
    workdir: Literal["job_dir", "tree"] = "job_dir"
    tree_on_pythonpath: bool = False
    python: str | None = None
    probe_versions: bool = True
    probe: EnvironmentProbe | None = field(default_factory=EnvironmentProbe)
    serve: ServeSettings = field(default_factory=ServeSettings)
    kill_grace_s: float = 10.0
    cpu_sampler: Callable[[], CpuSampler] | None = CpuSampler
    options_cache: OptionsCache = field(default_factory=OptionsCache)
    serve_help_args: tuple[str, ...] = ("--model-type", "diffusion")
    sync_steps: bool | None = True

    def run(self, case: CaseSpec, context: WorkloadContext) -> WorkloadResult:
        """Execute ``case``; a failure of the benchmark comes back in ``failure``, never raised."""
        if case.mode == "generate":
            return self._generate(case, context)
        if case.mode == "serve":
            return self._serve(case, context)
        return WorkloadResult(command="", log_text="", failure=f"unknown mode {case.mode!r}")

    def _generate(self, case: CaseSpec, context: WorkloadContext) -> WorkloadResult:
        context.job_dir.mkdir(parents=True, exist_ok=True)
        dump_path = context.job_dir / PERF_DUMP_NAME
        dump_path.unlink(missing_ok=True)  # a dump from an earlier attempt must not pass for this one
        extra = [
            *output_options(case.params, case.flags, context.job_dir / OUTPUT_DIR_NAME),
            *profile_options(context.profile_steps),  # an evidence job: a trace of steady steps
        ]
        env = self._env(context)
        try:
            argv = self._generate_argv(case, dump_path, extra, env, context)
        except (HelpFailed, UnsupportedOption) as error:
            wanted = [*self.generate_executable, *render_options(generate_options(case, dump_path, extra))]
            return _setup_failure(error, render_command(wanted, env, self._shown_env()))
        setup = self._prepare(context, self.generate_executable, env)
        setup.env.update(profile_env(context.job_dir, context.profile_steps))
        outcome = run_process(
            argv,
            env=setup.env,
            cwd=self._cwd(context),
            capture=setup.capture,
            timeout_s=context.timeout_s,
            grace_s=self.kill_grace_s,
            cancel=context.cancel,
            on_start=setup.started,
            launcher=context.launcher,
        )
        setup.phases.ended()
        dump_text = _read_text(dump_path)
        log_text = clean_console_text(setup.capture.text())
        environment = self._record_after(context, setup)
        if self.probe is not None and outcome.launch:
            environment["launch"] = outcome.launch  # how the process started: fresh or forked
        saved = CapturedOutput()
        if outcome.failure is None:
            cwd = self._cwd(context)
            saved = capture_output(log_text, cwd=cwd, roots=(context.job_dir, cwd))
        files: tuple[CapturedFile, ...] = ()
        if context.profile_steps > 0:
            files, missing = collect_trace(log_text, context.job_dir)
            environment["profile"] = {"steps": context.profile_steps, "trace": [f.name for f in files]}
            if missing:
                environment["profile"]["warning"] = missing
        return WorkloadResult(
            command=render_command(argv, setup.env, self._shown_env()),
            log_text=log_text,
            perf_dump_text=dump_text,
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
            failure=outcome.failure,
            log_truncated=setup.capture.truncated,
            compile=compile_counters(setup.counter, dump_text, compile_enabled=compiles(case)),
            environment=environment,
            files=files,
            output=saved.output,
            warnings=saved.warnings,
        )

    def _serve(self, case: CaseSpec, context: WorkloadContext) -> WorkloadResult:
        unsupported = unsupported_task(case)
        if unsupported is not None:
            return WorkloadResult(command="", log_text="", failure=unsupported)
        context.job_dir.mkdir(parents=True, exist_ok=True)
        port = free_port(self.serve.host)
        env = self._env(context)
        try:
            build = self._options(self.serve_executable, self.serve_help_args, env, context)
            argv = build_serve_command(case, port, self.serve_executable, build)
        except (HelpFailed, UnsupportedOption) as error:
            wanted = [*self.serve_executable, *render_options(serve_options(case, port))]
            return _setup_failure(error, render_command(wanted, env, self._shown_env()))
        setup = self._prepare(context, self.serve_executable, env)
        outcome = run_served(
            case,
            argv=argv,
            port=port,
            env=setup.env,
            cwd=self._cwd(context),
            capture=setup.capture,
            settings=self.serve,
            timeout_s=context.timeout_s,
            grace_s=self.kill_grace_s,
            cancel=context.cancel,
            on_start=setup.started,
        )
        setup.phases.ended()
        log_text = clean_console_text(setup.capture.text())
        environment = self._record_after(context, setup)
        if self.probe is not None:
            environment["launch"] = dict(SUBPROCESS_LAUNCH)  # a server always starts fresh
        requests = f"{self.serve.warmup_requests} warmup + {case.requests} timed"
        body = json.dumps(request_body(case), ensure_ascii=False)
        polled = ", each polled until completed and its content downloaded" if is_video(case) else ""
        return WorkloadResult(
            command=f"{render_command(argv, setup.env, self._shown_env())}  # then {requests} x "
            f"POST {request_path(case, self.serve)} {body}{polled}",
            log_text=log_text,
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
            failure=outcome.failure,
            log_truncated=setup.capture.truncated,
            compile=compile_counters(setup.counter, None, compile_enabled=compiles(case)),
            environment=environment,
            request_latencies_ms=outcome.latencies_ms,
        )

    def _generate_argv(
        self,
        case: CaseSpec,
        dump_path: Path,
        extra: list[tuple[str, Any]],
        env: Mapping[str, str],
        context: WorkloadContext,
    ) -> list[str]:
        """The case's ``generate`` argv in the commit's options; a model's pipeline may add some.

        The commit's plain ``--help`` is asked first (once per commit, whatever the model); only an
        option missing there makes the runner ask again with ``--model-path``, which lists the
        options the model's pipeline adds (sglang 0.5.23's ``add_resolved_pipeline_config_cli_args``).
        """
        executable = self.generate_executable
        try:
            return build_generate_command(
                case, dump_path, executable, self._options(executable, (), env, context), extra
            )
        except UnsupportedOption:
            build = self._options(executable, ("--model-path", case.model), env, context)
            return build_generate_command(case, dump_path, executable, build, extra)

    def _options(
        self,
        executable: tuple[str, ...],
        question: tuple[str, ...],
        env: Mapping[str, str],
        context: WorkloadContext,
    ) -> CliOptions:
        """The options the candidate's ``executable`` accepts, asked with ``question + --help``."""
        return self.options_cache.options(
            [*executable, *question, "--help"],
            commit=context.candidate_sha,
            env=env,
            cwd=self._cwd(context),
            label=_label(executable),
        )

    def _prepare(
        self, context: WorkloadContext, executable: tuple[str, ...], env: dict[str, str]
    ) -> _RunSetup:
        """Set up one run of ``executable`` in ``env``: what is recorded before it, its watchers."""
        environment = self._environment_before(context, env, executable)
        if self.probe is not None and self.sync_steps is not None:
            environment["step_timing"] = "device-synchronized" if self.sync_steps else "host"
        counter = CompileEventCounter()
        phases = ProcessPhases()
        capture = LogCapture(context.max_log_bytes, Tee((counter.feed, phases.feed), context.on_output))
        return _RunSetup(
            env, environment, counter, capture, RunConditions(self.probe, self.cpu_sampler, context), phases
        )

    def _record_after(self, context: WorkloadContext, setup: _RunSetup) -> dict[str, Any]:
        """The run's recorded environment, completed with the GPUs' state, the conditions after it
        and where the process's time went (:mod:`runners.workloads.phases`)."""
        setup.environment.update(self._gpu_state(context, "after"))
        setup.watch.record(setup.environment)
        if self.probe is not None:
            setup.environment["timings"] = setup.phases.timings()
        return setup.environment

    def _env(self, context: WorkloadContext) -> dict[str, str]:
        # The benchmark needs the runner's PATH, CUDA and Hugging Face settings, never its secrets.
        base = job_environ() if self.base_env is None else self.base_env
        return benchmark_env(
            base,
            candidate_sha=context.candidate_sha,
            gpu_ids=context.gpu_ids,
            extra=self.extra_env,
            pythonpath=context.tree if self.tree_on_pythonpath else None,
            sync_steps=self.sync_steps,
        )

    def _cwd(self, context: WorkloadContext) -> Path:
        # sglang writes its outputs relative to the working directory: keep them out of the tree.
        return context.tree if self.workdir == "tree" else context.job_dir

    def _shown_env(self) -> list[str]:
        extra = ["PYTHONPATH"] if self.tree_on_pythonpath else []
        return [*SHOWN_ENV, *self.extra_env, *extra]

    def _environment_before(
        self, context: WorkloadContext, env: Mapping[str, str], executable: tuple[str, ...]
    ) -> dict[str, Any]:
        if self.probe is None:
            return {}
        python = (self.python or interpreter_for(executable, env)) if self.probe_versions else None
        environment = self.probe.static(python=python, env=env, gpu_ids=context.gpu_ids)
        environment.update(self.probe.gpu_state(context.gpu_ids, "before"))
        return environment

    def _gpu_state(self, context: WorkloadContext, when: str) -> dict[str, Any]:
        return {} if self.probe is None else self.probe.gpu_state(context.gpu_ids, when)


@dataclass(frozen=True)
class _RunSetup:
    """One run as :meth:`SglangWorkload._prepare` sets it up, in either mode."""

    env: dict[str, str]  # the benchmark's environment variables
    environment: dict[str, Any]  # what is recorded about the machine and the software
    counter: CompileEventCounter
    capture: LogCapture
    watch: RunConditions
    phases: ProcessPhases

    def started(self, pgid: int) -> None:
        """The benchmark started as process group ``pgid``: its clock and its watchers start."""
        self.phases.started()
        self.watch.started(pgid)


def _label(executable: tuple[str, ...]) -> str:
    """How messages name the command: ``sglang generate``, ``toydit generate`` (its last two words)."""
    *program, command = executable[-2:] if len(executable) > 1 else ("", *executable)
    name = Path(program[0]).name if program and program[0] else ""
    return f"{name} {command}".strip()


def _setup_failure(error: HelpFailed | UnsupportedOption, command: str) -> WorkloadResult:
    """A run that never started: the candidate's command line cannot take the case (or be asked)."""
    reason = f"{SETUP_FAILED}: {error}"
    return WorkloadResult(command=command, log_text=reason, failure=reason)


def compiles(case: CaseSpec) -> bool:
    """Whether the case turns torch.compile on (``enable-torch-compile`` as ``true`` or ``"true"``)."""
    value = case.flags.get("enable-torch-compile", False)
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))


def _read_text(path: Path) -> str | None:
    """A file's text, or ``None`` when it is missing (the parser decides what that means)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
