from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from trading.market.imports import ImportFileError, import_bars, import_fundamentals, import_news
from trading.models import AuditEvent, DailyBar, FundamentalsSnapshot, Instrument, NewsItem

HEADER = "symbol,date,open,high,low,close,volume\n"
GOOD_ROWS = (
    "RELIANCE,2025-01-01,100,105,99,104,1000\n"
    "RELIANCE,2025-01-02,104,106,101,102.5,1200\n"
    "TCS,2025-01-01,3500,3550,3480,3520,500\n"
)


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def universe(instrument):
    Instrument.objects.create(symbol="TCS", exchange="NSE", name="Tata Consultancy Services", sector="IT")
    return instrument


def test_it_imports_valid_bars_and_audits_the_import(universe, tmp_path):
    report = import_bars(write(tmp_path, HEADER + GOOD_ROWS))

    assert report.ok and report.written == 3
    assert DailyBar.objects.count() == 3
    bar = DailyBar.objects.get(instrument__symbol="RELIANCE", date=dt.date(2025, 1, 2))
    assert bar.close == Decimal("102.5") and bar.volume == 1200
    event = AuditEvent.objects.get(action="import_bar")
    assert event.details["written"] == 3 and event.target.endswith("data.csv")


@pytest.mark.parametrize(
    ("bad_row", "reason"),
    [
        (
            "RELIANCE,2025-01-02,100,105,99,104,1000\n",
            "duplicate date 2025-01-02 for RELIANCE (first on line 3)",
        ),
        ("RELIANCE,2025-01-03,100,98,99,99,1000\n", "high 98.0000 is below low 99.0000"),
        (
            "RELIANCE,2025-01-03,100,105,99,106,1000\n",
            "close 106.0000 is outside the day's range [99.0000, 105.0000]",
        ),
        ("RELIANCE,2025-01-03,100,105,99,98,1000\n", "close 98.0000 is outside the day's range"),
        ("RELIANCE,2025-01-03,100,105,0,104,1000\n", "low 0.0000 is not positive"),
        ("RELIANCE,2025-01-03,-1,105,99,104,1000\n", "open -1.0000 is not positive"),
        ("RELIANCE,2025-01-03,100,105,99,104,-5\n", "volume -5 is negative"),
        ("RELIANCE,2025-01-03,100,105,99,104,12.5\n", "volume '12.5' is not a whole number"),
        ("WIPRO,2025-01-03,100,105,99,104,1000\n", "unknown symbol WIPRO"),
        (
            "RELIANCE,03/01/2025,100,105,99,104,1000\n",
            "date '03/01/2025' is not a date (expected YYYY-MM-DD)",
        ),
        (
            "RELIANCE,2024-12-31,100,105,99,104,1000\n",
            "out of order: RELIANCE 2024-12-31 comes after 2025-01-02",
        ),
        ("RELIANCE,2025-01-03,abc,105,99,104,1000\n", "open 'abc' is not a number"),
        ("RELIANCE,2025-01-03,NaN,105,99,104,1000\n", "open 'NaN' is not a finite number"),
    ],
)
def test_it_refuses_a_file_with_one_bad_bar_and_writes_nothing(universe, tmp_path, bad_row, reason):
    path = write(tmp_path, HEADER + GOOD_ROWS + bad_row)

    report = import_bars(path)

    assert not report.ok
    assert report.written == 0
    assert DailyBar.objects.count() == 0
    assert not AuditEvent.objects.exists()
    [line] = report.problem_lines()
    assert line.startswith(f"{path}:5: ")
    assert reason in line


def test_it_refuses_a_bar_already_stored(universe, tmp_path):
    import_bars(write(tmp_path, HEADER + GOOD_ROWS, "first.csv"))

    report = import_bars(
        write(
            tmp_path,
            HEADER + "TCS,2025-01-02,3500,3550,3480,3520,500\nRELIANCE,2025-01-02,1,2,1,1,1\n",
            "second.csv",
        )
    )

    assert report.problem_lines() == [
        f"{tmp_path / 'second.csv'}:3: duplicate date 2025-01-02 for RELIANCE: already stored"
    ]
    assert DailyBar.objects.count() == 3


def test_it_reports_every_problem_with_its_line(universe, tmp_path):
    text = HEADER + "RELIANCE,2025-01-01,100,105,99,104,1000\nRELIANCE,bad,1,1,1,1,1\nFOO,2025-01-01,1,1,1,1,1\n"

    report = import_bars(write(tmp_path, text))

    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in report.problem_lines()] == ["3", "4"]


