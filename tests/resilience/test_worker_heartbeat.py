"""A real worker process is seen by the scheduler's tick: the tick pings every worker and records
who answered, so the health page says which workers are alive without asking them itself."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from tests.processes import stop_group
from trading.health.probes import health_report
from trading.health.tasks import scheduler_tick
from trading.models import Heartbeat

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent.parent


def _database_url_of_test_db() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def worker_named(tmp_path):
    processes: list[subprocess.Popen] = []

    def start(hostname: str) -> subprocess.Popen:
        env = {**os.environ, "DATABASE_URL": _database_url_of_test_db(), "PYTHONPATH": str(ROOT)}
        command = [
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "--hostname", hostname, "--queues", f"idle-{uuid.uuid4().hex[:8]}",  # idle: nothing is sent to it
            "--concurrency", "1", "--pool", "prefork", "--without-gossip", "--without-mingle", "--loglevel", "WARNING",
        ]  # fmt: skip
        with (tmp_path / "worker.log").open("w") as log:
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        processes.append(process)
        return process

    yield start
    for process in processes:
        stop_group(process)


def test_an_idle_worker_answers_the_ticks_ping_and_is_seen(worker_named, tmp_path):
    hostname = f"ping-{uuid.uuid4().hex[:8]}@test"
    process = worker_named(hostname)

    deadline = time.monotonic() + 90
    while hostname not in scheduler_tick.apply().get():  # until the worker is up and answers
        assert process.poll() is None, (tmp_path / "worker.log").read_text()
        assert time.monotonic() < deadline, f"no answer from {hostname}:\n{(tmp_path / 'worker.log').read_text()}"

    seen = Heartbeat.objects.get(kind=Heartbeat.Kind.WORKER, name=hostname).seen_at
    assert timezone.now() - seen < timezone.timedelta(minutes=1)
    report = health_report()
    assert hostname in [worker.name for worker in report.workers if worker.alive]
    assert {check.name: str(check.status) for check in report.checks}["workers"] == "ok"
