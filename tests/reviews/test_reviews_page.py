"""FATE > Reviews, a report in full and its diff: every section a person reads, from reports the
factory builds with a realistic hard part, for the viewer and the approver alike; the empty state;
the grounding check's flags beside the narrative; the refusals and their words."""

from __future__ import annotations

import datetime as dt
import html
import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from reviews.models import RetrospectiveReport
from tests.factories import AccountFactory, position_on_path
from tests.factories.reviews import (
    DEFAULT_END,
    RetrospectiveReportFactory,
    TradeReviewFactory,
    hard_part,
    position_row,
)
from trading.book.accounts import default_account, replay_account
from trading.models import Strategy
from vocabulary.money import format_money

pytestmark = pytest.mark.django_db
URL = "/reviews/"
GAVE_BACK = ["100", "100", "102", "105", "107", "108", "106", "104", "102", "101.5"]
STOPPED = ["100", "100", "97", "94", "92"]


@pytest.fixture(params=["viewer", "approver"])
def reader(request) -> Client:
    """Both roles read the same pages."""
    user = request.getfixturevalue(request.param)
    client = Client()
    client.force_login(user)
    return client


def page(client: Client, url: str = URL, **params) -> tuple[int, str]:
    response = client.get(url, params)
    return response.status_code, response.content.decode()


def section(text: str, element_id: str) -> str:
    """The markup of the element with ``element_id`` up to its closing tag of the same name."""
    match = re.search(rf'<(\w+)[^>]*\bid="{re.escape(element_id)}"[^>]*>', text)
    assert match, f"no element #{element_id} on the page"
    tag, start = match.group(1), match.start()
    depth, position = 0, start
    for found in re.finditer(rf"<(/?){tag}\b[^>]*>", text[start:]):
        depth += -1 if found.group(1) else 1
        if depth == 0:
            position = start + found.end()
            break
    return text[start:position]


def inr(amount: str) -> str:
    from decimal import Decimal

    return format_money(Decimal(amount), "INR")


def three_horizons(account=None) -> dict[str, RetrospectiveReport]:
    account = account or default_account()
    return {
        horizon: RetrospectiveReportFactory(horizon=horizon, account=account)
        for horizon in ("daily", "weekly", "epoch")
    }


# --- FATE > Reviews -------------------------------------------------------------------------------


def test_the_latest_daily_weekly_and_epoch_reviews_stand_side_by_side(reader):
    reports = three_horizons()
    hard = reports["weekly"].hard

    status, text = page(reader)

    assert status == 200
    for horizon, report in reports.items():
        card = section(text, f"review-{horizon}")
        assert f'data-report-url="/reviews/reports/{report.pk}/"' in card
        assert f'data-diff-url="/reviews/reports/{report.pk}/diff/"' in card
        assert inr(hard["attribution"]["net"]) in card
        assert "5 entries, 4 exits, 47 holds, 2 rejected" in card
        assert "debate 66.7%" in card and "(6 of 9)" in card
        assert "analysts 61.9%" in card and "(13 of 21)" in card  # 6+4+3 right of 9+7+5 calls
        assert "inaction better in 1 of 4 closed" in card and "25.0%" in card
        assert "score 0.6400" in card
        assert f'id="waterfall-{report.pk}"' in card and f'id="waterfall-{report.pk}-data"' in card
        for code in ("H-1", "H-3", "H-12", "H-15"):
            assert f'href="/reviews/heuristics/{code}/"' in card
        assert "insufficient data" in card and "demote" in card
    assert "vendor/plotly.min.js" in text and "js/reviews-charts.js" in text and "js/reviews-keys.js" in text


def test_the_waterfall_data_is_the_reports_own_rows_ending_in_the_net(reader):
    report = RetrospectiveReportFactory(horizon="weekly", account=default_account())

    _, text = page(reader)

    data = re.search(rf'<script id="waterfall-{report.pk}-data" type="application/json">(.*?)</script>', text, re.S)
    assert data
    (trace,) = json.loads(data.group(1))["data"]
    assert trace["type"] == "waterfall"
    assert trace["y"] == [row["label"] for row in report.hard["waterfall"]]
    assert trace["text"][-1] == inr(report.hard["attribution"]["net"]) and trace["measure"][-1] == "total"


