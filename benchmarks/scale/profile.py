"""``python -m benchmarks.scale.profile``: where a claim's server CPU goes, from py-spy samples.

Against a database the scale benchmark generated (``python -m benchmarks.scale`` leaves it, and its
suites under ``--work/<backend>/suites``), this starts ``perftrack serve`` as the benchmark does,
registers ``--runners`` runners, queues ``--jobs`` jobs and lets the runners claim them back to back
while ``py-spy record --gil`` samples the server processes: only the thread that holds the
interpreter lock is sampled, so a sample is CPU spent, never a wait for the database or a lock.
It prints the server CPU per claim and the share of samples

- on a worker thread, by the perftrack function the thread runs (the claim: authentication,
  lease, the answer's read, commit);
- on the event loop inside the app (routing, dependencies, middleware, logging, the response);
- on the event loop outside the app (HTTP parsing, the loop itself);

then the perftrack functions and the library functions that take the most, inclusive and self.
``py-spy`` must be installed (the ``dev`` extra) and allowed to attach (root, or ptrace allowed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.scale.claims import ClaimFigures, queue_jobs, register_fleet, run_queue_down, server_cpu_s
from benchmarks.scale.generate import ScaleConfig
from benchmarks.scale.measure import issue_tokens, serve
from tracker.enums import TokenRole

_OWN = re.compile(r"\((?:tracker|web|wire)/")
_LOCATION = re.compile(r" \((.*?):\d+\)$")
_PROJECT_PATH = re.compile(r"/((?:tracker|web|wire)/.*)$")


@dataclass
class Profile:
    """Samples aggregated by where they were taken."""

    samples: int = 0
    places: Counter[str] = field(default_factory=Counter)
    own: Counter[str] = field(default_factory=Counter)  # perftrack functions, inclusive
    library_self: Counter[str] = field(default_factory=Counter)


def frame_name(frame: str) -> str:
    """``claim_job (tracker/queue/claims.py)`` from py-spy's ``claim_job (/…/tracker/queue/claims.py:86)``;
    a library's path from its package on (``Session.execute (sqlalchemy/orm/session.py)``)."""
    match = _LOCATION.search(frame)
    if match is None:
        return frame
    path = match[1]
    if "site-packages/" in path:
        path = path.rsplit("site-packages/", 1)[1]
    elif (own := _PROJECT_PATH.search(path)) is not None:
        path = own[1]
    return f"{frame[: match.start()]} ({path})"


def aggregate(lines: list[str]) -> Profile:
    """Aggregate py-spy's raw (collapsed) stacks: ``frame;frame;... count`` a line."""
    profile = Profile()
    for line in lines:
        stack, _, count_text = line.rstrip().rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame_name(frame) for frame in stack.split(";")]
        profile.samples += count
        profile.places[_place(frames)] += count
        for name in dict.fromkeys(frame for frame in frames if _OWN.search(frame)):
            profile.own[name] += count
        if not _OWN.search(frames[-1]):
            profile.library_self[frames[-1]] += count
    return profile


def _place(frames: list[str]) -> str:
    if any(frame.startswith("WorkerThread.run ") for frame in frames):
        own = next((frame.split(" (")[0] for frame in frames if _OWN.search(frame)), "library code")
        return f"worker thread: {own}"
    if any(frame.startswith("RequestResponseCycle.run_asgi ") for frame in frames):
        return "event loop, in the app (routing, dependencies, middleware, response)"
    return "event loop, outside the app (HTTP parsing, the loop)"


def format_profile(profile: Profile, claims: int, cpu_s: float, top: int) -> str:
    """The report: CPU per claim, shares by place, top own and library functions."""
    total = max(profile.samples, 1)
    per_claim = 1000 * cpu_s / max(claims, 1)
    head = f"{claims} claims answered; server CPU {cpu_s:.1f} s, {per_claim:.1f} ms a claim; "
    lines = [
        head + f"{profile.samples} samples holding the interpreter lock",
        "",
        "share  where",
    ]
    lines += [f"{100 * n / total:5.1f}%  {place}" for place, n in profile.places.most_common()]
    lines += ["", "perftrack functions (inclusive):"]
    lines += [f"{100 * n / total:5.1f}%  {name}" for name, n in profile.own.most_common(top)]
    lines += ["", "library functions (self):"]
    lines += [f"{100 * n / total:5.1f}%  {name}" for name, n in profile.library_self.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale.profile", description=__doc__)
    parser.add_argument("--db-url", default="postgresql://postgres@127.0.0.1:5432/perf_scale")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "perftrack-scale")
    parser.add_argument("--jobs", type=int, default=1200, help="jobs queued and claimed back to back")
    parser.add_argument("--runners", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2, help="server processes (PostgreSQL)")
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=25, help="functions listed")
    parser.add_argument("--cases", type=int, default=60, help="as the database was generated with")
    parser.add_argument("--hardware", type=int, default=4, choices=(1, 2, 3, 4))
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        sys.exit("py-spy is not installed: pip install -e '.[dev]'")
    backend = "sqlite" if args.db_url.startswith("sqlite") else "postgresql"
    folder = args.work / backend
    config = ScaleConfig(cases=args.cases, hardware=args.hardware)
    workers = 1 if backend == "sqlite" else args.workers
    (folder / "profile").mkdir(parents=True, exist_ok=True)
    with serve(args.db_url, folder / "profile", folder / "suites", workers) as server:
        fleet = register_fleet(
            server.base,
            issue_tokens(args.db_url, args.runners, purpose="profile"),
            issue_tokens(args.db_url, 1, purpose="profile-admin", role=TokenRole.ADMIN)[0],
            list(config.hardware_names),
            prefix=f"profile-{time.time_ns():x}",
        )
        # Jobs on commits of nights the benchmark never uses (a job is queued once per commit); a
        # night is a day after the generated year, and commit dates stop at 2100.
        queue_jobs(args.db_url, config, args.jobs, 3_000 + int(time.time()) % 20_000)
        stacks = folder / "profile" / "stacks.txt"
        record = [spy, "record", "--pid", str(server.pid), "--subprocesses", "--gil", "--nonblocking"]
        record += ["--rate", str(args.rate), "--format", "raw", "--output", str(stacks)]
        sampler = subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # attached to every server process
        cpu_before = server_cpu_s(server.pid)
        _, answers = run_queue_down(fleet, 0.0, ClaimFigures(), [])
        cpu_s = server_cpu_s(server.pid) - cpu_before
        sampler.send_signal(signal.SIGINT)  # py-spy writes what it has on an interrupt
        sampler.wait(timeout=60)
    print(format_profile(aggregate(stacks.read_text().splitlines()), answers, cpu_s, args.top))
    print(f"\n(stacks: {stacks}; {os.cpu_count()} cores; the runners share them with the server)")


if __name__ == "__main__":
    main()
