"""The market-data provider: Yahoo through yfinance on recorded payloads (never the network),
``fetch_bars`` and the after-close refresh."""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from trading.market import tasks
from trading.market.providers import MarketDataProvider, ProviderMissing, provider_for
from trading.market.providers.fetch import fetch_bars, refresh_universe
from trading.market.providers.yahoo import YahooProvider
from trading.models import AuditEvent, CorporateAction, DailyBar, Instrument


def recorded_history(rows: list[tuple[str, float, float, float, float, float, float, float]]) -> pd.DataFrame:
    """yfinance's ``Ticker.history(auto_adjust=False, actions=True)``: a frame indexed by midnight in
    the exchange's time zone."""
    index = pd.DatetimeIndex([pd.Timestamp(day, tz="Asia/Kolkata") for day, *_ in rows], name="Date")
    columns = ["Open", "High", "Low", "Close", "Volume", "Dividends", "Stock Splits"]
    return pd.DataFrame([values for _, *values in rows], index=index, columns=columns)


# A 1:5 split on 2025-07-07 (Yahoo adjusts the earlier prices: 1500 became 300) and a dividend.
HISTORY = [
    ("2025-07-01", 300.0, 302.0, 299.0, 301.0, 5_000_000, 0.0, 0.0),
    ("2025-07-02", 301.0, 303.5, 300.2, 303.0, 5_500_000, 0.0, 0.0),
    ("2025-07-03", float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), 0.0, 0.0),
    ("2025-07-04", 303.0, 304.0, 301.0, 302.4, 4_000_000, 0.0, 0.0),
    ("2025-07-07", 302.0, 306.0, 301.5, 305.0, 9_000_000, 0.0, 5.0),
    ("2025-07-08", 305.0, 307.0, 303.0, 306.2, 7_000_000, 4.5, 0.0),
]


class RecordedTicker:
    def __init__(self, frame: pd.DataFrame, calls: list[dict]) -> None:
        self.frame = frame
        self.calls = calls

    def history(self, **kwargs):
        self.calls.append(kwargs)
        return self.frame

    @property
    def splits(self):
        column = self.frame["Stock Splits"]
        return column[column > 0]


def recorded_provider(frame: pd.DataFrame, tickers: list[str] | None = None, calls: list[dict] | None = None):
    calls = calls if calls is not None else []

    def factory(ticker: str) -> RecordedTicker:
        if tickers is not None:
            tickers.append(ticker)
        return RecordedTicker(frame, calls)

    return YahooProvider(ticker_factory=factory)


def test_the_yahoo_adapter_is_a_provider_and_maps_the_desk_symbols():
    provider = YahooProvider(ticker_factory=lambda ticker: None)

    assert isinstance(provider, MarketDataProvider)
    assert provider.ticker("NSE", "RELIANCE") == "RELIANCE.NS"
    assert provider.ticker("BSE", "TCS") == "TCS.BO"
    assert provider.ticker("NASDAQ", "AAPL") == "AAPL"


def test_without_yfinance_the_provider_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "yfinance", None)  # import yfinance now raises ImportError

    with pytest.raises(ProviderMissing, match=r"pip install -r requirements-data\.txt"):
        provider_for("yahoo").daily_bars("NSE", "RELIANCE", dt.date(2025, 7, 1), dt.date(2025, 7, 8))


def test_yahoo_bars_are_unadjusted_for_splits_and_skip_days_without_prices():
    calls: list[dict] = []
    provider = recorded_provider(recorded_history(HISTORY), calls=calls)

    bars = provider.daily_bars("NSE", "RELIANCE", dt.date(2025, 7, 1), dt.date(2025, 7, 8))

    assert [bar.date.day for bar in bars] == [1, 2, 4, 7, 8]
    # Before the 1:5 split, what traded was five times Yahoo's adjusted price, on a fifth of the volume.
    assert (Decimal(bars[0].close), bars[0].volume) == (Decimal("1505.0"), "1000000")
    assert (Decimal(bars[3].close), bars[3].volume) == (Decimal("305.0"), "9000000")
    assert calls == [{"start": "2025-07-01", "end": "2025-07-09", "auto_adjust": False, "actions": True}]


def test_yahoo_splits_and_dividends_become_corporate_actions():
    provider = recorded_provider(recorded_history(HISTORY))

    actions = provider.corporate_actions("NSE", "RELIANCE", dt.date(2025, 7, 1), dt.date(2025, 7, 8))

    assert [(a.kind, a.ex_date.day, a.ratio_old, a.ratio_new, a.amount) for a in actions] == [
        ("split", 7, 1, 5, None),
        ("dividend", 8, None, None, Decimal("4.5000")),
    ]


