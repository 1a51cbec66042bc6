"""Replays never leak into the live desk: their positions cannot be closed from it, their runs and
theses stay out of its lists unless asked for, and where they show they say so."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests.trading.book_rows import add_bar, next_session, open_position, round_thesis
from trading.book import broker
from trading.book.accounts import default_account, replay_account
from trading.models import Account, PipelineRun, Position, Thesis
from trading.pipeline.orchestrator import pipeline_run_create


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def live_account(db) -> Account:
    account = default_account()
    Account.objects.filter(pk=account.pk).update(max_notional_pct=Decimal("100"), exposure_cap_pct=Decimal("500"))
    return account


def _position(instrument, account, *, replay: bool) -> Position:
    thesis = round_thesis(instrument, replay=replay)
    day = next_session(instrument.bars.latest("date").date)
    add_bar(instrument, day, open_="100.00", high="101.00", low="99.00", close="100.00")
    return open_position(thesis, account, on=day)


@pytest.fixture
def replay_position(instrument_with_bars, live_account) -> Position:
    return _position(instrument_with_bars, replay_account("swing"), replay=True)


@pytest.fixture
def live_position(instrument_with_bars, live_account) -> Position:
    return _position(instrument_with_bars, live_account, replay=False)


# --- A1: a replay position cannot be closed from the live desk ------------------------------------


def test_the_broker_refuses_to_close_a_replay_position_by_hand(replay_position, approver):
    with pytest.raises(broker.BrokerError, match="belongs to a history replay"):
        broker.position_close_by_hand(position=replay_position, user=approver, comment="tidy up")

    replay_position.refresh_from_db()
    assert replay_position.status == Position.Status.OPEN


def test_a_forged_close_of_a_replay_position_from_the_portfolio_page_is_refused(client, replay_position, approver):
    client.force_login(approver)

    response = client.post(reverse("position_close", args=[replay_position.pk]), {"comment": "tidy"}, follow=True)

    assert (
        "Refused: position" in response.content.decode() and "belongs to a history replay" in response.content.decode()
    )
    replay_position.refresh_from_db()
    assert replay_position.status == Position.Status.OPEN


def test_closing_a_replay_position_over_the_api_is_409_with_the_reason(replay_position, approver):
    response = _api(approver).post(f"/api/positions/{replay_position.pk}/close/", {"comment": "tidy"}, format="json")

    assert response.status_code == 409 and "belongs to a history replay" in response.json()["detail"]
    replay_position.refresh_from_db()
    assert replay_position.status == Position.Status.OPEN


# --- B3 at the edges: a manual close needs a reason -----------------------------------------------


def test_the_portfolio_page_refuses_a_close_without_a_reason_and_asks_for_one(client, live_position, approver):
    client.force_login(approver)
    page = client.get(reverse("portfolio")).content.decode()
    assert 'name="comment"' in page and "required" in page

    response = client.post(reverse("position_close", args=[live_position.pk]), {"comment": ""}, follow=True)

    assert "Refused: say why you close it by hand: a reason is required." in response.content.decode()
    live_position.refresh_from_db()
    assert live_position.status == Position.Status.OPEN


def test_the_api_closes_a_live_position_with_a_reason_and_refuses_a_blank_one(live_position, approver, viewer):
    api = _api(approver)

    blank = api.post(f"/api/positions/{live_position.pk}/close/", {"comment": " "}, format="json")
    by_viewer = _api(viewer).post(f"/api/positions/{live_position.pk}/close/", {"comment": "x"}, format="json")
    closed = api.post(f"/api/positions/{live_position.pk}/close/", {"comment": "results tomorrow"}, format="json")
    again = api.post(f"/api/positions/{live_position.pk}/close/", {"comment": "again"}, format="json")

    assert blank.status_code == 400 and "a reason is required" in str(blank.json()["comment"])
    assert by_viewer.status_code == 403 and "only approvers" in by_viewer.json()["detail"]
    assert closed.status_code == 200 and closed.json()["status"] == "closed"
    assert closed.json()["exit_reason"] == "manual" and closed.json()["exit_comment"] == "results tomorrow"
    assert again.status_code == 409 and "already closed" in again.json()["detail"]


# --- A2: replay runs and theses stay out of the live lists unless asked for ------------------------


@pytest.fixture
def runs(instrument_with_bars) -> tuple[PipelineRun, PipelineRun]:
    as_of = instrument_with_bars.bars.latest("date").date
    live = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")
    replay = pipeline_run_create(instrument=instrument_with_bars, as_of=as_of, provider="offline")
    PipelineRun.objects.filter(pk=replay.pk).update(is_replay=True)
    return live, replay


def test_the_runs_page_hides_replay_runs_until_asked_and_badges_them(client, viewer, runs):
    live, replay = runs
    client.force_login(viewer)

    default = client.get(reverse("run_list")).content.decode()
    with_replays = client.get(reverse("run_list"), {"replay": "1"}).content.decode()

    assert f"#{live.pk}<" in default and f"#{replay.pk}<" not in default
    assert 'href="?replay=1"' in default  # the visible toggle
    assert f"#{live.pk}<" in with_replays and f"#{replay.pk}<" in with_replays
    assert with_replays.count('<span class="tag">replay</span>') == 1


def test_the_runs_api_hides_replay_runs_until_asked_and_marks_them(viewer, runs):
    live, replay = runs
    api = _api(viewer)

    default = api.get("/api/runs/").json()["results"]
    with_replays = api.get("/api/runs/", {"replay": "true"}).json()["results"]

    assert [r["id"] for r in default] == [live.pk]
    assert {r["id"]: r["is_replay"] for r in with_replays} == {live.pk: False, replay.pk: True}
    assert api.get("/api/runs/", {"replay": "perhaps"}).status_code == 400


def test_the_schema_documents_the_replay_filter_of_the_runs_list(viewer):
    schema = _api(viewer).get("/api/schema/", {"format": "json"}).json()

    parameters = {p["name"]: p for p in schema["paths"]["/api/runs/"]["get"]["parameters"]}
    assert parameters["replay"]["schema"]["type"] == "boolean"
    assert "replay" in parameters["replay"]["description"]


def test_a_pending_replay_thesis_is_not_in_the_approval_queue_unless_asked(client, viewer, instrument_with_bars):
    replay_thesis = round_thesis(instrument_with_bars, replay=True)
    assert replay_thesis.status == Thesis.Status.PENDING
    client.force_login(viewer)

    page = client.get(reverse("thesis_queue")).content.decode()
    asked = client.get(reverse("thesis_queue"), {"replay": "1"}).content.decode()
    api = _api(viewer).get("/api/theses/").json()

    assert f"#{replay_thesis.pk}<" not in page and api["count"] == 0
    assert f"#{replay_thesis.pk}<" in asked and '<span class="tag">replay</span>' in asked
    assert 'name="replay"' in page  # the visible filter