def test_it_names_missing_columns(universe, tmp_path):
    report = import_bars(write(tmp_path, "symbol,date,open,close\nRELIANCE,2025-01-01,1,1\n"))

    assert report.problem_lines() == [f"{tmp_path / 'data.csv'}:1: missing column(s): high, low, volume"]


def test_dry_run_validates_and_writes_nothing(universe, tmp_path):
    report = import_bars(write(tmp_path, HEADER + GOOD_ROWS), dry_run=True)

    assert report.ok and report.accepted == 3 and report.written == 0
    assert "dry run" in report.summary()
    assert DailyBar.objects.count() == 0


def test_an_exchange_qualified_symbol_picks_that_listing(universe, tmp_path):
    Instrument.objects.create(symbol="RELIANCE", exchange="BSE", name="Reliance Industries")

    ambiguous = import_bars(write(tmp_path, HEADER + "RELIANCE,2025-01-01,100,105,99,104,1000\n", "a.csv"))
    qualified = import_bars(write(tmp_path, HEADER + "BSE:RELIANCE,2025-01-01,100,105,99,104,1000\n", "b.csv"))

    assert "listed on BSE, NSE: write EXCHANGE:RELIANCE" in ambiguous.problem_lines()[0]
    assert qualified.ok
    assert DailyBar.objects.get().instrument.exchange == "BSE"


def test_a_missing_or_non_utf8_file_is_a_clear_error(tmp_path, db):
    with pytest.raises(ImportFileError, match="no such file"):
        import_bars(tmp_path / "nope.csv")
    path = tmp_path / "latin.csv"
    path.write_bytes(HEADER.encode() + "RELIANCE,2025-01-01,1,1,1,1,1 caf\xe9\n".encode("latin-1"))
    with pytest.raises(ImportFileError, match="not UTF-8"):
        import_bars(path)


def test_the_command_prints_the_report_and_fails(universe, tmp_path, capsys):
    path = write(tmp_path, HEADER + "RELIANCE,2025-01-01,100,98,99,99,1000\n")

    with pytest.raises(CommandError, match="1 problem\\(s\\) in 1 row\\(s\\); nothing was written"):
        call_command("import_bars", str(path))

    assert f"{path}:2: high 98.0000 is below low 99.0000" in capsys.readouterr().err
    assert DailyBar.objects.count() == 0


def test_the_command_dry_run_prints_and_writes_nothing(universe, tmp_path, capsys):
    call_command("import_bars", str(write(tmp_path, HEADER + GOOD_ROWS)), "--dry-run")

    assert "3 bar row(s) valid; dry run, nothing was written." in capsys.readouterr().out
    assert DailyBar.objects.count() == 0


NEWS_HEADER = "symbol,headline,source,published_at\n"


def test_it_imports_news_and_skips_repeated_headlines(universe, tmp_path):
    text = NEWS_HEADER + (
        "RELIANCE,Reliance Q2 net profit beats estimates,Wire,2025-01-02T16:05:00+05:30\n"
        "RELIANCE,  reliance Q2 NET profit beats estimates!,Other wire,2025-01-02T17:00:00\n"
        "*,RBI holds repo rate at 6.5%,Wire,2025-01-03T10:00:00+05:30\n"
        ",RBI holds repo rate at 6.5%,Wire,2025-01-03T10:00:00+05:30\n"
        "TCS,RBI holds repo rate at 6.5%,Wire,2025-01-03T10:00:00+05:30\n"
    )

    report = import_news(write(tmp_path, text))

    assert report.ok and report.written == 3
    assert [line.split(": ", 1)[1] for line in report.skipped_lines()] == [
        "skipped, same headline as line 2",
        "skipped, same headline as line 4",
    ]
    assert NewsItem.objects.filter(instrument__isnull=True).count() == 1
    again = import_news(write(tmp_path, text, "again.csv"))
    assert again.ok and again.written == 0 and len(again.skipped) == 5


