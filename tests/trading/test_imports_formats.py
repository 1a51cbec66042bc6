"""Bars from the files people have (an NSE bhavcopy, a Yahoo export), the exchange calendar at
import, ``--create-missing``, and the data-quality report of each import."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from trading.market.imports import YAHOO_SPLIT_REMARK, BarOptions, import_bars
from trading.models import AuditEvent, CorporateAction, DailyBar, Instrument

BHAV_HEADER = (
    "TradDt,BizDt,Sgmt,Src,FinInstrmTp,FinInstrmId,ISIN,TckrSymb,SctySrs,XpryDt,FininstrmActlXpryDt,StrkPric,"
    "OptnTp,FinInstrmNm,OpnPric,HghPric,LwPric,ClsPric,LastPric,PrvsClsgPric,UndrlygPric,SttlmPric,OpnIntrst,"
    "ChngInOpnIntrst,TtlTradgVol,TtlTrfVal,TtlNbOfTxsExctd,SsnId,NewBrdLotQty,Rmks,Rsvd1,Rsvd2,Rsvd3,Rsvd4\n"
)


def bhav_row(
    symbol: str,
    series: str = "EQ",
    day: str = "2025-07-04",
    prices: tuple[str, str, str, str] = ("1520.00", "1531.90", "1515.10", "1527.50"),
    volume: str = "8123456",
    isin: str = "INE002A01018",
    name: str = "RELIANCE INDUSTRIES LTD",
) -> str:
    open_, high, low, close = prices
    return (
        f"{day},{day},CM,NSE,STK,2885,{isin},{symbol},{series},,,,,{name},{open_},{high},{low},{close},"
        f"{close},1519.30,,{close},,,{volume},12398765432.10,210345,F1,1,,,,,\n"
    )


YAHOO_HEADER = "Date,Open,High,Low,Close,Adj Close,Volume\n"
YAHOO_ROWS = (
    "2025-07-01,1500.000000,1510.500000,1495.000000,1505.199951,1500.123456,9876543\n"
    "2025-07-02,null,null,null,null,null,null\n"
    "2025-07-03,1506.000000,1520.000000,1501.250000,1518.750000,1513.500000,8765432\n"
)


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tcs(instrument):
    return Instrument.objects.create(symbol="TCS", exchange="NSE", name="Tata Consultancy Services")


def test_a_bhavcopy_is_told_from_its_header_and_only_its_eq_rows_are_read(instrument, tcs, tmp_path):
    text = (
        BHAV_HEADER
        + bhav_row("RELIANCE")
        + bhav_row("RELIANCE", series="BE")  # same symbol, trade-to-trade series: not ours
        + bhav_row("TCS", prices=("3400", "3450.5", "3390", "3441.25"), isin="INE467B01029", name="TCS LTD")
        + bhav_row("SMALLCO", series="SM", isin="INE000X01010", name="SMALL CO")
    )

    report = import_bars(write(tmp_path, text, "BhavCopy_NSE_CM_0_0_0_20250704_F_0000.csv"))

    assert report.ok, report.problem_lines()
    assert report.file_format == "bhavcopy"
    assert report.written == 2
    assert report.skipped_counts == {"series BE": 1, "series SM": 1}
    bar = DailyBar.objects.get(instrument=tcs)
    assert (bar.date, bar.open, bar.high, bar.low, bar.close, bar.volume) == (
        dt.date(2025, 7, 4),
        Decimal("3400"),
        Decimal("3450.5"),
        Decimal("3390"),
        Decimal("3441.25"),
        8123456,
    )
    assert AuditEvent.objects.get(action="import_bar").details["format"] == "bhavcopy"


def test_a_bhavcopy_reads_the_series_asked_for(instrument, tmp_path):
    text = BHAV_HEADER + bhav_row("RELIANCE", series="BE", prices=("10", "12", "9", "11"))

    default = import_bars(write(tmp_path, text), dry_run=True)
    be = import_bars(write(tmp_path, text), options=BarOptions(series=frozenset({"BE"})))

    assert default.accepted == 0 and default.skipped_counts == {"series BE": 1}
    assert be.ok and DailyBar.objects.get().close == Decimal("11")


def test_a_bhavcopy_row_of_a_holiday_is_refused_with_its_line(instrument, tmp_path):
    path = write(tmp_path, BHAV_HEADER + bhav_row("RELIANCE", day="2025-08-15"))

    report = import_bars(path)

    assert report.problem_lines() == [
        f"{path}:2: 2025-08-15 (Friday) is not a session of NSE: no bar can be dated on it"
    ]
    assert not DailyBar.objects.exists()


def test_a_bar_of_our_own_format_on_a_weekend_is_refused(instrument, tmp_path):
    path = write(
        tmp_path,
        "symbol,date,open,high,low,close,volume\n"
        "RELIANCE,2025-01-03,100,105,99,104,1000\n"
        "RELIANCE,2025-01-04,100,105,99,104,1000\n",
    )

    report = import_bars(path)

    assert [line.split(": ", 1)[1] for line in report.problem_lines()] == [
        "2025-01-04 (Saturday) is not a session of NSE: no bar can be dated on it"
    ]
    assert not DailyBar.objects.exists()


def test_a_yahoo_export_takes_its_symbol_from_the_file_name_and_reports_null_rows(instrument, tmp_path):
    path = write(tmp_path, YAHOO_HEADER + YAHOO_ROWS, "RELIANCE.NS.csv")

    report = import_bars(path)

    assert report.ok, report.problem_lines()
    assert report.file_format == "yahoo"
    assert report.skipped_lines() == [f"{path}:3: skipped, null prices (Yahoo lists the day without a bar)"]
    assert report.note_lines() == [YAHOO_SPLIT_REMARK]  # its Close is split-adjusted already
    closes = list(DailyBar.objects.order_by("date").values_list("date", "close"))
    # Yahoo's float noise is rounded to the desk's four decimals; Close, not Adj Close, is stored.
    assert closes == [(dt.date(2025, 7, 1), Decimal("1505.2000")), (dt.date(2025, 7, 3), Decimal("1518.75"))]


def test_a_yahoo_export_with_a_symbol_named_on_the_command_line(instrument, tmp_path, capsys):
    Instrument.objects.create(symbol="RELIANCE", exchange="BSE", name="Reliance Industries")
    path = write(tmp_path, YAHOO_HEADER + YAHOO_ROWS, "download.csv")

    call_command("import_bars", str(path), "--symbol", "RELIANCE.BO")

    assert set(DailyBar.objects.values_list("instrument__exchange", flat=True)) == {"BSE"}
    assert "1 row(s) skipped" in capsys.readouterr().out


def test_a_named_format_overrides_the_header(instrument, tmp_path):
    path = write(tmp_path, YAHOO_HEADER + YAHOO_ROWS, "RELIANCE.NS.csv")

    report = import_bars(path, options=BarOptions(file_format="desk"))

    assert report.problem_lines() == [f"{path}:1: missing column(s): symbol"]


def test_create_missing_makes_nse_instruments_with_the_exchange_defaults_and_says_so(db, tmp_path):
    text = "symbol,date,open,high,low,close,volume\nINFY,2025-01-02,1900,1910,1890,1905,1000\n"

    dry = import_bars(write(tmp_path, text), dry_run=True, options=BarOptions(create_missing=True))
    assert not Instrument.objects.exists()
    assert dry.note_lines() == ["would create NSE:INFY (line 2): currency INR, tick 0.05, lot 1, name 'INFY'"]

    report = import_bars(write(tmp_path, text), options=BarOptions(create_missing=True))

    assert report.ok and report.written == 1
    created = Instrument.objects.get(symbol="INFY")
    assert (created.exchange, created.currency, created.tick_size, created.lot_size) == (
        "NSE",
        "INR",
        Decimal("0.05"),
        1,
    )
    assert report.note_lines() == ["created NSE:INFY (line 2): currency INR, tick 0.05, lot 1, name 'INFY'"]
    assert AuditEvent.objects.get(action="import_bar").details["created"] == report.created


def test_without_create_missing_an_unknown_symbol_is_still_refused(db, tmp_path):
    report = import_bars(write(tmp_path, "symbol,date,open,high,low,close,volume\nINFY,2025-01-02,1,1,1,1,1\n"))

    assert "unknown symbol INFY" in report.problem_lines()[0]
    assert not Instrument.objects.exists()


def test_create_missing_on_another_exchange_needs_a_currency(db, tmp_path):
    text = "symbol,date,open,high,low,close,volume\nNASDAQ:AAPL,2025-01-02,240,245,238,243.5,1000\n"

    refused = import_bars(write(tmp_path, text), options=BarOptions(create_missing=True))
    assert (
        "creating it on NASDAQ needs its currency (--currency; only NSE, BSE have defaults)"
        in (refused.problem_lines()[0])
    )
    assert not Instrument.objects.exists()

    report = import_bars(write(tmp_path, text), options=BarOptions(create_missing=True, currency="USD"))

    apple = Instrument.objects.get(symbol="AAPL")
    assert report.ok and (apple.exchange, apple.currency, apple.tick_size) == ("NASDAQ", "USD", Decimal("0.01"))


def test_a_file_with_a_problem_creates_no_instrument(db, tmp_path):
    text = (
        "symbol,date,open,high,low,close,volume\n"
        "INFY,2025-01-02,1900,1910,1890,1905,1000\n"
        "WIPRO,2025-01-02,300,290,295,296,1000\n"  # high below low
    )

    report = import_bars(write(tmp_path, text), options=BarOptions(create_missing=True))

    assert not report.ok
    assert not Instrument.objects.exists() and not DailyBar.objects.exists()


def test_create_missing_from_a_bhavcopy_keeps_its_name_and_isin(db, tmp_path):
    report = import_bars(write(tmp_path, BHAV_HEADER + bhav_row("RELIANCE")), options=BarOptions(create_missing=True))

    created = Instrument.objects.get()
    assert report.ok
    assert (str(created), created.name, created.isin) == ("NSE:RELIANCE", "RELIANCE INDUSTRIES LTD", "INE002A01018")


def test_the_command_creates_missing_symbols_and_prints_what_it_created(db, tmp_path, capsys):
    path = write(tmp_path, "symbol,date,open,high,low,close,volume\nLSE:VOD,2025-01-02,70,71,69,70.5,1000\n")

    with pytest.raises(CommandError):
        call_command("import_bars", str(path), "--create-missing")
    call_command("import_bars", str(path), "--create-missing", "--currency", "GBP")

    out = capsys.readouterr().out
    assert "created LSE:VOD (line 2): currency GBP, tick 0.01, lot 1" in out
    assert Instrument.objects.get().currency == "GBP"


# --- data quality on import ---------------------------------------------------------------------

QUALITY_ROWS = (
    "symbol,date,open,high,low,close,volume\n"
    "RELIANCE,2025-07-01,100,101,99,100,1000\n"
    "RELIANCE,2025-07-02,100,101,99,100.5,1000\n"
    # 2025-07-03 and 2025-07-04 are sessions with no bar
    "RELIANCE,2025-07-07,100,101,99,100,1000\n"
    "RELIANCE,2025-07-08,60,61,59,60,1000\n"  # -40% close to close
)


def test_each_import_reports_missing_sessions_staleness_and_unexplained_outliers(instrument, tmp_path, capsys):
    path = write(tmp_path, QUALITY_ROWS)

    call_command("import_bars", str(path))

    out = capsys.readouterr().out
    assert "quality: NSE:RELIANCE: 2 missing session(s): 2025-07-03, 2025-07-04" in out
    assert "quality: NSE:RELIANCE: -40.0% close to close on 2025-07-08" in out
    assert "no corporate action" in out
    assert "quality: NSE:RELIANCE: stale, last bar 2025-07-08 but the last session was" in out
    assert DailyBar.objects.count() == 4  # findings are reported, not refused


def test_an_outlier_on_a_corporate_action_ex_date_is_not_flagged(instrument, tmp_path):
    CorporateAction.objects.create(
        instrument=instrument, kind="split", ex_date=dt.date(2025, 7, 8), ratio_old=1, ratio_new=2
    )

    report = import_bars(write(tmp_path, QUALITY_ROWS), dry_run=True)

    [quality] = report.quality
    assert quality.outlier_count == 0 and quality.missing_count == 2


def test_the_outlier_threshold_is_a_setting(instrument, tmp_path, settings):
    settings.MARKET_DATA = {**settings.MARKET_DATA, "OUTLIER_MOVE_PCT": 50.0}

    report = import_bars(write(tmp_path, QUALITY_ROWS), dry_run=True)

    assert report.quality[0].outlier_count == 0


def test_the_gap_after_the_last_stored_bar_counts_as_missing(instrument, tmp_path):
    import_bars(write(tmp_path, QUALITY_ROWS, "first.csv"))

    report = import_bars(
        write(tmp_path, "symbol,date,open,high,low,close,volume\nRELIANCE,2025-07-11,60,61,59,60,1000\n", "next.csv")
    )

    [quality] = report.quality
    assert quality.missing == [dt.date(2025, 7, 9), dt.date(2025, 7, 10)]
    assert quality.outlier_count == 0  # 60 → 60 across the join
