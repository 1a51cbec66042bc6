"""Market-data providers: where ``fetch_bars`` and the after-close refresh get daily bars.

``base.MarketDataProvider`` is the protocol; ``provider_for`` builds the one the settings name
(``DESK_MARKET_DATA_PROVIDER``): "yahoo" is ``yahoo.YahooProvider`` over the optional ``yfinance``
package (``pip install -r requirements-data.txt``). Nothing here runs unless asked: the desk's
default is no provider, and tests hand a provider recorded payloads.
"""

from __future__ import annotations

from trading.market.providers.base import (
    MarketDataProvider,
    ProviderAction,
    ProviderBar,
    ProviderError,
    ProviderMissing,
)

__all__ = ["MarketDataProvider", "ProviderAction", "ProviderBar", "ProviderError", "ProviderMissing", "provider_for"]


def provider_for(name: str) -> MarketDataProvider:
    """The provider called ``name``; ``ProviderError`` for a name the desk does not know."""
    if name == "yahoo":
        from trading.market.providers.yahoo import YahooProvider

        return YahooProvider()
    raise ProviderError(f"no market-data provider {name!r} (set DESK_MARKET_DATA_PROVIDER=yahoo)")