def test_a_naive_news_time_is_read_in_the_desk_time_zone(universe, tmp_path):
    import_news(write(tmp_path, NEWS_HEADER + "RELIANCE,Reliance wins contract,Wire,2025-01-02T09:15:00\n"))

    published = NewsItem.objects.get().published_at
    assert published == dt.datetime(2025, 1, 2, 3, 45, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("RELIANCE,,Wire,2025-01-02T10:00:00\n", "headline is empty"),
        ("RELIANCE,Reliance news,,2025-01-02T10:00:00\n", "source is empty"),
        ("RELIANCE,Reliance news,Wire,yesterday\n", "published_at 'yesterday' is not a date-time"),
        ("NOPE,Reliance news,Wire,2025-01-02T10:00:00\n", "unknown symbol NOPE"),
    ],
)
def test_it_refuses_bad_news_rows_and_writes_nothing(universe, tmp_path, row, reason):
    report = import_news(write(tmp_path, NEWS_HEADER + "RELIANCE,Fine headline,Wire,2025-01-02T10:00:00\n" + row))

    assert reason in report.problem_lines()[0]
    assert NewsItem.objects.count() == 0


FUND_HEADER = "symbol,as_of,pe,pb,ev_ebitda,revenue_growth_pct,net_margin_pct,source\n"


def test_it_imports_fundamentals_with_blank_ratios(universe, tmp_path):
    report = import_fundamentals(write(tmp_path, FUND_HEADER + "RELIANCE,2025-01-01,24.5,2.1,,8.2,9.9,Filing\n"))

    assert report.ok
    snapshot = FundamentalsSnapshot.objects.get()
    assert snapshot.pe == Decimal("24.5") and snapshot.ev_ebitda is None and snapshot.source == "Filing"


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("RELIANCE,2025-01-01,,,,,,x\n", "every ratio is empty"),
        ("RELIANCE,2025-01-01,1,2,3,4,5,x\n", "duplicate as_of 2025-01-01 for RELIANCE (first on line 2)"),
        ("RELIANCE,2025-13-01,1,2,3,4,5,x\n", "as_of '2025-13-01' is not a date"),
        ("RELIANCE,2025-02-01,cheap,2,3,4,5,x\n", "pe 'cheap' is not a number"),
        ("INFY,2025-02-01,1,2,3,4,5,x\n", "unknown symbol INFY"),
    ],
)
def test_it_refuses_bad_fundamentals_and_writes_nothing(universe, tmp_path, row, reason):
    report = import_fundamentals(write(tmp_path, FUND_HEADER + "RELIANCE,2025-01-01,20,2,10,5,9,x\n" + row))

    assert reason in report.problem_lines()[0]
    assert FundamentalsSnapshot.objects.count() == 0


# --- dates the desk can trade on ----------------------------------------------------------------


def _today():
    from django.utils import timezone

    return timezone.localdate()


def test_a_bar_dated_after_today_is_refused_with_the_desk_clock_named(universe, tmp_path, settings):
    path = write(tmp_path, HEADER + GOOD_ROWS + "RELIANCE,9999-12-31,100,105,99,104,1000\n")

    report = import_bars(path)

    assert report.problem_lines() == [
        f"{path}:5: date 9999-12-31 is after today, {_today()}, the current session ({settings.TIME_ZONE})"
    ]
    assert not DailyBar.objects.exists()


def test_a_bar_dated_tomorrow_is_refused_and_one_dated_today_is_not(universe, tmp_path, monkeypatch):
    # The desk's clock at noon on the last NSE session up to today: on a weekend or a holiday,
    # today's bar would be refused for another reason (no session that day).
    from django.utils import timezone

    from trading.market.domain.calendar import sessions

    session = sessions("NSE", _today() - dt.timedelta(days=14), _today())[-1]
    noon = dt.datetime.combine(session, dt.time(12), tzinfo=timezone.get_current_timezone())
    monkeypatch.setattr(timezone, "now", lambda: noon)
    today, tomorrow = _today(), _today() + dt.timedelta(days=1)
    assert today == session
    rows = f"RELIANCE,{today},100,105,99,104,1000\nTCS,{tomorrow},100,105,99,104,1000\n"

    report = import_bars(write(tmp_path, HEADER + rows))

    assert [line.split(": ", 1)[1] for line in report.problem_lines()] == [
        f"date {tomorrow} is after today, {today}, the current session (Asia/Kolkata)"
    ]


def test_a_bar_dated_before_the_floor_is_refused(universe, tmp_path):
    report = import_bars(write(tmp_path, HEADER + "RELIANCE,1989-12-29,100,105,99,104,1000\n"))

    assert report.problem_lines()[0].endswith(
        ":2: date 1989-12-29 is before 1990-01-01, the earliest date the desk accepts"
    )


