"""``import_instruments``: a universe from a file, all or nothing, known instruments updated."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from trading.market.imports import import_instruments
from trading.models import AuditEvent, Instrument

HEADER = "symbol,exchange,name,sector,tick_size,lot_size,currency,isin\n"
ROWS = (
    "INFY,NSE,Infosys,IT,0.05,1,INR,INE009A01021\n"
    "AAPL,NASDAQ,Apple Inc.,Technology,0.01,1,USD,US0378331005\n"
    "NIFTYBEES,NSE,Nippon India ETF Nifty 50 BeES,ETF,0.01,1,INR,\n"
)


def write(tmp_path: Path, text: str, name: str = "instruments.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_it_creates_the_instruments_of_a_file_and_audits_it(db, tmp_path):
    report = import_instruments(write(tmp_path, HEADER + ROWS))

    assert report.ok and report.written == 3
    apple = Instrument.objects.get(exchange="NASDAQ", symbol="AAPL")
    assert (apple.name, apple.currency, apple.tick_size, apple.isin) == (
        "Apple Inc.",
        "USD",
        Decimal("0.01"),
        "US0378331005",
    )
    assert Instrument.objects.get(symbol="NIFTYBEES").isin == ""
    event = AuditEvent.objects.get(action="import_instrument")
    assert sorted(event.details["created"]) == ["NASDAQ:AAPL", "NSE:INFY", "NSE:NIFTYBEES"]


def test_the_isin_column_may_be_left_out(db, tmp_path):
    report = import_instruments(
        write(tmp_path, "Symbol,Exchange,Name,Sector,Tick Size,Lot Size,Currency\nINFY,NSE,Infosys,IT,0.05,1,INR\n")
    )

    assert report.ok and Instrument.objects.get().symbol == "INFY"


def test_a_known_instrument_is_updated_and_reported_never_duplicated(instrument, tmp_path):
    text = HEADER + "RELIANCE,NSE,Reliance Industries Ltd,Energy,0.10,1,INR,INE002A01018\n"

    report = import_instruments(write(tmp_path, text))
    again = import_instruments(write(tmp_path, text))

    assert Instrument.objects.filter(symbol="RELIANCE").count() == 1
    instrument.refresh_from_db()
    assert (instrument.name, instrument.tick_size, instrument.isin) == (
        "Reliance Industries Ltd",
        Decimal("0.1000"),
        "INE002A01018",
    )
    assert report.note_lines() == [
        "updated NSE:RELIANCE (line 2): name Reliance Industries → Reliance Industries Ltd; "
        "tick_size 0.0500 → 0.1000; isin set to INE002A01018"
    ]
    assert again.ok and again.written == 0 and again.note_lines() == []


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("WIPRO,NSE,,IT,0.05,1,INR,\n", "name is empty"),
        ("WIPRO,NSE,Wipro,IT,0,1,INR,\n", "tick_size '0' is not a positive number"),
        ("WIPRO,NSE,Wipro,IT,0.00001,1,INR,\n", "does not fit (at most 4 decimals"),
        ("WIPRO,NSE,Wipro,IT,0.05,0,INR,\n", "lot_size '0' is not a whole number of at least 1"),
        ("WIPRO,NSE,Wipro,IT,0.05,1,RUPEES,\n", "currency 'RUPEES' is not a three-letter code"),
        ("WIPRO,NSE,Wipro,IT,0.05,1,INR,XYZ\n", "isin 'XYZ' is not an ISIN"),
        ("WIPRO,,Wipro,IT,0.05,1,INR,\n", "exchange is empty"),
        ("NSE:WIPRO,NSE,Wipro,IT,0.05,1,INR,\n", "has a colon or a space"),
        ("INFY,NSE,Infosys again,IT,0.05,1,INR,\n", "NSE:INFY is listed twice (first on line 2)"),
    ],
)
def test_one_bad_row_refuses_the_whole_file_with_its_line(db, tmp_path, row, reason):
    path = write(tmp_path, HEADER + ROWS + row)

    report = import_instruments(path)

    assert not report.ok and report.written == 0
    [line] = report.problem_lines()
    assert line.startswith(f"{path}:5: ") and reason in line
    assert not Instrument.objects.exists()
    assert not AuditEvent.objects.exists()


def test_a_missing_column_is_named(db, tmp_path):
    report = import_instruments(write(tmp_path, "symbol,exchange,name\nINFY,NSE,Infosys\n"))

    assert report.problem_lines()[0].endswith(":1: missing column(s): sector, tick_size, lot_size, currency")


def test_the_command_dry_run_reports_what_it_would_create_and_writes_nothing(db, tmp_path, capsys):
    call_command("import_instruments", str(write(tmp_path, HEADER + ROWS)), "--dry-run")

    out = capsys.readouterr().out
    assert "would create NASDAQ:AAPL (line 3): USD, tick 0.0100, lot 1" in out
    assert "3 instrument row(s) valid; dry run" in out
    assert not Instrument.objects.exists()


def test_the_command_fails_on_a_bad_file(db, tmp_path, capsys):
    with pytest.raises(CommandError, match="1 problem"):
        call_command("import_instruments", str(write(tmp_path, HEADER + "X,NSE,X,IT,abc,1,INR,\n")))

    assert "tick_size 'abc' is not a number" in capsys.readouterr().err


def test_instruments_then_bars_from_a_yahoo_export_in_a_dollar_currency(db, tmp_path):
    """The issue's first-user story: a USD instrument is added, then its prices; it keeps its currency."""
    from trading.market.imports import import_bars

    import_instruments(write(tmp_path, HEADER + ROWS))
    yahoo = write(
        tmp_path,
        "Date,Open,High,Low,Close,Adj Close,Volume\n2025-01-02,248.93,249.10,241.82,243.85,243.26,55740700\n",
        "AAPL.csv",
    )

    report = import_bars(yahoo)

    assert report.ok, report.problem_lines()
    bar = Instrument.objects.get(symbol="AAPL").bars.get()
    assert bar.close == Decimal("243.85") and bar.instrument.currency == "USD"
