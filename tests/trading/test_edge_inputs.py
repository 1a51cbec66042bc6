"""Every query value, form value and request body the pages and the API read is checked at the
edge: a bad one gets a 400 (or a form error) with the reason, never a 500, never a silent default,
and nothing changes."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tests.trading.book_rows import SESSION, instrument_at, open_position, pending
from trading.book.accounts import default_account
from trading.edge import MAX_COMMENT_CHARS
from trading.models import DailyBar, Instrument, PipelineRun, Position, Thesis

TOO_LONG = "x" * (MAX_COMMENT_CHARS + 1)
TOMORROW = (timezone.localdate() + dt.timedelta(days=1)).isoformat()


@pytest.fixture
def api_as(db):
    def client_for(user) -> APIClient:
        client = APIClient()
        client.force_authenticate(user)
        return client

    return client_for


@pytest.fixture
def queued_thesis(db) -> Thesis:
    return pending(default_account(), instrument_at("ABC"), quantity=10)


@pytest.fixture
def live_position(queued_thesis) -> Position:
    return open_position(queued_thesis, default_account(), on=SESSION)


def _messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


# --- the approval queue: page and API read the same filters -------------------------------------

BAD_QUEUE_FILTERS = [
    ({"min_conviction": "NaN"}, "min_conviction 'NaN' is not a number from 0 to 1"),
    ({"min_conviction": "Infinity"}, "min_conviction 'Infinity' is not a number from 0 to 1"),
    ({"min_conviction": "-Infinity"}, "min_conviction '-Infinity' is not a number from 0 to 1"),
    ({"min_conviction": "1.5"}, "min_conviction '1.5' is not a number from 0 to 1"),
    ({"min_conviction": "high"}, "min_conviction 'high' is not a number"),
    ({"status": "bogus"}, "status 'bogus' is not one of pending, approved, rejected, expired, risk_rejected, all"),
    ({"direction": "UP"}, "direction 'UP' is not one of LONG, SHORT"),
    ({"replay": "maybe"}, "replay 'maybe' is not one of 1, 0, true, false"),
    ({"symbol": "S" * 101}, "symbol is 101 characters (at most 100)"),
    ({"strategy": "a\x00b"}, "strategy contains a NUL character"),
]


@pytest.mark.parametrize(("params", "reason"), BAD_QUEUE_FILTERS)
def test_the_queue_page_refuses_a_bad_filter_with_a_400_and_the_reason(client, viewer, queued_thesis, params, reason):
    client.force_login(viewer)

    response = client.get(reverse("thesis_queue"), params)

    assert response.status_code == 400
    body = response.content.decode()
    assert reason.replace("'", "&#x27;") in body
    assert f"#{queued_thesis.pk}" not in body


@pytest.mark.parametrize(("params", "reason"), BAD_QUEUE_FILTERS)
def test_the_queue_api_refuses_a_bad_filter_with_a_400_and_the_reason(api_as, viewer, queued_thesis, params, reason):
    response = api_as(viewer).get("/api/theses/", params)

    assert response.status_code == 400
    assert response.json()["detail"] == reason


def test_good_queue_filters_still_filter(client, api_as, viewer, queued_thesis):
    client.force_login(viewer)
    params = {"min_conviction": "0.5", "direction": "long", "status": "pending", "replay": "0", "symbol": "abc"}

    page = client.get(reverse("thesis_queue"), params)
    api = api_as(viewer).get("/api/theses/", params)
    above = api_as(viewer).get("/api/theses/", {"min_conviction": "0.9"})

    assert page.status_code == 200 and f"#{queued_thesis.pk}" in page.content.decode()
    assert [t["id"] for t in api.json()["results"]] == [queued_thesis.pk]
    assert above.json()["results"] == []


# --- dates a bundle, a chart or a run can be as of ----------------------------------------------


@pytest.mark.parametrize(
    ("as_of", "reason"),
    [
        ("0001-01-01", "as_of 0001-01-01 is before 1990-01-01, the earliest date the desk accepts"),
        ("9999-12-31", "as_of 9999-12-31 is after today"),
        (TOMORROW, f"as_of {TOMORROW} is after today"),
    ],
)
def test_the_instrument_page_refuses_a_date_outside_the_window(client, viewer, instrument_with_bars, as_of, reason):
    client.force_login(viewer)

    response = client.get(reverse("instrument_detail", args=["RELIANCE"]), {"as_of": as_of})

    assert response.status_code == 400
    assert reason in response.content.decode()


@pytest.mark.parametrize(
    ("as_of", "reason"),
    [
        ("0001-01-01", "as_of 0001-01-01 is before 1990-01-01, the earliest date the desk accepts"),
        ("9999-12-31", "as_of 9999-12-31 is after today"),
        ("tomorrow", "as_of: Date has wrong format. Use one of these formats instead: YYYY-MM-DD."),
    ],
)
def test_the_features_api_refuses_a_date_outside_the_window(api_as, viewer, instrument_with_bars, as_of, reason):
    response = api_as(viewer).get("/api/instruments/RELIANCE/features/", {"as_of": as_of})

    assert response.status_code == 400
    assert reason in response.json()["detail"]


def test_the_bars_api_refusal_has_a_detail_and_names_the_field(api_as, viewer, instrument_with_bars):
    response = api_as(viewer).get("/api/instruments/RELIANCE/bars/", {"start": "2025-02-01", "end": "2025-01-01"})

    assert response.status_code == 400
    body = response.json()
    assert body["detail"] == "start 2025-02-01 is after end 2025-01-01." and "after end" in body["start"][0]


def test_a_symbol_with_a_nul_character_is_not_found(api_as, client, viewer, instrument_with_bars):
    client.force_login(viewer)

    assert api_as(viewer).get("/api/instruments/REL%00IANCE/").status_code == 404
    assert client.get("/instruments/REL%00IANCE/").status_code == 404


@pytest.mark.parametrize("as_of", ["0001-01-01", "9999-12-31", TOMORROW])
def test_the_run_form_refuses_a_date_outside_the_window_and_starts_nothing(
    client, approver, instrument_with_bars, as_of
):
    client.force_login(approver)

    response = client.post(reverse("run_start"), {"symbols": ["RELIANCE"], "provider": "offline", "as_of": as_of})

    assert response.status_code == 400
    assert any(f"as_of {as_of} is" in problem for problem in response.context["start_form"].errors["as_of"])
    assert not PipelineRun.objects.exists()


def test_the_run_form_names_an_unknown_symbol_and_starts_nothing(client, approver, instrument_with_bars):
    client.force_login(approver)

    response = client.post(reverse("run_start"), {"symbols": ["RELIANCE", "NOPE"], "provider": "offline"})

    assert response.status_code == 400
    assert response.context["start_form"].errors["symbols"] == ["NOPE is unknown or inactive"]
    assert not PipelineRun.objects.exists()


@pytest.mark.parametrize("as_of", ["0001-01-01", "9999-12-31", TOMORROW])
def test_the_runs_api_refuses_a_date_outside_the_window_and_starts_nothing(
    api_as, approver, instrument_with_bars, as_of
):
    response = api_as(approver).post("/api/runs/", {"symbols": ["RELIANCE"], "as_of": as_of}, format="json")

    assert response.status_code == 400
    assert f"as_of {as_of} is" in response.json()["detail"]
    assert not PipelineRun.objects.exists()


def _poison(instrument: Instrument) -> None:
    DailyBar.objects.create(
        instrument=instrument, date=dt.date(9999, 12, 31), open=1, high=1, low=1, close=1, volume=1
    )


def test_a_multi_instrument_run_defaults_to_the_latest_bar_up_to_today_not_a_poisoned_one(
    client, api_as, approver, instrument_with_bars, django_capture_on_commit_callbacks
):
    """A bar dated 9999-12-31 on any one instrument (imported before dates were checked) used to
    set every run of the batch to 9999-12-31: the default was the latest bar of any of them."""
    other = instrument_at("ABC", day=SESSION)
    _poison(other)
    latest = instrument_with_bars.bars.filter(date__lte=timezone.localdate()).latest("date").date
    client.force_login(approver)

    with django_capture_on_commit_callbacks():
        client.post(reverse("run_start"), {"symbols": ["RELIANCE", "ABC"], "provider": "offline"})
        api_as(approver).post("/api/runs/", {"symbols": ["RELIANCE", "ABC"]}, format="json")

    assert set(PipelineRun.objects.values_list("as_of", flat=True)) == {max(latest, SESSION)}
    assert PipelineRun.objects.count() == 4


# --- other filters ------------------------------------------------------------------------------


def test_the_runs_page_refuses_a_bad_replay_flag(client, viewer, db):
    client.force_login(viewer)

    refused = client.get(reverse("run_list"), {"replay": "maybe"})
    fine = client.get(reverse("run_list"), {"replay": "1"})

    assert refused.status_code == 400 and "replay &#x27;maybe&#x27; is not one of 1, 0, true, false" in (
        refused.content.decode()
    )
    assert fine.status_code == 200


def test_the_runs_api_refuses_a_bad_replay_flag_with_a_detail(api_as, viewer, db):
    response = api_as(viewer).get("/api/runs/", {"replay": "maybe"})

    assert response.status_code == 400 and "replay" in response.json()["detail"]


def test_a_run_fragment_flag_of_any_value_is_a_fragment(client, viewer, instrument_with_bars):
    from trading.pipeline.orchestrator import pipeline_run_create

    run = pipeline_run_create(instrument=instrument_with_bars, as_of=SESSION, provider="offline")
    client.force_login(viewer)

    assert client.get(reverse("run_detail", args=[run.pk]), {"fragment": "\x00yes"}).status_code == 200


def test_the_positions_api_refuses_an_unknown_status(api_as, viewer, db):
    response = api_as(viewer).get("/api/positions/", {"status": "bogus"})

    assert response.status_code == 400 and response.json()["detail"] == "status 'bogus' is not one of open, closed"


@pytest.mark.parametrize("account", ["999999", "abc", "\x00"])
def test_the_portfolio_page_refuses_an_unknown_account(client, viewer, db, account):
    client.force_login(viewer)

    response = client.get(reverse("portfolio"), {"account": account})

    assert response.status_code == 400
    assert "no such account" in response.content.decode() and "Capital" in response.content.decode()


# --- free text: one limit on every path ---------------------------------------------------------


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_decision_form_refuses_a_comment_over_the_limit_and_decides_nothing(
    client, approver, queued_thesis, decision
):
    client.force_login(approver)

    response = client.post(
        reverse("thesis_decide", args=[queued_thesis.pk]), {"decision": decision, "comment": TOO_LONG}
    )

    assert response.status_code == 302
    assert "Refused: the comment is 2,001 characters; at most 2,000 are kept." in _messages(response)
    queued_thesis.refresh_from_db()
    assert queued_thesis.status == Thesis.Status.PENDING and queued_thesis.decision_comment == ""


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_decision_api_refuses_a_comment_over_the_same_limit(api_as, approver, queued_thesis, decision):
    response = api_as(approver).post(f"/api/theses/{queued_thesis.pk}/{decision}/", {"comment": TOO_LONG})

    assert response.status_code == 400
    assert response.json()["detail"] == "comment: the comment is 2,001 characters; at most 2,000 are kept"
    queued_thesis.refresh_from_db()
    assert queued_thesis.status == Thesis.Status.PENDING


def test_the_close_form_refuses_a_reason_over_the_limit_and_closes_nothing(client, approver, live_position):
    client.force_login(approver)

    response = client.post(reverse("position_close", args=[live_position.pk]), {"comment": TOO_LONG})

    assert "Refused: the reason is 2,001 characters; at most 2,000 are kept." in _messages(response)
    live_position.refresh_from_db()
    assert live_position.status == Position.Status.OPEN


def test_the_close_api_refuses_a_reason_over_the_same_limit(api_as, approver, live_position):
    response = api_as(approver).post(f"/api/positions/{live_position.pk}/close/", {"comment": TOO_LONG})

    assert response.status_code == 400
    assert response.json()["detail"] == "comment: the reason is 2,001 characters; at most 2,000 are kept"
    live_position.refresh_from_db()
    assert live_position.status == Position.Status.OPEN


def test_a_comment_at_the_limit_is_kept_whole(api_as, approver, queued_thesis):
    comment = "y" * MAX_COMMENT_CHARS

    response = api_as(approver).post(f"/api/theses/{queued_thesis.pk}/reject/", {"comment": comment})

    assert response.status_code == 200
    queued_thesis.refresh_from_db()
    assert queued_thesis.decision_comment == comment


def test_a_refused_list_item_is_named_by_its_position(api_as, approver, instrument_with_bars):
    """Found by the schema fuzzer: nested field errors are keyed by index, and used to raise a 500."""
    response = api_as(approver).post("/api/runs/", {"symbols": ["RELIANCE", ""]}, format="json")

    assert response.status_code == 400
    assert response.json()["detail"] == "symbols[1] is blank"


@pytest.mark.parametrize("page", ["abc", "0", "999", "NaN", "-1"])
def test_the_queue_page_number_falls_back_to_a_page_that_exists(client, viewer, queued_thesis, page):
    client.force_login(viewer)

    response = client.get(reverse("thesis_queue"), {"page": page})

    assert response.status_code == 200 and f"#{queued_thesis.pk}" in response.content.decode()


@pytest.mark.parametrize("path", ["/api/instruments/", "/api/theses/", "/api/runs/", "/api/positions/"])
def test_an_api_page_past_the_last_is_a_404_with_a_detail(api_as, viewer, db, path):
    response = api_as(viewer).get(path, {"page": "999"})

    assert response.status_code == 404 and response.json()["detail"] == "Invalid page."


def test_the_decision_form_names_a_missing_decision_and_decides_nothing(client, approver, queued_thesis):
    client.force_login(approver)

    response = client.post(reverse("thesis_decide", args=[queued_thesis.pk]), {"decision": "maybe"})

    assert "Choose approve or reject." in _messages(response)
    queued_thesis.refresh_from_db()
    assert queued_thesis.status == Thesis.Status.PENDING


def test_the_run_form_and_api_refuse_an_unknown_provider(client, api_as, approver, instrument_with_bars):
    client.force_login(approver)

    page = client.post(reverse("run_start"), {"symbols": ["RELIANCE"], "provider": "skynet"})
    api = api_as(approver).post("/api/runs/", {"symbols": ["RELIANCE"], "provider": "skynet"}, format="json")

    words = "provider 'skynet' is not one of offline, anthropic, openai, ollama, replay"
    assert page.status_code == 400 and page.context["start_form"].errors["provider"] == [words]
    assert api.status_code == 400 and api.json() == {"detail": words, "provider": [words]}
    assert not PipelineRun.objects.exists()


def test_a_form_with_more_fields_than_django_reads_is_a_400_with_a_detail(api_as, approver, db):
    """Found by the schema fuzzer: Django's TooManyFieldsSent used to answer its HTML 400 page."""
    body = "&".join(f"symbols=S{i}" for i in range(1_200))

    response = api_as(approver).post("/api/runs/", body, content_type="application/x-www-form-urlencoded")

    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["detail"].startswith("the request body is refused: The number of GET/POST parameters")

