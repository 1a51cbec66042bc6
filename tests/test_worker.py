"""A task executed by a real Celery worker process: the embedded file-system broker on a laptop,
Redis when REDIS_URL is set. Eager mode would prove nothing about serialisation, routing or the
worker's own database connection."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from trading.models import FeatureSnapshot
from trading.tasks import compute_feature_snapshot

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent


def _database_url_of_test_db() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def worker_queue():
    queue = f"test-{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "DATABASE_URL": _database_url_of_test_db(), "PYTHONPATH": str(ROOT)}
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
    )
    yield queue, process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_a_real_worker_computes_and_stores_a_feature_snapshot(instrument_with_bars, worker_queue):
    queue, process = worker_queue
    as_of = instrument_with_bars.bars.order_by("-date").values_list("date", flat=True)[10]

    result = compute_feature_snapshot.apply_async((instrument_with_bars.pk, as_of.isoformat()), queue=queue)
    try:
        outcome = result.get(timeout=90)
    except Exception:
        process.terminate()
        print(process.communicate(timeout=20)[0])
        raise

    assert outcome["status"] == "ok" and outcome["symbol"] == "RELIANCE"
    snapshot = FeatureSnapshot.objects.get(pk=outcome["snapshot_id"])
    assert snapshot.as_of == as_of
    assert snapshot.bundle["technical"]["as_of"] == as_of.isoformat()
    assert snapshot.bundle["technical"]["rsi_14"] is not None


def test_the_broker_is_the_configured_one():
    expected = "redis" if settings.REDIS_URL else "filesystem"
    assert settings.CELERY_BROKER_URL.startswith(expected)
