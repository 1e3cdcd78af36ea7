"""The claim profile's aggregation of py-spy's raw stacks (the sampling itself needs a server)."""

from __future__ import annotations

from benchmarks.scale.profile import aggregate, format_profile, frame_name

SERVE = 'process 1:"perftrack serve";process 2:"spawn_main"'
THREAD = "Thread._bootstrap (/usr/lib/python3.11/threading.py:1002);WorkerThread.run (/v/site-packages/anyio/_backends/_asyncio.py:1124)"
CLAIM = "_claim_once (/w/web/api/claims.py:94);claim_job (/w/tracker/queue/claims.py:133)"
LOOP = "BaseEventLoop._run_once (/usr/lib/python3.11/asyncio/base_events.py:1922)"
APP = "RequestResponseCycle.run_asgi (/v/site-packages/uvicorn/protocols/http/h11_impl.py:403)"


def test_samples_are_placed_by_thread_and_by_the_perftrack_function_that_runs() -> None:
    lines = [
        f"{SERVE};{THREAD};{CLAIM};Session.execute (/v/site-packages/sqlalchemy/orm/session.py:2555) 6",
        f"{SERVE};{LOOP};{APP};solve_dependencies (/v/site-packages/fastapi/dependencies/utils.py:768) 3",
        f"{SERVE};{LOOP};H11Protocol.data_received (/v/site-packages/uvicorn/protocols/http/h11_impl.py:180) 1",
        "not a stack line",
    ]
    profile = aggregate(lines)
    assert profile.samples == 10
    assert profile.places == {
        "worker thread: _claim_once": 6,
        "event loop, in the app (routing, dependencies, middleware, response)": 3,
        "event loop, outside the app (HTTP parsing, the loop)": 1,
    }
    assert profile.own["claim_job (tracker/queue/claims.py)"] == 6
    assert profile.library_self["Session.execute (sqlalchemy/orm/session.py)"] == 6
    report = format_profile(profile, claims=100, cpu_s=0.5, top=5)
    assert "5.0 ms a claim" in report
    assert " 60.0%  worker thread: _claim_once" in report


def test_frame_names_drop_the_install_path_and_the_line() -> None:
    assert frame_name("f (/a/b/site-packages/pkg/mod.py:12)") == "f (pkg/mod.py)"
    assert frame_name("g (/w/tracker/x.py:3)") == "g (tracker/x.py)"
    assert frame_name("h (/usr/lib/python3.11/threading.py:9)") == "h (/usr/lib/python3.11/threading.py)"