@pytest.mark.parametrize(
    ("published_at", "reason"),
    [
        ("9999-12-31T10:00:00", "published_at 9999-12-31 is after today"),
        ("9999-12-31T23:59:59-12:00", "published_at 9999-12-31 is after today"),
        ("0001-01-01T00:00:00+14:00", "published_at 0001-01-01 is before 1990-01-01"),
        ("1985-06-01T10:00:00", "published_at 1985-06-01 is before 1990-01-01"),
    ],
)
def test_news_dated_outside_the_desk_window_is_refused(universe, tmp_path, published_at, reason):
    report = import_news(write(tmp_path, NEWS_HEADER + f"RELIANCE,Reliance news,Wire,{published_at}\n"))

    assert reason in report.problem_lines()[0]
    assert NewsItem.objects.count() == 0


def test_fundamentals_dated_after_today_are_refused(universe, tmp_path):
    report = import_fundamentals(write(tmp_path, FUND_HEADER + "RELIANCE,9999-12-31,1,2,3,4,5,x\n"))

    assert "as_of 9999-12-31 is after today" in report.problem_lines()[0]


# --- values that do not fit their column --------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_row", "reason"),
    [
        (
            "RELIANCE,2025-01-03,100000000000000,100000000000000,99,100000000000000,1000\n",
            "open '100000000000000' is too large (at most 99999999999999.9999)",
        ),
        ("RELIANCE,2025-01-03,1e999999999,105,99,104,1000\n", "open '1e999999999' is too large"),
        ("RELIANCE,2025-01-03,1e-999999999,105,99,104,1000\n", "open 0.0000 is not positive"),
        (
            "RELIANCE,2025-01-03,100,105,99,104,9223372036854775808\n",
            "volume 9223372036854775808 does not fit in 64 bits (at most 9223372036854775807)",
        ),
        ("RELIANCE,2025-01-03,100,105,99,104,1e999999999\n", "volume 1e999999999 does not fit in 64 bits"),
        (f"{'R' * 33},2025-01-03,100,105,99,104,1000\n", "symbol is 33 characters (at most 32)"),
    ],
)
def test_a_bar_beyond_its_column_is_refused_with_a_reason(universe, tmp_path, bad_row, reason):
    path = write(tmp_path, HEADER + GOOD_ROWS + bad_row)

    report = import_bars(path)

    [line] = report.problem_lines()
    assert line.startswith(f"{path}:5: ") and reason in line
    assert not DailyBar.objects.exists()


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (f"RELIANCE,Reliance news,{'w' * 101},2025-01-02T10:00:00\n", "source is 101 characters (at most 100)"),
        (
            f"RELIANCE,Reliance news,Wire,2025-01-02T10:00:00,https://x.example/{'a' * 190}\n",
            "url is 208 characters (at most 200)",
        ),
        ("RELIANCE,Reliance\x00 news,Wire,2025-01-02T10:00:00\n", "headline contains a NUL character"),
        ("RELIANCE,Reliance news,Wi\x00re,2025-01-02T10:00:00\n", "source contains a NUL character"),
    ],
)
def test_news_beyond_its_column_is_refused_with_a_reason(universe, tmp_path, row, reason):
    header = "symbol,headline,source,published_at,url\n"

    report = import_news(write(tmp_path, header + row))

    assert report.problem_lines() == [f"{tmp_path / 'data.csv'}:2: {reason}"]
    assert NewsItem.objects.count() == 0


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("RELIANCE,2025-02-01,100000000,2,3,4,5,x\n", "pe '100000000' is too large (at most 99999999.9999)"),
        ("RELIANCE,2025-02-01,-1e400,2,3,4,5,x\n", "pe '-1e400' is too small (at least -99999999.9999)"),
        (f"RELIANCE,2025-02-01,1,2,3,4,5,{'s' * 101}\n", "source is 101 characters (at most 100)"),
    ],
)
def test_fundamentals_beyond_their_column_are_refused(universe, tmp_path, row, reason):
    report = import_fundamentals(write(tmp_path, FUND_HEADER + row))

    assert report.problem_lines() == [f"{tmp_path / 'data.csv'}:2: {reason}"]
    assert FundamentalsSnapshot.objects.count() == 0


def test_a_field_beyond_the_csv_size_limit_is_a_line_problem_not_a_traceback(universe, tmp_path):
    import csv

    huge = "x" * (csv.field_size_limit() + 1)
    text = NEWS_HEADER + "RELIANCE,Fine,Wire,2025-01-02T10:00:00\n" + f'RELIANCE,"{huge}",Wire,2025-01-02\n'
    path = write(tmp_path, text)

    report = import_news(path)

    [line] = report.problem_lines()
    assert line.startswith(f"{path}:3: a field is longer than {csv.field_size_limit():,} characters")
    assert NewsItem.objects.count() == 0


