"""The reviews' API: read-only for any authenticated user; reports filtered by horizon, account,
strategy and status; position retrospectives with their lifecycles; trade reviews with the facts
by code and the words by the model; bad filters refused with the reason; every route in the schema."""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework.test import APIClient

from reviews.models import RetrospectiveReport
from tests.factories import AccountFactory, position_on_path
from tests.factories.reviews import DEFAULT_END, RetrospectiveReportFactory, TradeReviewFactory
from trading.book.accounts import default_account
from trading.models import Strategy

pytestmark = pytest.mark.django_db
STOPPED = ["100", "100", "97", "94", "92"]
RISING = ["100", "100", "103", "106", "109", "112"]


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/api/reviews/",
        "/api/reviews/1/",
        "/api/position-retrospectives/",
        "/api/trade-reviews/",
        "/api/trade-reviews/1/",
    ],
)
def test_every_route_needs_credentials(client, db, url):
    RetrospectiveReportFactory()

    response = APIClient().get(url)

    assert response.status_code == 401
    assert "detail" in response.json()


def test_writes_are_not_offered(approver):
    report = RetrospectiveReportFactory()

    assert api(approver).post("/api/reviews/", {}, format="json").status_code == 405
    assert api(approver).delete(f"/api/reviews/{report.pk}/").status_code == 405
    assert RetrospectiveReport.objects.count() == 1


def test_reports_are_listed_latest_first_with_their_summary(viewer):
    account = default_account()
    older = RetrospectiveReportFactory(horizon="weekly", account=account, period_end=DEFAULT_END - dt.timedelta(days=7))
    newer = RetrospectiveReportFactory(horizon="weekly", account=account, ungrounded_numbers=True)

    body = api(viewer).get("/api/reviews/").json()

    assert body["count"] == 2
    assert [row["id"] for row in body["results"]] == [newer.pk, older.pk]
    first = body["results"][0]
    assert first["horizon"] == "weekly" and first["status"] == "ready"
    assert first["account"] == account.pk and first["account_name"] == "paper"
    assert first["net"] == newer.hard["attribution"]["net"]
    assert first["period_start"] == "2025-03-08" and first["period_end"] == "2025-03-14"
    assert first["confidence"] == "0.4500" and first["model_used"] == "offline-rules" and first["tier"] == "quick"
    assert first["ungrounded_count"] == 1
    assert "hard" not in first  # the list stays light; the detail carries the hard part


def test_reports_are_filtered_by_horizon_account_strategy_and_status(viewer):
    live, other = default_account(), AccountFactory()
    strategy = Strategy.objects.create(name="Large-cap swing", philosophy="swing")
    daily = RetrospectiveReportFactory(horizon="daily", account=live)
    weekly = RetrospectiveReportFactory(horizon="weekly", account=live, strategy=strategy)
    elsewhere = RetrospectiveReportFactory(horizon="weekly", account=other)
    running = RetrospectiveReportFactory(horizon="epoch", account=live, running=True)
    client = api(viewer)

    def ids(**params) -> set[int]:
        response = client.get("/api/reviews/", params)
        assert response.status_code == 200, response.json()
        return {row["id"] for row in response.json()["results"]}

    assert ids(horizon="weekly") == {weekly.pk, elsewhere.pk}
    assert ids(account=str(live.pk)) == {daily.pk, weekly.pk, running.pk}
    assert ids(account=str(other.pk), horizon="weekly") == {elsewhere.pk}
    assert ids(strategy=str(strategy.pk)) == {weekly.pk}
    assert ids(status="running") == {running.pk}
    assert ids(status="ready", account=str(live.pk)) == {daily.pk, weekly.pk}


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"horizon": "monthly"}, "horizon 'monthly' is not one of daily, weekly, epoch, position, loss, testament"),
        ({"account": "paper"}, "account 'paper' is not an id"),
        ({"account": "999999"}, "there is no account 999999"),
        ({"strategy": "-1"}, "strategy '-1' is not an id"),
        ({"strategy": "424242"}, "there is no strategy 424242"),
        ({"status": "done"}, "status 'done' is not one of running, ready, failed"),
        ({"account": "9" * 30}, "is not an id"),
    ],
)
def test_a_bad_filter_is_refused_with_the_reason(viewer, params, reason):
    response = api(viewer).get("/api/reviews/", params)

    assert response.status_code == 400
    assert reason in response.json()["detail"]


def test_a_report_in_full_carries_its_hard_part_narrative_and_flags(viewer):
    report = RetrospectiveReportFactory(horizon="weekly", ungrounded_numbers=True)

    body = api(viewer).get(f"/api/reviews/{report.pk}/").json()

    assert body["hard"] == report.hard
    assert body["narrative"]["what_worked"][0].endswith("99999.99.")
    assert body["ungrounded"] == [{"number": "99999.99", "where": "what_worked[0]"}]
    assert body["trigger_key"] == report.trigger_key and body["attempts"] == 1 and body["error"] == ""
    assert body["hard"]["waterfall"][-1] == {"label": "Net result", "amount": body["net"]}