def test_fetch_bars_stores_the_bars_and_actions_through_the_import_rules(instrument, capsys):
    provider = recorded_provider(recorded_history(HISTORY))

    result = fetch_bars(provider=provider, instrument=instrument, since=dt.date(2025, 7, 1), until=dt.date(2025, 7, 8))

    assert result.ok and result.report is not None and result.report.written == 5
    assert list(DailyBar.objects.order_by("date").values_list("close", flat=True)) == [
        Decimal("1505"),
        Decimal("1515"),
        Decimal("1512"),
        Decimal("305"),
        Decimal("306.2"),
    ]
    assert set(CorporateAction.objects.values_list("kind", "source")) == {
        ("split", "yahoo:RELIANCE.NS"),
        ("dividend", "yahoo:RELIANCE.NS"),
    }
    # The split explains the -80% move: the report flags no outlier.
    assert result.report.quality[0].outlier_count == 0
    assert AuditEvent.objects.filter(action="import_bar", target="yahoo:RELIANCE.NS").exists()


def test_fetching_again_changes_nothing_and_a_corrected_bar_is_updated(instrument):
    frame = recorded_history(HISTORY)
    since, until = dt.date(2025, 7, 1), dt.date(2025, 7, 8)
    fetch_bars(provider=recorded_provider(frame), instrument=instrument, since=since, until=until)

    again = fetch_bars(provider=recorded_provider(frame), instrument=instrument, since=since, until=until)
    assert again.report is not None and again.report.written == 0

    corrected = frame.copy()
    corrected.loc[corrected.index[-1], "Close"] = 306.5
    fixed = fetch_bars(provider=recorded_provider(corrected), instrument=instrument, since=since, until=until)

    assert fixed.report is not None and fixed.report.written == 1
    assert DailyBar.objects.count() == 5
    assert DailyBar.objects.get(date=dt.date(2025, 7, 8)).close == Decimal("306.5")


def test_a_provider_bar_on_a_holiday_refuses_the_whole_fetch(instrument):
    rows = [*HISTORY[:2], ("2025-08-15", 300.0, 302.0, 299.0, 301.0, 5_000_000, 0.0, 0.0)]
    provider = recorded_provider(recorded_history(rows))

    result = fetch_bars(provider=provider, instrument=instrument, since=dt.date(2025, 7, 1), until=dt.date(2025, 8, 20))

    assert result.report is not None and not result.report.ok
    assert "2025-08-15 (Friday) is not a session of NSE" in result.report.problem_lines()[0]
    assert not DailyBar.objects.exists() and not CorporateAction.objects.exists()


def test_fetch_starts_after_the_last_stored_bar(instrument):
    DailyBar.objects.create(instrument=instrument, date=dt.date(2025, 7, 4), open=1, high=2, low=1, close=2, volume=1)
    calls: list[dict] = []

    fetch_bars(
        provider=recorded_provider(recorded_history(HISTORY), calls=calls),
        instrument=instrument,
        until=dt.date(2025, 7, 8),
    )

    assert calls[0]["start"] == "2025-07-05"
    assert DailyBar.objects.count() == 3  # the 4th kept, the 7th and 8th added


def test_the_command_fetches_named_symbols(instrument, monkeypatch, capsys):
    tickers: list[str] = []
    monkeypatch.setattr(
        "trading.management.commands.fetch_bars.provider_for",
        lambda name: recorded_provider(recorded_history(HISTORY), tickers),
    )

    call_command("fetch_bars", "NSE:RELIANCE", "--since", "2025-07-01")

    assert DailyBar.objects.count() == 5 and tickers[0] == "RELIANCE.NS"
    out = capsys.readouterr().out
    assert "corporate action added: NSE:RELIANCE split 1:5 on 2025-07-07" in out
    with pytest.raises(CommandError, match="unknown symbol WIPRO"):
        call_command("fetch_bars", "WIPRO")


def test_the_refresh_task_is_off_by_default(instrument, settings):
    settings.MARKET_DATA = {**settings.MARKET_DATA, "PROVIDER": ""}

    assert tasks.refresh_market_data() == {"status": "off"}
    assert not DailyBar.objects.exists()


def test_the_refresh_runs_every_active_instrument_and_reports_each_failure(instrument, settings, monkeypatch):
    Instrument.objects.create(symbol="OLD", exchange="NSE", name="Delisted", is_active=False)
    Instrument.objects.create(symbol="AAPL", exchange="NASDAQ", name="Apple", currency="USD")
    frame = recorded_history(HISTORY)

    def factory(ticker: str):
        if ticker == "AAPL":
            raise RuntimeError("HTTP 404")
        return RecordedTicker(frame, [])

    monkeypatch.setattr("trading.market.providers.provider_for", lambda name: YahooProvider(ticker_factory=factory))
    settings.MARKET_DATA = {**settings.MARKET_DATA, "PROVIDER": "yahoo"}

    summary = tasks.refresh_market_data()

    assert summary["status"] == "partial" and summary["instruments"] == 2
    assert list(summary["failed"]) == ["NASDAQ:AAPL"] and "HTTP 404" in summary["failed"]["NASDAQ:AAPL"]
    assert DailyBar.objects.filter(instrument=instrument).count() == 5


def test_refresh_universe_skips_nothing_active(instrument):
    results = refresh_universe(provider=recorded_provider(recorded_history(HISTORY)))

    assert [result.instrument for result in results] == ["NSE:RELIANCE"]