def test_the_best_and_worst_positions_link_to_their_lifecycles(reader):
    account = default_account()
    winner = position_on_path(GAVE_BACK, account=account, horizon_sessions=20, close_by_hand="enough")
    loser = position_on_path(STOPPED, account=account)
    assert loser.exit_reason == "stop" and winner.realised_pnl > 0 > loser.realised_pnl
    RetrospectiveReportFactory(
        horizon="weekly", account=account, hard=hard_part(positions=[position_row(winner), position_row(loser)])
    )

    _, text = page(reader)

    card = section(text, "review-weekly")
    assert f'href="/reviews/positions/{winner.pk}/">{winner.instrument.symbol}</a>' in card
    assert f'href="/reviews/positions/{loser.pk}/">{loser.instrument.symbol}</a>' in card
    assert f'data-position-url="/reviews/positions/{loser.pk}/"' in card  # P: the worst first
    assert inr(str(loser.realised_pnl)) in card and "stop" in card


def test_positions_that_are_not_rows_of_the_book_are_named_but_not_linked(reader):
    RetrospectiveReportFactory(horizon="daily", account=default_account())  # synthetic ids 90001...

    _, text = page(reader)

    card = section(text, "review-daily")
    assert "RELIANCE" in card and "TCS" in card
    assert "/reviews/positions/9000" not in card
    assert 'data-position-url=""' in card


def test_only_the_latest_ready_review_of_a_horizon_is_shown(reader):
    account = default_account()
    older = RetrospectiveReportFactory(horizon="daily", account=account, period_end=DEFAULT_END - dt.timedelta(days=1))
    latest = RetrospectiveReportFactory(horizon="daily", account=account)
    RetrospectiveReportFactory(
        horizon="daily", account=account, period_end=DEFAULT_END + dt.timedelta(days=3), running=True
    )
    RetrospectiveReportFactory(
        horizon="daily", account=account, period_end=DEFAULT_END + dt.timedelta(days=4), failed=True
    )

    _, text = page(reader)

    card = section(text, "review-daily")
    assert f"/reviews/reports/{latest.pk}/" in card and f"/reviews/reports/{older.pk}/" not in card


def test_a_narrative_with_an_ungrounded_number_shows_the_flag_beside_its_line(reader):
    report = RetrospectiveReportFactory(horizon="weekly", account=default_account(), ungrounded_numbers=True)

    _, text = page(reader)

    card = section(text, "review-weekly")
    line = re.search(r'<li class="ungrounded">(.*?)</li>', card, re.S)
    assert line, "the flagged line is marked"
    assert "gains of 99999.99" in line.group(1)
    assert "⚑ 99999.99 is not in the hard part" in line.group(1)
    assert "⚑ 1 ungrounded number" in card
    assert report.ungrounded == [{"number": "99999.99", "where": "what_worked[0]"}]


def test_a_grounded_narrative_carries_no_flag(reader):
    RetrospectiveReportFactory(horizon="weekly", account=default_account())

    _, text = page(reader)

    card = section(text, "review-weekly")
    assert "Trend entries under H-1 carried the period" in card
    assert "ungrounded" not in card and "⚑" not in card


def test_the_calibration_alarm_shows_the_ece_figures_and_the_threshold(reader):
    RetrospectiveReportFactory(horizon="weekly", account=default_account(), hard=hard_part(calibration_alarm=True))

    _, text = page(reader)

    alarm = section(text, "calibration-alarm")
    assert "Calibration alarm" in alarm
    assert "0.3125" in alarm and "0.2810" in alarm and "0.25" in alarm and "64 resolved calls" in alarm


def test_no_alarm_is_shown_while_calibration_is_within_the_threshold(reader):
    three_horizons()

    _, text = page(reader)

    assert 'id="calibration-alarm"' not in text


def test_a_flagged_strategy_is_listed_with_its_reason(reader):
    Strategy.objects.create(
        name="Large-cap swing",
        philosophy="swing trades",
        flagged_on=dt.date(2025, 3, 14),
        flag_reason="inaction beat it in 80% of positions for 2 weekly reviews",
    )
    Strategy.objects.create(
        name="Retired one",
        philosophy="x",
        flagged_on=dt.date(2025, 3, 7),
        retired_at=dt.datetime(2025, 3, 10, tzinfo=dt.UTC),
    )

    _, text = page(reader)

    flags = section(text, "strategy-flags")
    assert "Large-cap swing" in flags and "14 Mar 2025" in flags and "80% of positions" in flags
    assert "Retired one" not in flags


