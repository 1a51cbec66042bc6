"""The health page and its probe: what each part's failure looks like, and what an anonymous
load balancer may read."""

from __future__ import annotations

import datetime as dt
import json
from unittest import mock

import pytest
from django.conf import settings as django_settings
from django.db import OperationalError, connections
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from trading.health.tasks import scheduler_tick
from trading.models import Heartbeat

WORKER = "celery@build-box-17.internal"


def _beat(kind: str, name: str, *, ago: dt.timedelta) -> None:
    Heartbeat.objects.update_or_create(kind=kind, name=name, defaults={"seen_at": timezone.now() - ago})


@pytest.fixture
def everything_alive(db) -> None:
    _beat(Heartbeat.Kind.SCHEDULER, "beat", ago=dt.timedelta(seconds=20))
    _beat(Heartbeat.Kind.WORKER, WORKER, ago=dt.timedelta(seconds=5))


def _probe() -> tuple[int, dict]:
    response = APIClient().get("/api/health/")
    return response.status_code, response.json()


def test_with_every_part_alive_the_probe_answers_ok_without_credentials(everything_alive):
    status, body = _probe()

    assert status == 200 and body["status"] == "ok"
    assert {name: check["status"] for name, check in body["checks"].items()} == {
        "database": "ok",
        "broker": "ok",
        "scheduler": "ok",
        "workers": "ok",
    }
    assert body["checks"]["database"]["latency_ms"] >= 0
    assert body["checks"]["workers"]["seen"] == 1


def test_the_anonymous_probe_tells_statuses_and_figures_but_no_names_addresses_or_paths(everything_alive):
    _, body = _probe()
    text = json.dumps(body)

    assert "build-box" not in text and "celery@" not in text
    assert "redis://" not in text and str(django_settings.DATA_DIR) not in text
    assert all(set(check) <= {"status", "latency_ms", "age_s", "seen"} for check in body["checks"].values())


def test_a_stale_scheduler_is_down_with_its_age_and_the_desk_degraded(client, viewer, everything_alive):
    _beat(Heartbeat.Kind.SCHEDULER, "beat", ago=dt.timedelta(minutes=7, seconds=10))
    client.force_login(viewer)

    status, body = _probe()
    page = client.get(reverse("health"))
    strip = client.get(reverse("dashboard")).content.decode()

    assert status == 200 and body["status"] == "degraded"
    assert body["checks"]["scheduler"]["status"] == "down"
    assert 425 <= body["checks"]["scheduler"]["age_s"] < 440
    assert page.status_code == 200
    assert "last tick 7 min ago: nothing scheduled is running" in page.content.decode()
    assert 'data-check="scheduler"' in strip and "scheduler down" in strip and "7 min ago" in strip


def test_a_scheduler_that_never_ticked_is_down(db):
    _, body = _probe()

    assert body["checks"]["scheduler"]["status"] == "down" and "age_s" not in body["checks"]["scheduler"]


def test_no_worker_seen_is_shown_on_the_page_and_the_strip(client, viewer):
    _beat(Heartbeat.Kind.SCHEDULER, "beat", ago=dt.timedelta(seconds=20))
    client.force_login(viewer)

    _, body = _probe()
    page = client.get(reverse("health")).content.decode()
    strip = client.get(reverse("dashboard")).content.decode()

    assert body["status"] == "degraded"
    assert body["checks"]["workers"] == {"status": "down", "seen": 0}
    assert "no worker seen yet" in page
    assert "workers down" in strip and "0 seen" in strip


def test_a_worker_gone_quiet_is_listed_as_gone_with_the_time_since(client, viewer, everything_alive):
    _beat(Heartbeat.Kind.WORKER, WORKER, ago=dt.timedelta(minutes=12))
    client.force_login(viewer)

    _, body = _probe()
    page = client.get(reverse("health")).content.decode()

    assert body["checks"]["workers"]["status"] == "down"
    assert "no worker seen for 12 min" in page and WORKER in page and "gone" in page


def test_an_unreachable_broker_is_down_and_the_desk_degraded(settings, tmp_path, everything_alive):
    if settings.REDIS_URL:
        settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    else:
        settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
            **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
            "data_folder_in": str(tmp_path / "gone" / "queue"),
        }

    status, body = _probe()

    assert status == 200 and body["status"] == "degraded"
    assert body["checks"]["broker"] == {"status": "down"}


def test_a_database_that_does_not_answer_makes_the_desk_down_with_a_503(everything_alive):
    refused = OperationalError("connection to server failed: Connection refused")
    with mock.patch.object(connections["default"], "cursor", side_effect=refused):
        status, body = _probe()

    assert status == 503 and body["status"] == "down"
    assert body["checks"]["database"] == {"status": "down"}
    assert "refused" not in json.dumps(body)


def test_the_health_page_needs_a_login_like_every_page(client, db):
    response = client.get(reverse("health"))

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_scheduler_tick_records_itself_and_forgets_long_gone_workers(db):
    _beat(Heartbeat.Kind.WORKER, "celery@old-box", ago=dt.timedelta(days=2))

    scheduler_tick.apply()

    tick = Heartbeat.objects.get(kind=Heartbeat.Kind.SCHEDULER)
    assert timezone.now() - tick.seen_at < dt.timedelta(minutes=1)
    assert not Heartbeat.objects.filter(name="celery@old-box").exists()
    _, body = _probe()
    assert body["checks"]["scheduler"]["status"] == "ok"


def test_beat_sends_the_tick_every_minute():
    schedule = django_settings.CELERY_BEAT_SCHEDULE
    entries = [entry for entry in schedule.values() if entry["task"] == "trading.scheduler_tick"]

    assert len(entries) == 1 and entries[0]["schedule"] == 60.0


def test_a_load_balancer_polling_often_is_never_throttled(everything_alive):
    client = APIClient()

    statuses = {client.get("/api/health/").status_code for _ in range(80)}

    assert statuses == {200}
