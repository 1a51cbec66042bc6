"""Rows for tests, made without running a pipeline: instruments with bars of a chosen shape,
accounts, runs, theses, orders, and positions that lived through a chosen path of prices.

    from tests.factories import InstrumentFactory, PositionFactory, bars_for, trending

    instrument = InstrumentFactory(bars=trending(100, 60, "0.4"))
    winner = PositionFactory(path=trending(100, 30, "1"))          # reaches its 2R target
    loser = PositionFactory(path=trending(100, 30, "-1"), direction="LONG")  # stopped out

Every price the broker would compute (fills, costs, exits, marks, realised profit) is computed by
the desk's own functions (vocabulary and the broker), never re-implemented here.
"""

from tests.factories.book import (
    AccountFactory,
    OrderFactory,
    PipelineRunFactory,
    PositionFactory,
    ThesisFactory,
    desk_slippage_bps,
    position_on_path,
)
from tests.factories.market import (
    DEFAULT_START,
    InstrumentFactory,
    PricePath,
    as_path,
    bars_for,
    flat,
    gapped,
    next_session,
    sessions,
    trending,
    wandering,
)

__all__ = [
    "DEFAULT_START",
    "AccountFactory",
    "InstrumentFactory",
    "OrderFactory",
    "PipelineRunFactory",
    "PositionFactory",
    "PricePath",
    "ThesisFactory",
    "as_path",
    "bars_for",
    "desk_slippage_bps",
    "flat",
    "gapped",
    "next_session",
    "position_on_path",
    "sessions",
    "trending",
    "wandering",
]