# --- line numbers are the file's lines ----------------------------------------------------------


def test_line_numbers_count_the_newlines_inside_quoted_fields(universe, tmp_path):
    text = NEWS_HEADER + (
        'RELIANCE,"Reliance wins\na large\ncontract",Wire,2025-01-02T10:00:00\nRELIANCE,,Wire,2025-01-02T10:00:00\n'
    )

    report = import_news(write(tmp_path, text))

    assert report.problem_lines() == [f"{tmp_path / 'data.csv'}:5: headline is empty"]


def test_blank_lines_are_skipped_and_still_counted(universe, tmp_path):
    text = HEADER + "RELIANCE,2025-01-01,100,105,99,104,1000\n\n\nRELIANCE,2025-01-02,100,98,99,99,1000\n"

    report = import_bars(write(tmp_path, text))

    assert report.rows_read == 2
    assert report.problem_lines()[0].split(": ", 1)[0].endswith(":5")


def test_a_non_utf8_line_is_named_by_its_line(universe, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes((HEADER + GOOD_ROWS).encode() + "RELIANCE,2025-01-03,1,1,1,1,1 caf\xe9\n".encode("latin-1"))

    with pytest.raises(ImportFileError, match=f"{path}:5: not UTF-8 text"):
        import_bars(path)
    assert not DailyBar.objects.exists()


# --- large files: batches inside one transaction ------------------------------------------------


def _many_bars(count: int, symbol: str = "RELIANCE") -> str:
    from tests.conftest import trading_days

    return "".join(f"{symbol},{day},100,105,99,104,1000\n" for day in trading_days(dt.date(2020, 1, 1), count))


def test_a_large_file_is_written_in_batches(universe, tmp_path, monkeypatch):
    from trading.market import imports

    monkeypatch.setattr("trading.market.imports.BATCH_ROWS", 4)
    written = imports._BarWriter.write
    batches: list[int] = []

    def counted(self, batch):
        batches.append(len(batch))
        return written(self, batch)

    # One write per batch: an INSERT run over the batch, or rows sent down the COPY on PostgreSQL.
    monkeypatch.setattr("trading.market.imports._BarWriter.write", counted)

    report = import_bars(write(tmp_path, HEADER + _many_bars(10)))

    assert report.ok and report.written == 10 and DailyBar.objects.count() == 10
    assert batches == [4, 4, 2]


def test_a_problem_in_the_last_batch_undoes_the_earlier_batches(universe, tmp_path, monkeypatch):
    monkeypatch.setattr("trading.market.imports.BATCH_ROWS", 4)
    text = HEADER + _many_bars(10) + "RELIANCE,2099-01-01,100,105,99,104,1000\n"

    report = import_bars(write(tmp_path, text))

    assert not report.ok and report.written == 0
    assert report.problem_lines()[0].split(": ", 1)[0].endswith(":12")
    assert not DailyBar.objects.exists() and not AuditEvent.objects.exists()


def test_a_file_with_thousands_of_problems_lists_the_first_thousand_and_counts_all(universe, tmp_path):
    text = HEADER + "".join(f"RELIANCE,bad{i},1,1,1,1,1\n" for i in range(1_200))

    report = import_bars(write(tmp_path, text))

    assert len(report.problem_lines()) == 1_000
    assert "1200 problem(s) in 1200 row(s)" in report.summary() and "first 1000 listed" in report.summary()


def test_the_column_limits_match_the_models():
    from trading.market.domain import csv_rows as market_csv
    from trading.models import DailyBar, FundamentalsSnapshot, Instrument, NewsItem

    def largest(field) -> Decimal:
        return Decimal(10) ** (field.max_digits - field.decimal_places) - Decimal(10) ** -field.decimal_places

    columns = {
        "symbol": Instrument._meta.get_field("symbol").max_length,
        "headline": NewsItem._meta.get_field("headline").max_length,
        "source": NewsItem._meta.get_field("source").max_length,
        "url": NewsItem._meta.get_field("url").max_length,
        "fundamentals_source": FundamentalsSnapshot._meta.get_field("source").max_length,
    }
    assert largest(DailyBar._meta.get_field("open")) == market_csv.PRICE_MAX
    assert largest(FundamentalsSnapshot._meta.get_field("pe")) == market_csv.RATIO_MAX
    assert columns == market_csv.TEXT_LIMITS
