"""Bars streamed to the database: one COPY kept open from batch to batch on PostgreSQL (one INSERT
per batch elsewhere), closed for any other statement, cancelled on an error; stored days looked up
only where a batch reaches into an instrument's stored span. The answers stay those of a batch
written and checked one at a time: these tests run on either database."""

from __future__ import annotations

import datetime as dt
import gc
from pathlib import Path

import pytest

from trading.market.calendar import sessions
from trading.market.imports import BarOptions, ImportFileError, import_bars
from trading.models import AuditEvent, DailyBar, Instrument

HEADER = "symbol,date,open,high,low,close,volume\n"


def _days(count: int, start: dt.date = dt.date(2024, 1, 1)) -> list[dt.date]:
    return sessions("NSE", start, start + dt.timedelta(days=count * 2 + 30))[:count]


def _rows(symbol: str, days: list[dt.date]) -> str:
    return "".join(f"{symbol},{day},100,105,99,104,1000\n" for day in days)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bars.csv"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr("trading.market.imports.BATCH_ROWS", 4)


def test_a_day_written_earlier_in_the_file_under_another_spelling_is_a_duplicate(instrument, tmp_path, small_batches):
    days = _days(10)
    # RELIANCE's ten bars go out in batches; NSE:RELIANCE is the same instrument, whose day 3 the
    # stream already carried: the later batch reaches into the span written and is looked up.
    text = HEADER + _rows("RELIANCE", days) + _rows("NSE:RELIANCE", [days[2]])

    report = import_bars(_write(tmp_path, text))

    assert report.problem_lines() == [
        f"{tmp_path / 'bars.csv'}:12: duplicate date {days[2]} for NSE:RELIANCE: already stored"
    ]
    assert report.written == 0 and not DailyBar.objects.exists() and not AuditEvent.objects.exists()


def test_a_stored_day_inside_the_files_span_is_refused_in_any_batch(instrument, tmp_path, small_batches):
    days = _days(12)
    DailyBar.objects.create(instrument=instrument, date=days[9], open=100, high=105, low=99, close=104, volume=1)

    report = import_bars(_write(tmp_path, HEADER + _rows("RELIANCE", days)))

    assert [p.line for p in report.problems] == [11]
    assert report.problems[0].reason == f"duplicate date {days[9]} for RELIANCE: already stored"
    assert DailyBar.objects.count() == 1


def test_days_beyond_the_stored_span_are_written_without_a_lookup(instrument, tmp_path, small_batches):
    days = _days(12)
    DailyBar.objects.create(instrument=instrument, date=days[0], open=100, high=105, low=99, close=104, volume=1)

    report = import_bars(_write(tmp_path, HEADER + _rows("RELIANCE", days[1:])))

    assert report.ok and report.written == 11
    assert list(DailyBar.objects.order_by("date").values_list("date", flat=True)) == days


def test_an_error_in_mid_stream_writes_nothing_and_leaves_the_connection_usable(
    instrument, tmp_path, small_batches, monkeypatch
):
    # Lines decoded a few at a time, so that the bad one is met after batches were sent.
    monkeypatch.setattr("trading.market.imports.READ_BLOCK", 64)
    path = tmp_path / "bars.csv"
    good = (HEADER + _rows("RELIANCE", _days(12))).encode()
    path.write_bytes(good + b"RELIANCE,2024-03-01,100,105,99,104,\xff\n")

    with pytest.raises(ImportFileError, match=f"{path}:14: not UTF-8 text"):
        import_bars(path)

    assert not DailyBar.objects.exists()
    assert import_bars(_write(tmp_path, HEADER + _rows("RELIANCE", _days(3)))).written == 3


def test_an_instrument_created_mid_stream_is_saved_between_batches(instrument, tmp_path, small_batches):
    days = _days(6)
    text = HEADER + _rows("RELIANCE", days) + _rows("NEWCO", days)

    report = import_bars(_write(tmp_path, text), options=BarOptions(create_missing=True))

    assert report.ok and report.written == 12
    assert DailyBar.objects.filter(instrument__symbol="NEWCO").count() == 6
    assert Instrument.objects.filter(symbol="NEWCO", exchange="NSE").exists()


def test_the_garbage_collector_thresholds_are_restored_after_an_import(instrument, tmp_path):
    before = gc.get_threshold()

    assert import_bars(_write(tmp_path, HEADER + _rows("RELIANCE", _days(3)))).ok
    assert gc.get_threshold() == before

    with pytest.raises(ImportFileError):
        bad = tmp_path / "bad.csv"
        bad.write_bytes(HEADER.encode() + b"RELIANCE,2024-01-02,1,1,1,1,\xff\n")
        import_bars(bad)
    assert gc.get_threshold() == before
