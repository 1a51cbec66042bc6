"""One run, one executor: a lease on the PipelineRun row.

An attempt takes the lease by a conditional update that succeeds only when no live lease holds the
run (none, or expired); it renews it from a background thread while a stage works (long model
calls included), and checks it, by a conditional update on its own name, before every write. An
attempt whose lease was taken over stops at its next write without writing; a dead one simply
stops renewing, and its lease expires for the sweep or the next worker to take over.

The same background thread writes each model call's record as the call finishes, so an attempt
that is killed in the middle of a stage leaves every finished call (and its cost) in the table.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone

from agents.domain.llm import CallRecord
from agents.domain.pricing import PriceTable
from agents.recording import BufferedRecorder
from trading.models import PipelineRun

logger = logging.getLogger(__name__)

LIVE_STATUSES = (PipelineRun.Status.QUEUED, PipelineRun.Status.RUNNING)
# Keeps room in lease_owner for ":pid:attempt" whatever the host's name.
MAX_HOSTNAME = 200


class LeaseLost(Exception):
    """Another executor holds the run now: stop without writing anything more."""


def lease_free(now: dt.datetime) -> Q:
    """Runs no live executor holds."""
    return Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)


def this_host() -> str:
    return socket.gethostname()[:MAX_HOSTNAME]


def attempt_owner() -> str:
    """A new attempt's name as a lease holder. Host and pid let a worker restarting on the same
    host see that the holder is gone; the uuid tells two attempts of one process apart."""
    return f"{this_host()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class RunLease:
    run_id: int
    owner: str
    seconds: int
    # Set when the run's ending cleared this lease with its own write (``ended``): releasing it
    # afterwards could match no row, so it is not even asked.
    finished: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)

    @classmethod
    def for_this_attempt(cls, run_id: int) -> RunLease:
        return cls(run_id=run_id, owner=attempt_owner(), seconds=settings.RUN_LEASE_SECONDS)

    def expiry(self, now: dt.datetime | None = None) -> dt.datetime:
        return (now or timezone.now()) + dt.timedelta(seconds=self.seconds)

    def take_over(self, *, expect: Q | None = None, **changes: object) -> bool:
        """Take the run if it is live and no live lease holds it (and ``expect`` still matches)."""
        now = timezone.now()
        runs = PipelineRun.objects.filter(pk=self.run_id, status__in=LIVE_STATUSES).filter(lease_free(now))
        if expect is not None:
            runs = runs.filter(expect)
        return bool(runs.update(lease_owner=self.owner, lease_expires_at=self.expiry(now), **changes))

    def renew(self) -> bool:
        """Extend the lease if this attempt still holds it; False when it was taken over."""
        held = PipelineRun.objects.filter(pk=self.run_id, lease_owner=self.owner)
        return bool(held.update(lease_expires_at=self.expiry()))

    def hold(self) -> None:
        """Before a write: still ours (renewed), or ``LeaseLost``. Inside the writer's transaction
        the row stays locked until it commits, so a takeover cannot slip in between."""
        if not self.renew():
            raise LeaseLost(f"run {self.run_id} is no longer held by {self.owner}")

    def ended(self) -> None:
        """The run's ending, written while this lease held it, cleared the lease."""
        self.finished.set()

    def release(self) -> None:
        """Let the next attempt claim the run at once (a no-op when finished or taken over)."""
        if self.finished.is_set():
            return
        PipelineRun.objects.filter(pk=self.run_id, lease_owner=self.owner).update(lease_owner="", lease_expires_at=None)


class ExclusiveLease(RunLease):
    """The lease of a run nobody else can see: made and executed inside one transaction of this
    process (a replay day). It is taken and released as any lease, so the run's row ends the same,
    but holding it needs no renewal before each write: no other executor can take it over."""

    def hold(self) -> None:
        return None


def owner_is_dead_here(owner: str) -> bool:
    """True when ``owner`` names a process of this host that no longer exists: its worker was
    killed, so its lease need not be waited out."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != this_host() or not pid_text.isdigit():
        return False
    return not _alive(int(pid_text))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    # A killed process nobody has reaped yet is a zombie: dead for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class WakingRecorder(BufferedRecorder):
    """A BufferedRecorder that wakes the keeper each time a call finishes."""

    def __init__(self, *, run_id: int | None, prices: PriceTable) -> None:
        super().__init__(run_id=run_id, prices=prices)
        self.wake = threading.Event()

    def record(self, call: CallRecord) -> None:
        super().record(call)
        self.wake.set()


class AttemptKeeper:
    """The attempt's background thread: writes each finished call's record, and renews the lease
    every third of its length. It has its own database connection, closed when it stops.

    Not started when the caller is inside a transaction (a test, or a command wrapped in one):
    another connection could neither see the uncommitted run nor write while that transaction
    holds SQLite's write lock. The orchestrator then renews at each stage boundary and flushes
    at each stage's end and in its ``finally``, as before."""

    def __init__(self, lease: RunLease, recorder: WakingRecorder) -> None:
        self.lease = lease
        self.recorder = recorder
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> AttemptKeeper:
        if transaction.get_connection().in_atomic_block:
            return self
        self._thread = threading.Thread(target=self._loop, name=f"run-{self.lease.run_id}-keeper", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.recorder.wake.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        interval = self.lease.seconds / 3
        renew_at = timezone.now() + dt.timedelta(seconds=interval)
        try:
            while not self._stop.is_set():
                self.recorder.wake.wait(timeout=interval)
                self.recorder.wake.clear()
                self._quietly(self.recorder.flush, "write the finished calls of")
                if timezone.now() >= renew_at and not self._stop.is_set():
                    renew_at = timezone.now() + dt.timedelta(seconds=interval)
                    self._quietly(self._renew, "renew the lease of")
        finally:
            connections.close_all()  # this thread's connections only

    def _renew(self) -> None:
        if not self.lease.renew():
            # The orchestrator finds out at its next write and stops there; nothing to do here.
            logger.warning("run %s: lease of %s taken over", self.lease.run_id, self.lease.owner)

    def _quietly(self, action: Callable[[], object], what: str) -> None:
        # A database blink must not kill the thread: the next turn (or the orchestrator) retries.
        try:
            action()
        except Exception:
            logger.warning("could not %s run %s", what, self.lease.run_id, exc_info=True)
