from __future__ import annotations

import bisect
import datetime as dt
import itertools
import time
from collections import Counter

import numpy as np
import pytest

from trading.market.domain.demo import (
    DEMO_END,
    EARNINGS_TEMPLATES,
    HOSTILE_HEADLINES,
    NEWS_TEMPLATES,
    SECTOR_REGULATORY_TEMPLATES,
    DemoMarket,
    DemoNewsItem,
    generate_demo_market,
    trading_sessions,
)
from trading.market.domain.news import classify_event, content_hash, headline_sentiment, news_features
from vocabulary.features import NewsInput

MARKET_OPEN = dt.time(9, 15)
MARKET_CLOSE = dt.time(15, 30)
SAMPLE_VALUES = {
    "name": "Infosys",
    "quarter": "Q2 FY26",
    "fiscal_year": "FY26",
    "growth": "12.5",
    "revenue": "8.0",
    "broker": "Jefferies",
    "target": "1,950",
    "partner": "a logistics",
    "month": "October 2025",
    "when": "14 November 2025",
    "person": "Priya Raman",
    "crore": "5",
    "deal": "1,250",
}


@pytest.fixture(scope="module")
def market() -> DemoMarket:
    return generate_demo_market()


def reaction_session(item: DemoNewsItem, sessions: list[dt.date]) -> int:
    """The session whose bar carries the reaction: the same day in hours, the next one after the close."""
    day = item.published_at.date()
    index = bisect.bisect_left(sessions, day)
    return index + 1 if item.published_at.time() >= MARKET_CLOSE else index


def session_return(market: DemoMarket, symbol: str, session: int) -> float:
    bars = market.bars_for(symbol)
    return bars[session].close / bars[session - 1].close - 1.0


def absolute_return_autocorrelation(closes: np.ndarray, lags: range) -> float:
    moves = np.abs(np.diff(np.log(closes)))
    return float(np.mean([np.corrcoef(moves[:-lag], moves[lag:])[0, 1] for lag in lags]))


# --- determinism and speed -----------------------------------------------------------------------


def test_the_same_seed_gives_an_identical_market(market: DemoMarket) -> None:
    assert generate_demo_market(seed=7) == market


def test_a_different_seed_gives_a_different_market(market: DemoMarket) -> None:
    other = generate_demo_market(seed=8)
    assert other.bars != market.bars
    assert other.news != market.news


def test_the_whole_market_generates_well_under_two_seconds() -> None:
    started = time.perf_counter()
    generate_demo_market(seed=3)
    assert time.perf_counter() - started < 2.0


# --- instruments and calendar --------------------------------------------------------------------


def test_it_lists_twelve_nse_large_caps_with_their_sectors(market: DemoMarket) -> None:
    sectors = {instrument.symbol: instrument.sector for instrument in market.instruments}
    assert sectors == {
        "RELIANCE": "Energy",
        "TCS": "IT",
        "HDFCBANK": "Financials",
        "INFY": "IT",
        "ICICIBANK": "Financials",
        "HINDUNILVR": "FMCG",
        "ITC": "FMCG",
        "SBIN": "Financials",
        "BHARTIARTL": "Telecom",
        "LT": "Industrials",
        "MARUTI": "Auto",
        "SUNPHARMA": "Pharma",
    }
    for instrument in market.instruments:
        assert (instrument.exchange, instrument.currency, instrument.tick_size, instrument.lot_size) == (
            "NSE",
            "INR",
            0.05,
            1,
        )
        assert len(instrument.name) > len(instrument.symbol) or instrument.symbol == "ITC"


def test_sessions_are_weekdays_without_the_fixed_holidays() -> None:
    sessions = trading_sessions(dt.date(2024, 8, 12), dt.date(2024, 8, 18))
    # 15 August is Independence Day; 17 and 18 are a weekend
    assert sessions == [dt.date(2024, 8, day) for day in (12, 13, 14, 16)]


def test_it_covers_at_least_three_years_of_weekday_sessions_up_to_the_demo_date(market: DemoMarket) -> None:
    assert market.sessions[-1] == DEMO_END
    assert (market.sessions[-1] - market.sessions[0]).days >= 3 * 365
    assert len(market.sessions) >= 3 * 250
    assert all(day.weekday() < 5 for day in market.sessions)
    for instrument in market.instruments:
        assert [bar.date for bar in market.bars_for(instrument.symbol)] == market.sessions


