"""A long replay's risk checks must not slow down as its account's history grows: the book's live
rows (open positions, working orders, pending theses) are found through an index on the account
and the status, not by walking every row the account or the instrument ever had."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from trading.book.accounts import default_account
from trading.models import Order, Position, Thesis

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's planner, which keeps no statistics")


def _plan(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return " | ".join(str(row[-1]) for row in cursor.fetchall())


@pytest.mark.django_db
def test_the_live_book_is_read_through_the_account_and_status_index():
    account = default_account()
    reads = {
        "open positions": Position.objects.filter(account=account, status=Position.Status.OPEN),
        "working orders": Order.objects.filter(account=account, status=Order.Status.WORKING),
        "an instrument's open position": Position.objects.filter(
            account=account, instrument_id=1, status=Position.Status.OPEN
        ),
        "an instrument's working order": Order.objects.filter(
            account=account, instrument_id=1, status=Order.Status.WORKING
        ),
        "an instrument's pending thesis": Thesis.objects.filter(
            account=account, instrument_id=1, status=Thesis.Status.PENDING
        ).exclude(expires_at__lte=timezone.now()),
    }
    for read, queryset in reads.items():
        plan = _plan(queryset.values("pk"))
        assert "status=?" in plan and "account_id=?" in plan, f"{read}: {plan}"
