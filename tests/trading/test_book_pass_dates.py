"""A bar dated in the future must not poison the daily book pass, and an operator can repair the
record of passes when one was recorded on a bad date."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.trading.book_rows import SESSION, book_account, instrument_at, next_session, pending, working_order
from trading.book.broker import book_catch_up
from trading.models import AuditEvent, BookPass, Order

FAR_FUTURE = dt.date(9999, 12, 31)


@pytest.fixture
def book(db):
    """An account with a working order placed on SESSION, the next session's bar, and a poisoned
    bar dated 9999-12-31 (written directly, as an import before the date check could)."""
    account = book_account()
    instrument = instrument_at("ABC", day=SESSION)
    order = working_order(pending(account, instrument, quantity=10), account, placed_on=SESSION)
    instrument_at("ABC", day=next_session(SESSION))
    instrument_at("ABC", day=FAR_FUTURE)
    return account, instrument, order


def test_the_book_pass_never_processes_or_records_a_session_after_today(book):
    account, _, order = book

    passes = book_catch_up(account=account, until=FAR_FUTURE)

    assert [p["as_of"] for p in passes] == [next_session(SESSION).isoformat()]
    assert list(BookPass.objects.filter(account=account).values_list("date", flat=True)) == [next_session(SESSION)]
    order.refresh_from_db()
    assert order.status == Order.Status.FILLED and order.filled_on == next_session(SESSION)


def test_a_pass_recorded_after_today_does_not_stop_the_book(book):
    account, _, order = book
    BookPass.objects.create(account=account, date=FAR_FUTURE)  # recorded before the guard existed

    passes = book_catch_up(account=account, until=timezone.localdate())

    assert [p["as_of"] for p in passes] == [next_session(SESSION).isoformat()]
    order.refresh_from_db()
    assert order.status == Order.Status.FILLED


def _passes(account) -> list[dt.date]:
    return list(BookPass.objects.filter(account=account).order_by("date").values_list("date", flat=True))


def test_the_repair_command_dry_run_lists_the_passes_and_deletes_nothing(book, capsys):
    account, _, _ = book
    for day in (SESSION, next_session(SESSION), FAR_FUTURE):
        BookPass.objects.create(account=account, date=day, filled=1)

    call_command("book_pass_repair", "--account", account.name, "--after", SESSION.isoformat(), "--dry-run")

    out = capsys.readouterr().out
    assert f"{next_session(SESSION)}" in out and "9999-12-31" in out and "dry run" in out
    assert _passes(account) == [SESSION, next_session(SESSION), FAR_FUTURE]
    assert not AuditEvent.objects.filter(action="book_pass_repair").exists()


def test_the_repair_command_deletes_the_passes_after_the_date_and_audits_it(book, capsys):
    account, _, _ = book
    for day in (SESSION, next_session(SESSION), FAR_FUTURE):
        BookPass.objects.create(account=account, date=day, filled=1)

    call_command("book_pass_repair", "--account", account.name, "--after", SESSION.isoformat())

    assert _passes(account) == [SESSION]
    event = AuditEvent.objects.get(action="book_pass_repair")
    assert event.target == f"account {account.name}"
    assert event.details["deleted"] == [next_session(SESSION).isoformat(), "9999-12-31"]
    assert "deleted 2 book pass(es)" in capsys.readouterr().out
    # The next pass processes the freed session again (nothing double-fills: the order is done).
    assert [p["as_of"] for p in book_catch_up(account=account, until=FAR_FUTURE)] == [next_session(SESSION).isoformat()]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--account", "Nobody", "--after", "2026-01-01"], "no account named 'Nobody'"),
        (["--account", "Desk", "--after", "soon"], "--after 'soon' is not a date (YYYY-MM-DD)"),
    ],
)
def test_the_repair_command_refuses_bad_arguments_and_changes_nothing(book, args, message):
    account, _, _ = book
    BookPass.objects.create(account=account, date=FAR_FUTURE)

    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("book_pass_repair", *args)

    assert _passes(account) == [FAR_FUTURE]
