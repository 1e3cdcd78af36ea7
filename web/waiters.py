"""Claims that wait: a runner's claim may hold its request open until a job of its kind is queued.

An idle runner that asks every few seconds costs a request (and on SQLite a write transaction)
each time; fifty of them keep a small server busy doing nothing. With ``?wait=N`` a claim that
finds nothing waits on this process's :class:`JobWaiters` for up to N seconds, and is answered as
soon as a job of its hardware kind is queued: by a commit in this process, or (PostgreSQL) by a
``NOTIFY`` from any process, which :class:`tracker.queue.wakeups.NotifyListener` hears.

A waiting claim holds no database connection and no worker thread: only an :class:`asyncio.Event`.
It also looks again every :attr:`JobWaiters.recheck_s` seconds (a read-only query), which covers
what no signal announces: SQLite has none across processes, and a listener may be reconnecting.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from tracker.queue.wakeups import NotifyListener, on_job_queued

# How often a waiting claim looks at the queue by itself: with a live PostgreSQL listener every
# queued job is announced, so this is a safety net; without one it is how a waiter finds work.
RECHECK_WITH_LISTENER_S = 15.0
RECHECK_WITHOUT_LISTENER_S = 2.0


@dataclass(eq=False)
class Waiter:
    """One waiting claim: its event, set from whichever thread hears of a job."""

    hardware_kind_id: int
    loop: asyncio.AbstractEventLoop
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        """Set the event on its own loop (callable from any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            self.loop.call_soon_threadsafe(self.event.set)


class JobWaiters:
    """The claims waiting in this process, by hardware kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[int, set[Waiter]] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self._closed = False
        self.listener: NotifyListener | None = None

    @property
    def recheck_s(self) -> float:
        """Seconds between a waiter's own looks at the queue."""
        if self.listener is not None and self.listener.connected.is_set():
            return RECHECK_WITH_LISTENER_S
        return RECHECK_WITHOUT_LISTENER_S

    @property
    def closed(self) -> bool:
        """Whether the server is shutting down (waiting claims are answered at once)."""
        return self._closed

    def waiting(self) -> int:
        """How many claims wait now."""
        with self._lock:
            return sum(len(group) for group in self._waiting.values())

    def register(self, hardware_kind_id: int) -> Waiter:
        """A new waiter, registered before the claim looks at the queue (so no job slips between)."""
        waiter = Waiter(hardware_kind_id=hardware_kind_id, loop=asyncio.get_running_loop())
        with self._lock:
            if self._unsubscribe is None:
                self._unsubscribe = on_job_queued(self._job_queued)
            self._waiting.setdefault(hardware_kind_id, set()).add(waiter)
        if self._closed:
            waiter.wake()
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        """The claim is answered; stop waking it."""
        with self._lock:
            group = self._waiting.get(waiter.hardware_kind_id)
            if group is not None:
                group.discard(waiter)
                if not group:
                    del self._waiting[waiter.hardware_kind_id]

    async def wait(self, waiter: Waiter, timeout_s: float) -> bool:
        """Wait until woken or ``timeout_s``; whether it was woken. The event is cleared for reuse."""
        try:
            await asyncio.wait_for(waiter.event.wait(), timeout=max(0.0, timeout_s))
        except TimeoutError:
            return False
        waiter.event.clear()
        return True

    def start(self, listener: NotifyListener | None = None) -> None:
        """The server starts: take waiting claims, and with ``listener`` hear other processes' jobs."""
        self._closed = False
        self.listener = listener
        if listener is not None:
            listener.start()

    def close(self) -> None:
        """Shutting down: answer every waiting claim now, and stop listening."""
        self._closed = True
        with self._lock:
            waiters = [waiter for group in self._waiting.values() for waiter in group]
            unsubscribe, self._unsubscribe = self._unsubscribe, None
        for waiter in waiters:
            waiter.wake()
        if unsubscribe is not None:
            unsubscribe()
        if self.listener is not None:
            self.listener.stop()
            self.listener = None

    def _job_queued(self, hardware_kind_id: int) -> None:
        with self._lock:
            waiters = list(self._waiting.get(hardware_kind_id, ()))
        for waiter in waiters:
            waiter.wake()