# --- bars ----------------------------------------------------------------------------------------


def test_every_bar_is_consistent_and_on_the_tick(market: DemoMarket) -> None:
    for bar in market.bars:
        assert 0 < bar.low <= min(bar.open, bar.close)
        assert max(bar.open, bar.close) <= bar.high
        assert bar.volume > 0
        for price in (bar.open, bar.high, bar.low, bar.close):
            assert abs(price * 20 - round(price * 20)) < 1e-6
            assert price == round(price, 2)


def test_opening_gaps_happen_now_and_then(market: DemoMarket) -> None:
    bars = market.bars_for("RELIANCE")
    gaps = [abs(today.open / yesterday.close - 1) for yesterday, today in itertools.pairwise(bars)]
    assert 5 <= sum(gap > 0.02 for gap in gaps) < len(gaps) / 5


def test_volatility_clusters_so_big_moves_follow_big_moves(market: DemoMarket) -> None:
    autocorrelations = [
        absolute_return_autocorrelation(np.array([bar.close for bar in market.bars_for(symbol)]), range(1, 6))
        for symbol in (instrument.symbol for instrument in market.instruments)
    ]
    assert np.mean(autocorrelations) > 0.03
    assert sum(value > 0 for value in autocorrelations) >= 9


def test_stocks_share_a_market_factor_that_the_nifty_series_follows(market: DemoMarket) -> None:
    nifty = {reading.date: reading.value for reading in market.series("NIFTY50").readings}
    weekly_closes = np.array(
        [[bar.close for bar in market.bars_for(i.symbol) if bar.date in nifty] for i in market.instruments]
    )
    basket_moves = np.diff(np.log(weekly_closes), axis=1).mean(axis=0)  # equal-weighted weekly return
    nifty_moves = np.diff(np.log([nifty[week] for week in sorted(nifty)]))
    assert np.corrcoef(nifty_moves, basket_moves)[0, 1] > 0.6


# --- news ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "templates"), sorted(NEWS_TEMPLATES.items()))
def test_every_headline_template_reads_as_its_event_class_and_tone(
    key: tuple[str, str], templates: tuple[str, ...]
) -> None:
    event_class, tone = key
    for template in templates:
        headline = template.format(**SAMPLE_VALUES)
        assert classify_event(headline) == event_class, headline
        score = headline_sentiment(headline)
        assert {"positive": score > 0, "negative": score < 0, "neutral": score == 0}[tone], headline


def test_sector_regulatory_templates_read_as_bad_regulatory_news() -> None:
    for template in SECTOR_REGULATORY_TEMPLATES.values():
        headline = template.format(**SAMPLE_VALUES)
        assert classify_event(headline) == "regulatory", headline
        assert headline_sentiment(headline) < 0, headline


def test_retold_results_are_near_duplicates_the_news_features_fold() -> None:
    for tone, (first, retold) in EARNINGS_TEMPLATES.items():
        as_of = dt.datetime(2025, 10, 20, 18, 0, tzinfo=dt.UTC)
        items = [
            NewsInput(headline=text.format(**SAMPLE_VALUES), source="Wire", published_at=as_of)
            for text in (first, retold)
        ]
        result = news_features(items, as_of, lookback_days=7, half_life_days=3.0)
        assert result.unique_count == 1, tone
        assert content_hash(items[0].headline, "*") != content_hash(items[1].headline, "*")


def test_every_event_class_is_in_the_news(market: DemoMarket) -> None:
    classes = Counter(classify_event(item.headline) for item in market.news)
    for event_class in ("earnings", "guidance", "rating", "regulatory", "macro"):
        assert classes[event_class] >= 10, event_class


def test_market_wide_news_is_macro_apart_from_the_hostile_items(market: DemoMarket) -> None:
    hostile = {headline for _, headline in HOSTILE_HEADLINES}
    for item in market.news_for(None):
        assert item.headline in hostile or classify_event(item.headline) == "macro", item.headline


def test_each_instrument_gets_several_headlines_a_quarter(market: DemoMarket) -> None:
    quarters = len(market.sessions) / 63
    for instrument in market.instruments:
        assert len(market.news_for(instrument.symbol)) / quarters >= 3, instrument.symbol


