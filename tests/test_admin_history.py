"""The admin never deletes the desk's history: no delete view, no "Delete selected" action."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.urls import reverse

from agents.models import ModelCall
from reviews.models import TradeReview
from reviews.services import position_review
from trading.book import broker
from trading.book.approvals import thesis_approve
from trading.models import (
    AnalystNoteRecord,
    AuditEvent,
    BookPass,
    DailyBar,
    DebateRecord,
    FeatureSnapshot,
    Order,
    PipelineRun,
    Position,
    PositionMark,
    StageRun,
    Thesis,
)

HISTORY = [
    Thesis, Order, Position, PositionMark, PipelineRun, StageRun, AuditEvent, BookPass, ModelCall, TradeReview,
    AnalystNoteRecord, DebateRecord, FeatureSnapshot,
]


def _next_session(day: dt.date) -> dt.date:
    day += dt.timedelta(days=1)
    while day.weekday() >= 5:
        day += dt.timedelta(days=1)
    return day


def _bar(instrument, day: dt.date, price: str) -> None:
    close = Decimal(price)
    DailyBar.objects.create(
        instrument=instrument, date=day, open=close, high=close + 1, low=close - 1, close=close, volume=100_000
    )


@pytest.fixture
def history(pending_thesis, approver, settings):
    """One of every history row, made by the real services: run, stages, model calls, thesis,
    approval, fill, a marked session of the book pass, a close by hand and its review."""
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    Thesis.objects.filter(pk=pending_thesis.pk).update(
        direction="LONG", entry=Decimal("100.00"), stop=Decimal("90.00"), target=Decimal("120.00"), quantity=10
    )
    pending_thesis.refresh_from_db()
    fill_day = _next_session(pending_thesis.run.as_of)
    _bar(pending_thesis.instrument, fill_day, "100.00")
    order = thesis_approve(thesis=pending_thesis, user=approver)
    position = broker.order_try_fill(order=order, as_of=fill_day)
    mark_day = _next_session(fill_day)
    _bar(pending_thesis.instrument, mark_day, "101.00")
    broker.book_catch_up(account=order.account, until=mark_day)
    closed = broker.position_close_by_hand(position=position, user=approver, comment="admin history test")
    position_review(position=closed)
    counts = {model: model.objects.count() for model in HISTORY}
    assert all(counts.values()), counts
    return counts


def _url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


# Each test walks every history model (the fixture runs a whole pipeline, so it is built once per
# test, not once per model) and names the models that fail.


def test_it_offers_no_delete_selected_action_on_any_history_changelist(client, desk_admin, history):
    client.force_login(desk_admin)

    pages = {model.__name__: client.get(_url(model, "changelist")) for model in HISTORY}

    assert {name: page.status_code for name, page in pages.items() if page.status_code != 200} == {}
    assert [name for name, page in pages.items() if b"delete_selected" in page.content] == []


def test_it_refuses_the_delete_view_of_every_history_row(client, desk_admin, history):
    client.force_login(desk_admin)
    rows = {model: model.objects.first() for model in HISTORY}

    answers = {
        model.__name__: (
            client.get(_url(model, "delete", row.pk)).status_code,
            client.post(_url(model, "delete", row.pk), {"post": "yes"}).status_code,
        )
        for model, row in rows.items()
    }

    assert {name: codes for name, codes in answers.items() if codes != (403, 403)} == {}
    assert [model.__name__ for model, row in rows.items() if not model.objects.filter(pk=row.pk).exists()] == []


def test_it_deletes_nothing_when_delete_selected_is_forced_by_post(client, desk_admin, history):
    client.force_login(desk_admin)

    for model in HISTORY:
        pks = [str(pk) for pk in model.objects.values_list("pk", flat=True)]
        # "post": "yes" is the confirmation page's answer: the request that would really delete.
        client.post(_url(model, "changelist"), {"action": "delete_selected", "_selected_action": pks, "post": "yes"})

    assert {model: model.objects.count() for model in HISTORY} == history