def test_a_failed_report_says_why_and_has_no_net(viewer):
    report = RetrospectiveReportFactory(failed=True)

    body = api(viewer).get(f"/api/reviews/{report.pk}/").json()

    assert body["status"] == "failed" and body["net"] is None
    assert body["error"] == "the model's reply failed validation twice"


def test_an_unknown_report_is_404(viewer):
    response = api(viewer).get("/api/reviews/999999/")

    assert response.status_code == 404 and "detail" in response.json()


def test_position_retrospectives_list_ready_ones_with_their_lifecycle(viewer):
    position = position_on_path(STOPPED)
    lifecycle = {"final_pnl": "-531.72", "regret": "0.00", "path": ["0", "-300.00"]}
    ready = RetrospectiveReportFactory(
        horizon="position",
        account=position.account,
        position=position,
        hard={"currency": "INR", "lifecycle": lifecycle},
    )
    RetrospectiveReportFactory(horizon="position", account=position.account, running=True)
    RetrospectiveReportFactory(horizon="weekly", account=position.account)

    body = api(viewer).get("/api/position-retrospectives/").json()
    by_position = api(viewer).get("/api/position-retrospectives/", {"position": str(position.pk)}).json()
    elsewhere = api(viewer).get("/api/position-retrospectives/", {"position": "999999"}).json()

    assert [row["id"] for row in body["results"]] == [ready.pk]
    row = body["results"][0]
    assert row["position"] == position.pk and row["symbol"] == position.instrument.symbol
    assert row["lifecycle"] == lifecycle and row["net"] is None
    assert by_position["count"] == 1 and elsewhere["count"] == 0


def test_trade_reviews_show_the_facts_by_code_and_the_words_by_the_model(viewer):
    loser = position_on_path(STOPPED)
    winner = position_on_path(RISING)
    lost = TradeReviewFactory(position=loser)
    won = TradeReviewFactory(position=winner)
    client = api(viewer)

    listed = client.get("/api/trade-reviews/").json()
    losses = client.get("/api/trade-reviews/", {"outcome": "loss"}).json()
    detail = client.get(f"/api/trade-reviews/{lost.pk}/").json()

    assert {row["id"] for row in listed["results"]} == {lost.pk, won.pk}
    assert [row["id"] for row in losses["results"]] == [lost.pk]
    assert detail["position"] == loser.pk and detail["symbol"] == loser.instrument.symbol
    assert detail["outcome"] == "loss" and detail["signal_evolution"] == "Falsified"
    assert detail["realised_pnl"] == str(loser.realised_pnl) and detail["exit_reason"] == "stop"
    assert detail["critique"].startswith("The entry followed the trend")
    assert detail["lessons"] == ["Take partial profit once the move reaches 1R."]
    assert detail["account"] == loser.account_id and detail["is_replay"] is False


def test_trade_reviews_are_filtered_by_account_and_a_bad_outcome_is_refused(viewer):
    mine = TradeReviewFactory(position=position_on_path(STOPPED))
    TradeReviewFactory(position=position_on_path(RISING))
    client = api(viewer)

    by_account = client.get("/api/trade-reviews/", {"account": str(mine.position.account_id)}).json()
    refused = client.get("/api/trade-reviews/", {"outcome": "draw"})

    assert [row["id"] for row in by_account["results"]] == [mine.pk]
    assert refused.status_code == 400 and "outcome 'draw' is not one of win, loss, scratch" in refused.json()["detail"]


def test_any_authenticated_user_reads_them(outsider):
    RetrospectiveReportFactory()

    assert api(outsider).get("/api/reviews/").status_code == 200


def _schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def test_the_schema_documents_each_route_its_filters_and_errors(db):
    schema = _schema()

    def operation(path: str) -> dict:
        return schema["paths"][path]["get"]

    def filters(path: str) -> set[str]:
        return {p["name"] for p in operation(path).get("parameters", []) if p["in"] == "query"}

    assert filters("/api/reviews/") == {"horizon", "account", "strategy", "status", "page"}
    assert filters("/api/position-retrospectives/") == {"account", "position", "page"}
    assert filters("/api/trade-reviews/") == {"account", "outcome", "page"}
    for path, statuses in {
        "/api/reviews/": {"400", "401", "404", "429"},
        "/api/reviews/{report_id}/": {"401", "404", "429"},
        "/api/position-retrospectives/": {"400", "401", "404", "429"},
        "/api/trade-reviews/": {"400", "401", "404", "429"},
        "/api/trade-reviews/{review_id}/": {"401", "404", "429"},
    }.items():
        responses = operation(path)["responses"]
        assert {code for code in responses if code.startswith("4")} == statuses, path
    detail = schema["components"]["schemas"]["ReportDetailOutput"]["properties"]
    assert {"hard", "narrative", "ungrounded", "net", "confidence"} <= set(detail)
