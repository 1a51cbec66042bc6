"""The runs list: every run reachable a page at a time, filters that survive paging, a link from
each run to its thesis, and the JSON its live updates read, in a fixed number of queries."""

from __future__ import annotations

import datetime as dt
import json
import re

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories.book import ThesisFactory
from tests.factories.market import InstrumentFactory
from trading.models import Instrument, PipelineRun, Strategy, StrategyRun
from trading.pipeline.selectors import RUNS_PER_PAGE

DAY = dt.date(2026, 11, 20)


def _runs(instrument: Instrument, count: int, **fields) -> list[PipelineRun]:
    fields = {"as_of": DAY, "provider": "offline", "status": "completed", **fields}
    return PipelineRun.objects.bulk_create(PipelineRun(instrument=instrument, **fields) for _ in range(count))


def _shown(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr data-run="(\d+)"', html)]


def test_older_runs_are_reached_page_by_page_with_the_total(client, viewer, instrument):
    client.force_login(viewer)
    runs = _runs(instrument, 120)
    newest_first = sorted((run.pk for run in runs), reverse=True)

    first = client.get(reverse("run_list")).content.decode()
    last = client.get(reverse("run_list"), {"page": "3"}).content.decode()

    assert _shown(first) == newest_first[:RUNS_PER_PAGE]
    assert _shown(last) == newest_first[2 * RUNS_PER_PAGE :]  # the oldest run, unreachable before, is here
    assert "120 runs · page 1 of 3" in first
    assert 'href="?page=2" rel="next"' in first and 'href="?page=3" rel="last"' in first


def test_the_filters_survive_paging(client, viewer, instrument):
    client.force_login(viewer)
    failed = _runs(instrument, 60, status="failed", failure_reason="no bars")
    _runs(instrument, 30, status="completed")
    _runs(InstrumentFactory(symbol="TCS"), 10, status="failed")

    first = client.get(reverse("run_list"), {"status": "failed", "symbol": "reliance"}).content.decode()
    second = client.get(reverse("run_list"), {"status": "failed", "symbol": "RELIANCE", "page": "2"}).content.decode()

    assert "60 runs · page 1 of 2" in first
    assert 'href="?status=failed&amp;symbol=RELIANCE&amp;page=2" rel="next"' in first
    assert set(_shown(first) + _shown(second)) == {run.pk for run in failed}
    assert '<option value="failed" selected>' in second and '<option value="RELIANCE" selected>' in second


def test_runs_are_filtered_by_strategy_and_by_live_or_replay(client, viewer, instrument):
    client.force_login(viewer)
    strategy = Strategy.objects.create(name="swing", philosophy="p")
    live_run = StrategyRun.objects.create(strategy=strategy, as_of=DAY)
    replay_run = StrategyRun.objects.create(strategy=strategy, as_of=DAY, is_replay=True)
    [live] = _runs(instrument, 1, strategy_run=live_run)
    [replayed] = _runs(instrument, 1, strategy_run=replay_run, is_replay=True)
    [by_hand] = _runs(instrument, 1)

    def shown(**query) -> set[int]:
        return set(_shown(client.get(reverse("run_list"), query).content.decode()))

    assert shown() == {live.pk, by_hand.pk}  # live runs by default, as before
    assert shown(strategy=str(strategy.pk)) == {live.pk}
    assert shown(strategy=str(strategy.pk), kind="replay") == {replayed.pk}
    assert shown(kind="all") == shown(replay="1") == {live.pk, replayed.pk, by_hand.pk}
    assert shown(kind="replay") == {replayed.pk}


def test_a_refused_filter_is_said_and_left_out_while_the_others_apply(client, viewer, instrument):
    client.force_login(viewer)
    [failed] = _runs(instrument, 1, status="failed")
    _runs(instrument, 1, status="completed")

    response = client.get(reverse("run_list"), {"status": "failed", "kind": "sideways", "strategy": "x'1"})

    html = response.content.decode()
    assert response.status_code == 400
    assert "kind &#x27;sideways&#x27; is not one of live, replay, all; not applied." in html
    assert "strategy &quot;x&#x27;1&quot; is not a strategy&#x27;s id; not applied." in html
    assert _shown(html) == [failed.pk]


def test_each_run_links_to_its_thesis_and_its_strategy(client, viewer, instrument):
    client.force_login(viewer)
    strategy = Strategy.objects.create(name="swing", philosophy="p")
    thesis = ThesisFactory(instrument=instrument, run__as_of=DAY)
    PipelineRun.objects.filter(pk=thesis.run_id).update(
        strategy_run=StrategyRun.objects.create(strategy=strategy, as_of=DAY)
    )
    [without] = _runs(instrument, 1)

    html = client.get(reverse("run_list")).content.decode()

    row = html.split(f'<tr data-run="{thesis.run_id}"', 1)[1].split("</tr>", 1)[0]
    assert f'href="{reverse("thesis_detail", args=[thesis.pk])}">LONG · 0.65</a>' in row
    assert f'href="{reverse("strategy_list")}#strategy-{strategy.pk}">swing</a>' in row
    other = html.split(f'<tr data-run="{without.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "thesis-link" not in other


def test_the_live_json_is_the_same_page_of_the_same_filters(client, viewer, instrument):
    client.force_login(viewer)
    _runs(instrument, 70, status="failed", failure_reason='<img src=x onerror="alert(1)">')
    _runs(instrument, 5, status="running")
    thesis = ThesisFactory(instrument=instrument, run__as_of=DAY, run__status="completed")

    body = client.get(reverse("run_list_rows"), {"status": "failed", "page": "2"}).json()
    mine = client.get(reverse("run_list_rows"), {"status": "completed"}).json()

    assert (body["total"], body["page"], body["pages"], len(body["runs"])) == (70, 2, 2, 20)
    assert {run["status"] for run in body["runs"]} == {"failed"}
    assert body["runs"][0]["failure_reason"] == '<img src=x onerror="alert(1)">'  # data; the page sets it as text
    [row] = mine["runs"]
    assert row["thesis"] == {
        "id": thesis.pk,
        "url": reverse("thesis_detail", args=[thesis.pk]),
        "label": "LONG · 0.65",
        "risk_approved": True,
    }
    assert row["url"] == reverse("run_detail", args=[thesis.run_id]) and row["finished"] is True


def test_the_page_points_its_live_updates_at_its_own_filters_and_page(client, viewer, instrument):
    client.force_login(viewer)
    _runs(instrument, 60, status="failed")

    html = client.get(reverse("run_list"), {"status": "failed", "page": "2"}).content.decode()

    assert f'data-live-url="{reverse("run_list_rows")}?status=failed&amp;page=2"' in html
    assert 'src="/static/js/runs.js"' in html


def _queries(client, url: str, query: dict) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, query).status_code == 200
    return len(captured.captured_queries)


def test_the_page_and_its_json_cost_the_same_queries_for_five_runs_as_for_three_hundred(client, viewer, instrument):
    client.force_login(viewer)
    strategy = Strategy.objects.create(name="swing", philosophy="p")
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=DAY)
    _runs(instrument, 5, strategy_run=strategy_run)
    ThesisFactory(instrument=instrument, run__as_of=DAY)
    query = {"kind": "all", "page": "1"}
    few = [_queries(client, reverse(name), query) for name in ("run_list", "run_list_rows")]

    _runs(instrument, 300, strategy_run=strategy_run)
    for _ in range(3):
        ThesisFactory(instrument=instrument, run__as_of=DAY)
    many = [_queries(client, reverse(name), query) for name in ("run_list", "run_list_rows")]
    later = [_queries(client, reverse(name), {**query, "page": "4"}) for name in ("run_list", "run_list_rows")]

    assert many == few == later


def test_the_json_answers_a_refused_filter_with_a_400_and_the_reason(client, viewer, instrument):
    client.force_login(viewer)
    _runs(instrument, 2, status="failed")

    response = client.get(reverse("run_list_rows"), {"status": "sideways"})

    body = json.loads(response.content)
    assert response.status_code == 400
    [problem] = body["problems"]
    assert problem == "status 'sideways' is not one of queued, running, completed, degraded, failed, held; not applied"
    assert body["total"] == 2