def test_with_no_review_yet_the_page_says_when_the_first_runs_and_how_to_run_one(reader):
    status, text = page(reader)

    assert status == 200
    empty = section(text, "reviews-empty")
    assert "No review has run" in empty and "manage.py review" in empty
    for horizon in ("daily", "weekly", "epoch"):
        assert f"No {horizon} review of this book yet" in section(text, f"review-{horizon}")
    assert re.search(r"The next one runs \w{3} \d{2} \w{3} \d{4}, 17:00", section(text, "review-daily"))
    assert re.search(r"The next one runs Fri \d{2} \w{3} \d{4}, 17:30", section(text, "review-weekly"))
    assert "an epoch runs once 30 days have passed since the last" in section(text, "review-epoch")
    assert "manage.py review --horizon weekly" in empty
    assert 'id="keys-hint"' not in text and "reviews-charts.js" not in text


def test_a_switched_off_schedule_says_so(reader, settings):
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "WEEKLY_ENABLED": False}

    _, text = page(reader)

    assert "DESK_REVIEW_WEEKLY=0" in section(text, "review-weekly")


def test_a_replay_book_is_selectable_and_the_live_book_is_the_default(reader):
    live = three_horizons()
    replay = replay_account("Large-cap swing")
    replayed = RetrospectiveReportFactory(horizon="weekly", account=replay)

    _, default = page(reader)
    _, chosen = page(reader, account=str(replay.pk))

    assert f"/reviews/reports/{live['weekly'].pk}/" in default and f"/reviews/reports/{replayed.pk}/" not in default
    assert f"/reviews/reports/{replayed.pk}/" in chosen and f"/reviews/reports/{live['weekly'].pk}/" not in chosen
    assert "No daily review of this book yet" in chosen
    assert f'<option value="{replay.pk}" selected>' in chosen


def test_an_unknown_book_is_refused_with_the_reason_over_the_live_book(reader):
    three_horizons()

    status, text = page(reader, account="999999")

    assert status == 400
    assert "There is no such account: &#x27;999999&#x27;; showing the live book." in text
    assert 'id="review-weekly"' in text


def test_recent_position_loss_and_testament_reviews_are_listed(reader):
    account = default_account()
    position = position_on_path(STOPPED, account=account)
    retrospective = RetrospectiveReportFactory(
        horizon="position", account=account, position=position, ungrounded_numbers=True
    )
    loss = RetrospectiveReportFactory(horizon="loss", account=account, position=position)

    _, text = page(reader)

    events = section(text, "event-reviews")
    assert "Position retrospective" in events and "Loss review" in events
    assert f'href="/reviews/positions/{position.pk}/"' in events
    assert f'href="/reviews/reports/{retrospective.pk}/"' in events and f'href="/reviews/reports/{loss.pk}/"' in events
    assert "⚑ 1 ungrounded" in events


def test_anonymous_is_sent_to_log_in(client):
    response = client.get(URL)

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_nav_leads_to_the_reviews_and_keeps_performance(reader):
    _, text = page(reader, reverse("dashboard"))

    assert '<a href="/reviews/">Reviews</a>' in text and '<a href="/reviews/performance/">Performance</a>' in text
    assert "reviews-keys.js" not in text  # the keys are the review pages' own


# --- a report in full -------------------------------------------------------------------------


