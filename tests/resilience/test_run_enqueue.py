"""Starting runs while the broker is down: the request answers at once with the reason, the runs
are kept (never half-sent), and the outbox sweep sends each of them exactly once when the broker
is back.

The broker is "down" by pointing the Celery app at a port nobody listens on; "back" is the
configured broker again (the embedded one, or Redis under REQUIRE_SERVICES). Transactional: the
send happens after commit, as in production.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
import redis.connection
from django.urls import reverse
from rest_framework.test import APIClient

from config.celery import app
from tests.conftest import make_bars
from trading.models import AuditEvent, Instrument, PipelineRun
from trading.pipeline.dispatch import runs_unsent_send
from trading.pipeline.start import RunsNotQueued, pipeline_runs_start

pytestmark = pytest.mark.django_db(transaction=True)

CLOSED_BROKER = "redis://127.0.0.1:6399/0"


def _use_broker(url: str) -> None:
    # The app caches its connection and producer pools; drop them so the next send connects anew.
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


class ConnectCounter:
    def __init__(self) -> None:
        self.attempts = 0


@pytest.fixture
def broker_down(monkeypatch):
    """The Celery app points at a closed port; every connection attempt to it is counted."""
    counter = ConnectCounter()
    real_connect = redis.connection.AbstractConnection.connect

    def counting_connect(self, *args, **kwargs):
        if getattr(self, "port", None) == 6399:
            counter.attempts += 1
        return real_connect(self, *args, **kwargs)

    monkeypatch.setattr(redis.connection.AbstractConnection, "connect", counting_connect)
    configured = app.conf.broker_url
    _use_broker(CLOSED_BROKER)
    yield counter
    _use_broker(configured)


@pytest.fixture
def two_instruments(instrument_with_bars) -> list[Instrument]:
    second = Instrument.objects.create(
        symbol="TCS", exchange="NSE", name="TCS", sector="IT", tick_size=Decimal("0.05"), lot_size=1, currency="INR"
    )
    make_bars(second, 320, seed=2)
    return [instrument_with_bars, second]


def _drain(queue: str, *, expect: int) -> list[int]:
    """The run ids waiting in ``queue`` on the configured broker (read and removed)."""
    ids: list[int] = []
    with app.connection_for_read() as connection, connection.SimpleQueue(queue) as messages:
        for _ in range(expect + 1):  # one more than expected: a duplicate would show up here
            try:
                message = messages.get(timeout=10 if len(ids) < expect else 2)
            except messages.Empty:
                break
            body = message.decode()
            ids.append(body[0][0])
            message.ack()
    return ids


def test_the_api_answers_503_with_the_reason_at_once_and_keeps_the_runs_unsent(approver, two_instruments, broker_down):
    client = APIClient()
    client.force_authenticate(approver)

    response = client.post("/api/runs/", {"symbols": ["RELIANCE", "TCS"], "provider": "offline"}, format="json")

    assert response.status_code == 503, response.content
    body = response.json()
    assert "6399" in body["detail"] and "queue" in body["detail"]
    runs = PipelineRun.objects.order_by("pk")
    assert [run["id"] for run in body["runs"]] == body["unsent"] == [run.pk for run in runs]
    assert [run.status for run in runs] == ["queued", "queued"]
    assert all(run.enqueued_at is None for run in runs)
    # Failing fast: one connection attempt for the whole request, no retries, and the second run
    # was not tried against a broker that had just refused.
    assert broker_down.attempts == 1
    assert AuditEvent.objects.filter(action="run_enqueue_failed").count() == 1


def test_the_page_says_the_runs_are_kept_and_will_start_when_the_queue_is_back(
    client, approver, two_instruments, broker_down
):
    client.force_login(approver)

    response = client.post(reverse("run_start"), {"symbols": ["RELIANCE", "TCS"], "provider": "offline"}, follow=True)

    page = response.content.decode()
    assert response.status_code == 200
    assert "task queue is unreachable" in page and "6399" in page
    assert PipelineRun.objects.filter(status="queued", enqueued_at__isnull=True).count() == 2


def test_the_outbox_sends_each_unsent_run_once_when_the_broker_is_back(two_instruments, broker_down):
    with pytest.raises(RunsNotQueued) as refused:
        pipeline_runs_start(instruments=two_instruments, as_of=None, provider="offline")
    run_ids = sorted(run.pk for run in refused.value.runs)
    queue = f"test-outbox-{uuid.uuid4().hex[:8]}"
    assert runs_unsent_send(older_than=dt.timedelta(0), queue=queue) == []  # still down: kept for later
    assert PipelineRun.objects.filter(enqueued_at__isnull=True).count() == 2

    _use_broker(_configured_broker())
    sent = runs_unsent_send(older_than=dt.timedelta(0), queue=queue)
    again = runs_unsent_send(older_than=dt.timedelta(0), queue=queue)

    assert sorted(sent) == run_ids and again == []
    assert PipelineRun.objects.filter(enqueued_at__isnull=True).count() == 0
    assert sorted(_drain(queue, expect=2)) == run_ids
    assert AuditEvent.objects.filter(action="run_enqueued", reason__contains="outbox").count() == 2


def test_the_outbox_leaves_a_run_alone_while_its_request_may_still_be_sending_it(instrument_with_bars):
    run = PipelineRun.objects.create(instrument=instrument_with_bars, as_of=dt.date(2025, 1, 1), provider="offline")

    assert runs_unsent_send(older_than=dt.timedelta(minutes=1), queue="never-used") == []
    assert PipelineRun.objects.get(pk=run.pk).enqueued_at is None


def _configured_broker() -> str:
    from django.conf import settings

    return settings.CELERY_BROKER_URL


def test_beat_sweeps_the_outbox_every_minute(settings):
    entry = app.conf.beat_schedule["send-unsent-runs"]

    assert entry["task"] == "trading.send_unsent_runs"
    assert entry["schedule"] == float(settings.OUTBOX_SWEEP_SECONDS) == 60.0
