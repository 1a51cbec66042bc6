"""Feature bundles of the seeded demo universe, built by the pure stage-1 path without a database.

The same inputs the desk reads after ``seed_demo`` (bars, own and market-wide headlines, the
latest fundamentals snapshot), so tests can check real bundles and not only hand-made ones.
"""

from __future__ import annotations

import datetime as dt
import functools

import pandas as pd

from trading.market.domain.demo import DemoMarket, generate_demo_market
from trading.market.domain.features import BundleSettings, build_feature_bundle
from vocabulary.features import FeatureBundle, FundamentalsInput, NewsInput

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
LOOKBACK_BARS = 400


@functools.cache
def demo_market() -> DemoMarket:
    return generate_demo_market()


def demo_symbols() -> list[str]:
    return [instrument.symbol for instrument in demo_market().instruments]


def _bars(market: DemoMarket, symbol: str, as_of: dt.date) -> pd.DataFrame:
    rows = [bar for bar in market.bars_for(symbol) if bar.date <= as_of][-LOOKBACK_BARS:]
    frame = pd.DataFrame(
        [(bar.open, bar.high, bar.low, bar.close, bar.volume) for bar in rows],
        columns=["open", "high", "low", "close", "volume"],
    )
    frame.index = pd.Index([bar.date for bar in rows])
    return frame


def _news(market: DemoMarket, symbol: str) -> list[NewsInput]:
    return [
        NewsInput(
            headline=item.headline,
            source=item.source,
            published_at=item.published_at.astimezone(IST),
            scope="instrument" if item.symbol else "market",
        )
        for item in market.news
        if item.symbol in (symbol, None)
    ]


def _fundamentals(market: DemoMarket, symbol: str, as_of: dt.date) -> FundamentalsInput | None:
    snapshots = [snapshot for snapshot in market.fundamentals_for(symbol) if snapshot.as_of <= as_of]
    if not snapshots:
        return None
    latest = max(snapshots, key=lambda snapshot: snapshot.as_of)
    return FundamentalsInput(
        as_of=latest.as_of,
        source=latest.source,
        pe=latest.pe,
        pb=latest.pb,
        ev_ebitda=latest.ev_ebitda,
        revenue_growth_pct=latest.revenue_growth_pct,
        net_margin_pct=latest.net_margin_pct,
    )


def demo_bundle(symbol: str, as_of: dt.date | None = None) -> FeatureBundle:
    """The bundle the desk would build for ``symbol`` on the demo's last session (or ``as_of``)."""
    market = demo_market()
    day = as_of or market.sessions[-1]
    return build_feature_bundle(
        symbol=symbol,
        as_of=day,
        bars=_bars(market, symbol, day),
        news=_news(market, symbol),
        fundamentals=_fundamentals(market, symbol, day),
        tz=IST,
        config=BundleSettings(),
    )
