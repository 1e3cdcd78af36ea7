"""Serve an ASGI app (the tracker, the fake GitHub) on a uvicorn thread for the demo's lifetime."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

START_TIMEOUT_S = 60


@contextmanager
def serve_asgi(app: Any, host: str, port: int, *, name: str) -> Iterator[str]:
    """Serve ``app`` on ``host:port`` (0: a free port) until the block ends; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True, name=name)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(
                f"the {name} could not start on {host}:{port} (is the port in use? try --port)"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(f"the {name} did not start within {START_TIMEOUT_S} s")
        time.sleep(0.05)
    bound = server.servers[0].sockets[0].getsockname()[1] if port == 0 else port
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
