"""A worker that starts requeues at once the runs held by dead workers: an expired lease anywhere,
or a lease held by a process of this same host that no longer exists (its worker was killed, and
with the embedded broker its message went with it). Live holders are left alone."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys

import pytest
from django.utils import timezone

from trading.models import AuditEvent, PipelineRun
from trading.pipeline.leases import owner_is_dead_here
from trading.pipeline.orchestrator import dead_workers_runs_requeue, pipeline_run_create


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, str | None]]:
    sent: list[tuple[int, str | None]] = []
    monkeypatch.setattr(
        "trading.pipeline.dispatch._publish", lambda run_id, *, queue, fail_fast: sent.append((run_id, queue))
    )
    return sent


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _held_run(instrument, owner: str, *, expires_in: dt.timedelta) -> PipelineRun:
    run = pipeline_run_create(instrument=instrument, as_of=instrument.bars.latest("date").date, provider="offline")
    PipelineRun.objects.filter(pk=run.pk).update(
        status="running",
        attempts=1,
        lease_owner=owner,
        lease_expires_at=timezone.now() + expires_in,
        enqueued_at=timezone.now() - dt.timedelta(hours=1),  # sent, then claimed: before its lease
    )
    return run


def test_a_lease_of_a_process_gone_from_this_host_is_dead_and_a_live_or_foreign_one_is_not():
    here = socket.gethostname()

    assert owner_is_dead_here(f"{here}:{_dead_pid()}:abcd1234")
    assert not owner_is_dead_here(f"{here}:{os.getpid()}:abcd1234")
    assert not owner_is_dead_here(f"elsewhere.example:{_dead_pid()}:abcd1234")
    assert not owner_is_dead_here("")


def test_a_starting_worker_requeues_the_runs_of_dead_workers_to_its_own_queue(instrument_with_bars, sent):
    here, minute = socket.gethostname(), dt.timedelta(minutes=1)
    killed_here = _held_run(instrument_with_bars, f"{here}:{_dead_pid()}:aaaa", expires_in=minute)
    expired_elsewhere = _held_run(instrument_with_bars, "elsewhere.example:12:bbbb", expires_in=-minute)
    _held_run(instrument_with_bars, f"{here}:{os.getpid()}:cccc", expires_in=minute)  # alive: left alone
    _held_run(instrument_with_bars, "elsewhere.example:13:dddd", expires_in=minute)  # live lease: left alone

    requeued = dead_workers_runs_requeue(queue="worker-q")

    assert sorted(requeued) == sorted([killed_here.pk, expired_elsewhere.pk])
    assert sorted(sent) == sorted([(killed_here.pk, "worker-q"), (expired_elsewhere.pk, "worker-q")])
    killed_here.refresh_from_db()
    # The dead holder's lease is expired, so the requeued message can claim the run at once.
    assert killed_here.lease_expires_at <= timezone.now()
    assert killed_here.failure_reason.startswith("attempt 1 stopped without finishing")
    assert AuditEvent.objects.filter(action="run_requeued").count() == 2
    assert dead_workers_runs_requeue(queue="worker-q") == []  # a second start sends nothing new