def test_a_report_shows_every_section_of_its_hard_part(reader):
    account = default_account()
    winner = position_on_path(GAVE_BACK, account=account, horizon_sessions=20, close_by_hand="enough")
    report = RetrospectiveReportFactory(
        horizon="weekly",
        account=account,
        hard=hard_part(positions=[position_row(winner, regret="812.40")]),
        confidence="0.4500",
        model_used="offline-rules",
        tier="quick",
    )
    hard = report.hard

    status, text = page(reader, f"/reviews/reports/{report.pk}/")

    assert status == 200
    assert "08 Mar 2025 → 14 Mar 2025" in section(text, "report-period")
    assert "offline-rules" in section(text, "report-model") and "quick tier" in section(text, "report-model")
    assert section(text, "report-confidence").endswith("0.45</span>")
    assert inr(hard["attribution"]["net"]) in section(text, "report-net")
    attribution = section(text, "attribution")
    for row in hard["waterfall"]:
        assert html.escape(row["label"]) in attribution and inr(row["amount"]) in attribution
    assert inr(hard["attribution"]["operational_cost"]) in section(text, "operational-cost")
    assert hard["attribution"]["risk_adjusted"] in section(text, "risk-adjusted")
    actions = section(text, "actions")
    assert "by target" in actions and "by manual" in actions and ">47<" in actions
    positions = section(text, "positions")
    assert f'href="/reviews/positions/{winner.pk}/"' in positions and inr("812.40") in positions
    assert "25.0%" not in section(text, "inaction-superiority")  # one closed winner: inaction never better
    assert section(text, "inaction-superiority").endswith("0.0%</td>")
    accuracy = section(text, "accuracy")
    assert "Technical analyst" in accuracy and "66.7%" in accuracy and "Sentiment analyst" in accuracy
    assert "50.0%" in section(text, "levels-hit-rate") and "83.3%" in section(text, "forecast-coverage")
    audit = section(text, "heuristic-audit")
    assert 'href="/reviews/heuristics/H-3/"' in audit and inr("-2100.00") in audit and "33.3%" in audit
    calibration = section(text, "calibration")
    assert "Within the threshold 0.25" in calibration and "0.0840" in calibration and "Technical" in calibration
    assert "0.6400" in section(text, "effectiveness-score")
    narrative = section(text, "narrative")
    for part in (
        "What worked",
        "What failed",
        "Hindsight",
        "Playbook proposals",
        "Do not enter against a falling sector index.",
    ):
        assert part in narrative
    assert "The narrative cites only figures of the hard part." in section(text, "report-flags")
    assert f'id="waterfall-{report.pk}"' in text and "reviews-charts.js" in text
    assert f'href="/reviews/?account={account.pk}"' in section(text, "reviews-back")


def test_a_report_with_ungrounded_numbers_lists_them_and_marks_their_lines(reader):
    report = RetrospectiveReportFactory(horizon="daily", ungrounded_numbers=True)

    _, text = page(reader, f"/reviews/reports/{report.pk}/")

    assert "⚑ 1 ungrounded number in the narrative" in section(text, "report-flags")
    listed = section(text, "ungrounded")
    assert "99999.99" in listed and "what_worked[0]" in listed
    assert "⚑ 99999.99 is not in the hard part" in section(text, "narrative")


def test_a_quiet_period_reads_as_nothing_done_not_as_missing(reader):
    report = RetrospectiveReportFactory(horizon="daily", hard=hard_part(quiet=True))

    status, text = page(reader, f"/reviews/reports/{report.pk}/")

    assert status == 200
    assert "No position was held in this period." in section(text, "positions")
    assert "No heuristic was cited in this period." in section(text, "heuristic-audit")
    assert inr("0.00") in section(text, "report-net")
    assert section(text, "debate-rate").endswith("—</td>")


def test_a_position_retrospective_shows_its_lifecycle_and_links_the_lifecycle_page(reader):
    position = position_on_path(GAVE_BACK, horizon_sessions=20, close_by_hand="enough")
    lifecycle = {
        "exit_session": 8,
        "path": ["0", "180.5", "480.2"],
        "trajectory": [{"session": 1, "pnl": "180.50"}, {"session": 3, "pnl": "480.20"}],
        "final_pnl": "150.10",
        "vs_inaction": "150.10",
        "inaction_better": False,
        "peak_pnl": "780.30",
        "peak_session": 4,
        "regret": "630.20",
        "drawdown_from_peak": "630.20",
        "optimal_exit": {"session": 4, "mark": "108", "price": "107.95", "exit_costs": "25.10", "pnl": "760.10"},
    }
    report = RetrospectiveReportFactory(
        horizon="position",
        account=position.account,
        position=position,
        hard={**hard_part(positions=[position_row(position)]), "lifecycle": lifecycle},
    )

    _, text = page(reader, f"/reviews/reports/{report.pk}/")

    life = section(text, "lifecycle")
    assert inr("630.20") in life and inr("760.10") in life and "session 4" in life
    assert f'href="/reviews/positions/{position.pk}/"' in life


def test_a_running_or_failed_report_says_so_instead_of_an_empty_report(reader):
    running = RetrospectiveReportFactory(running=True)
    failed = RetrospectiveReportFactory(failed=True, attempts=2)

    _, still = page(reader, f"/reviews/reports/{running.pk}/")
    _, broken = page(reader, f"/reviews/reports/{failed.pk}/")

    assert "still being written" in section(still, "report-state")
    assert "failed after 2 attempts: the model&#x27;s reply failed validation twice" in section(broken, "report-state")


