"""Stage 1 through the service: stored data in, a bundle strictly as of the date out."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from trading.market import services
from trading.market.domain import features as features_module
from trading.market.domain.features import NoPriceData
from trading.market.domain.news import content_hash
from trading.models import DailyBar, FundamentalsSnapshot, MacroIndicator, NewsItem

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))


def _news(instrument, headline: str, when: dt.datetime, *, market_wide: bool = False) -> NewsItem:
    scope = "*" if market_wide else str(instrument)
    return NewsItem.objects.create(
        instrument=None if market_wide else instrument,
        headline=headline,
        source="Wire",
        published_at=when,
        content_hash=content_hash(headline, scope),
    )


@pytest.fixture
def market(instrument_with_bars):
    dates = list(instrument_with_bars.bars.order_by("date").values_list("date", flat=True))
    as_of = dates[250]
    on = lambda day, hour=16: dt.datetime.combine(day, dt.time(hour), tzinfo=IST)  # noqa: E731
    _news(instrument_with_bars, "Reliance Q2 net profit beats estimates", on(dates[248]))
    _news(instrument_with_bars, "Broker downgrades Reliance, cuts target price", on(dates[249]))
    _news(instrument_with_bars, "RBI holds repo rate steady", on(dates[247]), market_wide=True)
    _news(instrument_with_bars, "Reliance profit warning as refining margins collapse", on(dates[252]))
    FundamentalsSnapshot.objects.create(
        instrument=instrument_with_bars,
        as_of=dates[200],
        source="Filing",
        pe=Decimal("24.1"),
        pb=Decimal("2.2"),
    )
    FundamentalsSnapshot.objects.create(
        instrument=instrument_with_bars,
        as_of=dates[260],
        source="Filing",
        pe=Decimal("99.0"),
        pb=Decimal("9.9"),
    )
    for i, day in enumerate(dates[::20]):
        MacroIndicator.objects.create(
            code="REPO", name="RBI repo rate", unit="%", date=day, value=Decimal("6.50") + Decimal(i) / 100
        )
    return instrument_with_bars, dates, as_of


def test_the_bundle_uses_only_data_on_or_before_the_as_of_date(market):
    instrument, _dates, as_of = market

    bundle = services.feature_bundle_for(instrument=instrument, as_of=as_of)

    last = DailyBar.objects.get(instrument=instrument, date=as_of)
    assert bundle.technical.as_of == as_of and bundle.technical.last_close == float(last.close)
    assert bundle.technical.bars_used == 251
    assert {item.headline for item in bundle.news.items} == {
        "Reliance Q2 net profit beats estimates",
        "Broker downgrades Reliance, cuts target price",
        "RBI holds repo rate steady",
    }
    assert bundle.fundamentals.available and bundle.fundamentals.pe == 24.1
    assert all(reading.date <= as_of for reading in bundle.macro)
    assert not bundle.fallback


def test_changing_every_bar_and_headline_after_the_as_of_date_changes_nothing(market):
    instrument, _dates, as_of = market
    before = services.feature_bundle_for(instrument=instrument, as_of=as_of).model_dump()

    for bar in DailyBar.objects.filter(instrument=instrument, date__gt=as_of):
        bar.open, bar.high, bar.low, bar.close = bar.open * 3, bar.high * 3, bar.low * 3, bar.close * 3
        bar.volume *= 50
        bar.save()
    NewsItem.objects.filter(published_at__gt=dt.datetime.combine(as_of, dt.time.max, tzinfo=IST)).update(
        headline="Reliance record profit, massive upgrade, stellar beat"
    )
    _news(
        instrument,
        "Reliance wins record contract, strong buy upgrade",
        dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(9, 30), tzinfo=IST),
    )
    MacroIndicator.objects.create(
        code="REPO", name="RBI repo rate", unit="%", date=as_of + dt.timedelta(days=1), value=Decimal("9.99")
    )

    after = services.feature_bundle_for(instrument=instrument, as_of=as_of).model_dump()

    assert after == before


def test_an_instrument_without_fundamentals_is_marked_unavailable(instrument_with_bars):
    as_of = instrument_with_bars.bars.latest("date").date

    bundle = services.feature_bundle_for(instrument=instrument_with_bars, as_of=as_of)

    assert not bundle.fundamentals.available and bundle.fundamentals.pe is None


def test_a_failing_feature_path_falls_back_visibly_to_recent_closes(market, monkeypatch):
    instrument, _dates, as_of = market

    def broken(bars):
        raise ValueError("indicator feed is down")

    monkeypatch.setattr(features_module, "technical_features", broken)
    bundle = services.feature_bundle_for(instrument=instrument, as_of=as_of)

    assert bundle.fallback
    assert "ValueError: indicator feed is down" in bundle.warnings[0]
    assert bundle.technical.last_close == float(DailyBar.objects.get(instrument=instrument, date=as_of).close)
    assert bundle.technical.rsi_14 is None
    assert bundle.news.unique_count == 3


def test_no_bar_on_or_before_the_date_is_an_error_not_a_guess(instrument_with_bars):
    first = instrument_with_bars.bars.earliest("date").date

    with pytest.raises(NoPriceData, match="no bar on or before"):
        services.feature_bundle_for(instrument=instrument_with_bars, as_of=first - dt.timedelta(days=1))


def test_a_stored_snapshot_is_replaced_not_duplicated(market):
    instrument, _dates, as_of = market

    first = services.feature_snapshot_store(instrument=instrument, as_of=as_of)
    second = services.feature_snapshot_store(instrument=instrument, as_of=as_of)

    assert first.pk == second.pk
    assert second.bundle["technical"]["as_of"] == as_of.isoformat()
