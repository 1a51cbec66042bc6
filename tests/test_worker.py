"""Tasks executed by a real Celery worker process: the embedded file-system broker on a laptop,
Redis when REDIS_URL is set. Eager mode would prove nothing about serialisation, routing or the
worker's own database connection."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from agents.models import ModelCall
from tests.processes import stop_group, wait_for
from trading.market.tasks import compute_feature_snapshot
from trading.models import FeatureSnapshot, PipelineRun, StageRun, Thesis
from trading.pipeline.orchestrator import STAGES, pipeline_run_create
from trading.pipeline.tasks import run_pipeline

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent


def _database_url_of_test_db() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def start_worker():
    processes: list[subprocess.Popen] = []

    def start(queue: str, **extra_env: str) -> subprocess.Popen:
        env = {**os.environ, "DATABASE_URL": _database_url_of_test_db(), "PYTHONPATH": str(ROOT), **extra_env}
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--queues",
                queue,
                "--concurrency",
                "1",
                "--pool",
                "prefork",
                "--without-gossip",
                "--without-mingle",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group, so a kill takes the pool children too
        )
        processes.append(process)
        return process

    yield start
    for process in processes:
        stop_group(process)


def _queue() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


def test_a_real_worker_computes_and_stores_a_feature_snapshot(instrument_with_bars, start_worker):
    queue = _queue()
    process = start_worker(queue)
    as_of = instrument_with_bars.bars.order_by("-date").values_list("date", flat=True)[10]

    result = compute_feature_snapshot.apply_async((instrument_with_bars.pk, as_of.isoformat()), queue=queue)
    try:
        outcome = result.get(timeout=90)
    except Exception:
        os.killpg(process.pid, signal.SIGTERM)
        print(process.communicate(timeout=20)[0])
        raise

    assert outcome["status"] == "ok" and outcome["symbol"] == "RELIANCE"
    snapshot = FeatureSnapshot.objects.get(pk=outcome["snapshot_id"])
    assert snapshot.as_of == as_of
    assert snapshot.bundle["technical"]["as_of"] == as_of.isoformat()
    assert snapshot.bundle["technical"]["rsi_14"] is not None


def test_a_worker_killed_mid_run_is_resumed_without_duplicates(instrument_with_bars, start_worker):
    queue = _queue()
    first = start_worker(queue, LLM_OFFLINE_LATENCY_MS="400")
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    run_pipeline.apply_async((run.pk,), queue=queue)
    wait_for(
        lambda: StageRun.objects.filter(run=run, stage="analysts", status="done").exists(),
        timeout=90,
        what="the analysts stage",
    )

    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=20)
    run.refresh_from_db()
    assert run.status == PipelineRun.Status.RUNNING
    analyst_calls = ModelCall.objects.filter(run=run, role__in=["news", "technical", "sentiment"]).count()
    notes = StageRun.objects.get(run=run, stage="analysts").output

    # No sweep by hand: the fresh worker finds the run held by a process of this host that no
    # longer exists and queues it to itself as it starts.
    started = time.monotonic()
    start_worker(queue)
    wait_for(lambda: PipelineRun.objects.get(pk=run.pk).attempts == 2, timeout=90, what="the run to be taken back")
    claimed = time.monotonic() - started
    wait_for(lambda: PipelineRun.objects.get(pk=run.pk).is_finished, timeout=90, what="the resumed run")
    print(
        f"\nrecovery from a fresh worker's start: taken back after {claimed:.1f} s, "
        f"finished after {time.monotonic() - started:.1f} s"
    )

    run.refresh_from_db()
    assert run.status == PipelineRun.Status.COMPLETED, run.failure_reason
    assert run.attempts == 2
    assert StageRun.objects.filter(run=run).count() == len(STAGES)
    assert StageRun.objects.get(run=run, stage="analysts").output == notes
    assert ModelCall.objects.filter(run=run, role__in=["news", "technical", "sentiment"]).count() == analyst_calls
    assert Thesis.objects.filter(run=run).count() == 1


def test_the_broker_is_the_configured_one():
    expected = "redis" if settings.REDIS_URL else "filesystem"
    assert settings.CELERY_BROKER_URL.startswith(expected)


def test_a_run_on_a_worker_pushes_its_stages_to_a_socket_in_this_process(instrument_with_bars, start_worker, viewer):
    from asgiref.sync import async_to_sync
    from channels.testing import WebsocketCommunicator
    from django.test import Client

    from config.asgi import application

    queue = _queue()
    start_worker(queue)
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.latest("date").date, provider="offline"
    )
    client = Client()
    client.force_login(viewer)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()

    async def scenario():
        socket = WebsocketCommunicator(
            application, f"/ws/runs/{run.pk}/", headers=[(b"origin", b"http://testserver"), (b"cookie", cookie)]
        )
        connected, _ = await socket.connect()
        assert connected
        run_pipeline.apply_async((run.pk,), queue=queue)
        kinds = []
        while "run.finished" not in kinds:
            kinds.append((await socket.receive_json_from(timeout=90))["kind"])
        await socket.disconnect()
        return kinds

    kinds = async_to_sync(scenario)()

    assert kinds.count("stage.finished") == len(STAGES)
    assert kinds[-1] == "run.finished"
