"""The runs page costs the same whatever the history: its model-call totals are summed for the
runs it shows, not for every run ever made."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.models import ModelCall
from trading.models import PipelineRun


def _runs(instrument, count: int, *, calls_each: int = 3) -> list[PipelineRun]:
    runs = PipelineRun.objects.bulk_create(
        PipelineRun(instrument=instrument, as_of=dt.date(2026, 11, 20), provider="offline", status="completed")
        for _ in range(count)
    )
    ModelCall.objects.bulk_create(
        ModelCall(
            run=run,
            role="technical",
            symbol=instrument.symbol,
            tier="default",
            provider="offline",
            model="rules",
            prompt_key=f"{run.pk}-{n}",
            system="s",
            prompt="p",
            input_tokens=100 * (n + 1),
            output_tokens=10,
            cost=Decimal("0.01"),
            ok=True,
        )
        for run in runs
        for n in range(calls_each)
    )
    return runs


def _runs_page_queries(client) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(reverse("run_list")).status_code == 200
    return [query["sql"] for query in captured.captured_queries]


def test_the_runs_page_makes_as_many_queries_for_fifty_runs_as_for_five(client, viewer, instrument):
    client.force_login(viewer)
    _runs(instrument, 5)
    five = len(_runs_page_queries(client))

    _runs(instrument, 45)
    fifty = len(_runs_page_queries(client))

    assert fifty == five


def test_each_run_shows_its_own_token_total(client, viewer, instrument):
    client.force_login(viewer)
    with_calls, without_calls = _runs(instrument, 1, calls_each=3)[0], _runs(instrument, 1, calls_each=0)[0]

    body = client.get(reverse("run_list")).content.decode()

    rows = {row.split('">#', 1)[1].split("<", 1)[0]: row for row in body.split("<tr data-run=")[1:]}
    assert '<td class="num">630</td>' in rows[str(with_calls.pk)]  # (100 + 200 + 300) input + 3 x 10 output
    assert '<td class="num">0</td>' in rows[str(without_calls.pk)]


def test_the_runs_page_sums_the_model_calls_of_the_runs_it_shows_only(client, viewer, instrument):
    client.force_login(viewer)
    _runs(instrument, 120, calls_each=1)

    summing = [sql for sql in _runs_page_queries(client) if "agents_modelcall" in sql]

    assert len(summing) == 1
    assert '"run_id" IN (' in summing[0]