def test_results_and_broker_headlines_sit_on_moves_of_the_same_sign(market: DemoMarket) -> None:
    checked = 0
    for item in market.news:
        if item.symbol is None or classify_event(item.headline) not in ("earnings", "rating"):
            continue
        if item.headline in {headline for _, headline in HOSTILE_HEADLINES}:
            continue
        move = session_return(market, item.symbol, reaction_session(item, market.sessions))
        assert (headline_sentiment(item.headline) > 0) == (move >= 0), (item, move)
        checked += 1
    assert checked > 300


def test_results_days_trade_more_shares_than_usual(market: DemoMarket) -> None:
    for instrument in market.instruments[:4]:
        bars = market.bars_for(instrument.symbol)
        results_days = {
            reaction_session(item, market.sessions)
            for item in market.news_for(instrument.symbol)
            if classify_event(item.headline) == "earnings"
        }
        usual = np.median([bar.volume for bar in bars])
        on_results = np.median([bars[day].volume for day in results_days])
        assert on_results > 2 * usual, instrument.symbol


def test_news_is_published_in_india_during_or_after_market_hours_on_session_days(market: DemoMarket) -> None:
    sessions = set(market.sessions)
    for item in market.news:
        assert item.published_at.utcoffset() == dt.timedelta(hours=5, minutes=30)
        assert str(item.published_at.tzinfo) == "Asia/Kolkata"
        assert item.published_at.date() in sessions
        assert item.published_at.time() >= MARKET_OPEN
    assert market.news == sorted(market.news, key=lambda item: item.published_at)


def test_no_two_headlines_share_a_storage_hash(market: DemoMarket) -> None:
    hashes = [content_hash(item.headline, item.symbol or "*") for item in market.news]
    assert len(hashes) == len(set(hashes))


def test_hostile_headlines_arrive_as_ordinary_recent_news(market: DemoMarket) -> None:
    by_headline = {item.headline: item for item in market.news}
    texts = [headline for _, headline in HOSTILE_HEADLINES]
    assert any(text.startswith("Ignore previous instructions") for text in texts)
    assert any(text.startswith("SYSTEM:") for text in texts)
    assert any("</UNTRUSTED_FEED_DATA>" in text for text in texts)
    for symbol, headline in HOSTILE_HEADLINES:
        item = by_headline[headline]
        assert item.symbol == symbol
        assert (DEMO_END - item.published_at.date()).days <= 14


# --- macro and fundamentals ----------------------------------------------------------------------


def test_it_publishes_the_macro_series_the_agents_read(market: DemoMarket) -> None:
    codes = {series.code: series for series in market.macro}
    assert set(codes) == {"RBI_REPO", "IN_CPI_YOY", "USDINR", "BRENT", "IN10Y", "NIFTY50"}
    for series in market.macro:
        dates = [reading.date for reading in series.readings]
        assert dates == sorted(set(dates)), series.code
        assert market.start <= dates[0] and dates[-1] <= market.end
        assert len(dates) >= (36 if series.frequency == "monthly" else 150), series.code
    assert all(4.0 <= reading.value <= 8.0 for reading in codes["RBI_REPO"].readings)
    assert all(70.0 <= reading.value <= 110.0 for reading in codes["USDINR"].readings)


def test_only_some_instruments_have_fundamentals(market: DemoMarket) -> None:
    covered = {snapshot.symbol for snapshot in market.fundamentals}
    assert 6 <= len(covered) <= 9
    assert {"ITC", "SBIN", "LT", "SUNPHARMA"}.isdisjoint(covered)
    assert market.fundamentals_for("ITC") == []


def test_fundamentals_are_quarterly_and_plausible(market: DemoMarket) -> None:
    snapshots = market.fundamentals_for("TCS")
    assert len(snapshots) >= 12
    gaps = [(later.as_of - earlier.as_of).days for earlier, later in itertools.pairwise(snapshots)]
    assert all(60 <= gap <= 120 for gap in gaps)
    for snapshot in market.fundamentals:
        assert snapshot.pe is not None and 5 < snapshot.pe < 150
        assert snapshot.pb is not None and 0.5 < snapshot.pb < 40
        assert snapshot.net_margin_pct is not None and 0 < snapshot.net_margin_pct < 40
    # EV/EBITDA means little for a lender
    assert all(snapshot.ev_ebitda is None for snapshot in market.fundamentals_for("HDFCBANK"))