def test_an_unknown_report_is_404(reader):
    assert page(reader, "/reviews/reports/999999/")[0] == 404
    assert page(reader, "/reviews/reports/999999/diff/")[0] == 404


# --- the diff -----------------------------------------------------------------------------------


def test_the_diff_compares_with_the_previous_ready_review_of_the_same_horizon_and_book(reader):
    account = default_account()
    earlier = RetrospectiveReportFactory(
        horizon="weekly",
        account=account,
        period_end=DEFAULT_END - dt.timedelta(days=7),
        hard=hard_part(
            gains="10000.00",
            heuristics=[
                {
                    "code": "H-3",
                    "citations": 2,
                    "total_pnl": "-100.00",
                    "win_rate": "0.5000",
                    "average_pnl": "-50.00",
                    "recommendation": "INSUFFICIENT_DATA",
                }
            ],
        ),
    )
    RetrospectiveReportFactory(horizon="daily", account=account, period_end=DEFAULT_END - dt.timedelta(days=1))
    RetrospectiveReportFactory(
        horizon="weekly", account=AccountFactory(), period_end=DEFAULT_END - dt.timedelta(days=2)
    )
    RetrospectiveReportFactory(
        horizon="weekly", account=account, period_end=DEFAULT_END - dt.timedelta(days=3), failed=True
    )
    later = RetrospectiveReportFactory(horizon="weekly", account=account)

    status, text = page(reader, f"/reviews/reports/{later.pk}/diff/")

    assert status == 200
    assert f'href="/reviews/reports/{earlier.pk}/">#{earlier.pk}</a>' in text
    assert "+" + inr("8450.00") in section(text, "net-change")
    money = section(text, "diff-money")
    assert inr("10000.00") in money and inr("18450.00") in money
    changed = section(text, "diff-heuristics")
    assert 'href="/reviews/heuristics/H-3/"' in changed and "insufficient data" in changed and "demote" in changed
    assert 'href="/reviews/heuristics/H-1/"' in changed  # new in the later audit
    assert "not audited" in changed
    assert "+0.0 pts" in section(text, "diff-rates") or "0.0 pts" in section(text, "diff-rates")


def test_the_first_review_of_a_horizon_has_nothing_to_diff_and_says_so(reader):
    first = RetrospectiveReportFactory(horizon="epoch", account=default_account())

    status, text = page(reader, f"/reviews/reports/{first.pk}/diff/")

    assert status == 200
    assert "There is no earlier ready epoch review of paper to compare this one with." in section(text, "no-diff")


def test_a_review_not_ready_has_no_diff_409(reader):
    running = RetrospectiveReportFactory(horizon="weekly", running=True)

    status, text = page(reader, f"/reviews/reports/{running.pk}/diff/")

    assert status == 409
    assert "This weekly review is running: there is nothing to compare until it is ready." in section(text, "no-diff")


# --- the thesis page shows its outcome -------------------------------------------------------------


def test_a_thesis_whose_position_closed_shows_its_outcome_and_lifecycle_link(reader):
    position = position_on_path(STOPPED)
    TradeReviewFactory(position=position)

    _, text = page(reader, reverse("thesis_detail", args=[position.thesis_id]))

    outcome = section(text, "thesis-outcome")
    assert inr(str(position.realised_pnl)) in outcome
    assert "loss" in outcome and "Falsified" in outcome and "stop" in outcome
    assert f'href="/reviews/positions/{position.pk}/"' in outcome


def test_a_thesis_without_a_closed_position_shows_no_outcome(reader):
    position = position_on_path(["100", "100", "101"])

    _, text = page(reader, reverse("thesis_detail", args=[position.thesis_id]))

    assert 'id="thesis-outcome"' not in text


def test_a_model_bill_left_out_for_want_of_a_rate_is_said_on_the_report(reader):
    report = RetrospectiveReportFactory(horizon="weekly", account=default_account())
    report.hard = {
        **report.hard,
        "inference_source": {
            "recorded": "0.750000",
            "currency": "USD",
            "rate": None,
            "counted": False,
            "note": "model calls cost 0.75 USD, not counted: set DESK_INFERENCE_RATE (INR per USD) to count them",
        },
    }
    report.save(update_fields=["hard"])

    status, text = page(reader, f"/reviews/reports/{report.pk}/")

    assert status == 200
    assert "model calls cost 0.75 USD, not counted: set DESK_INFERENCE_RATE" in section(text, "inference-source")
