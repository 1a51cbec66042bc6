"""What a backtestable signal strategy is: bars in, a target position per bar out.

A *signal strategy* is not a desk ``Strategy`` (a mandate a person writes); it is a rule that turns
one instrument's daily bars into the position it wants to hold: +1 long, 0 flat, -1 short. The
position on bar ``t`` is decided with data up to and including bar ``t``'s close and is acted on
at the next bar's open by the backtester, so a strategy never needs to think about execution,
and look-ahead is a property we can test: change bars after ``t`` and nothing up to ``t`` moves.

Three things a strategy declares and the research loop relies on:

- ``PARAM_RANGES``: at most five tunable parameters, each a ``ParamRange`` (the search space the
  proposers and the optimiser draw from, and the hygiene gate checks against);
- ``ALLOWS_SHORT``: whether its rule ever asks for -1 (the backtest config may still forbid it);
- ``positions(bars)``: the hook. ``positions_grid`` evaluates many parameter sets at once; the
  default loops, strategies that can vectorise override it.

Pure: numpy and the desk's pure indicator code only.
"""

from __future__ import annotations

import datetime as dt
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar, Literal

import numpy as np

MAX_PARAMS = 5
BAR_FIELDS = ("open", "high", "low", "close", "volume")

ParamKind = Literal["int", "float"]
ParamValue = int | float


@dataclass(frozen=True)
class Bars:
    """One instrument's daily bars as float64 arrays, oldest first, and how it trades.

    ``tick`` and ``lot_size`` are the exchange's (fills go onto the tick grid, quantities are whole
    lots); prices are floats for the vectorised maths, and the exact backtest turns each into the
    Decimal it was stored as (``price``).
    """

    symbol: str
    dates: np.ndarray  # datetime64[D]
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    tick: Decimal = Decimal("0.05")
    lot_size: int = 1
    currency: str = "INR"

    def __post_init__(self) -> None:
        dates = np.asarray(self.dates, dtype="datetime64[D]")
        object.__setattr__(self, "dates", dates)
        for name in BAR_FIELDS:
            values = np.asarray(getattr(self, name), dtype=np.float64)
            if values.ndim != 1 or values.shape != dates.shape:
                raise ValueError(f"{name} must be a 1-D array as long as dates ({dates.shape[0]}), got {values.shape}")
            object.__setattr__(self, name, values)
        if len(dates) > 1 and not (np.diff(dates) > np.timedelta64(0, "D")).all():
            raise ValueError(f"{self.symbol}: bar dates must be strictly ascending")
        if not isinstance(self.tick, Decimal) or not self.tick.is_finite() or self.tick <= 0:
            raise ValueError(f"tick must be a positive Decimal, got {self.tick!r}")
        if isinstance(self.lot_size, bool) or not isinstance(self.lot_size, int) or self.lot_size < 1:
            raise ValueError(f"lot_size must be a whole number of at least 1, got {self.lot_size!r}")
        _check_prices(self)

    def __len__(self) -> int:
        return int(self.close.shape[0])

    def window(self, start: int, stop: int) -> Bars:
        """Bars ``start`` to ``stop`` (an index slice, as Python slices it), copied: a window handed
        to search code shares no memory with the bars it came from."""
        # A slice of checked bars is checked: built without running the checks again.
        window = object.__new__(Bars)
        for name in ("dates", *BAR_FIELDS):
            object.__setattr__(window, name, getattr(self, name)[start:stop].copy())
        for name in ("symbol", "tick", "lot_size", "currency"):
            object.__setattr__(window, name, getattr(self, name))
        return window

    def date(self, index: int) -> dt.date:
        return self.dates[index].astype(dt.date)

    def price(self, name: str, index: int) -> Decimal:
        """The price as the Decimal it was stored as: a stored price has few digits, and the
        shortest repr of its float reads back exactly those digits."""
        return Decimal(repr(float(getattr(self, name)[index])))

    @classmethod
    def from_rows(
        cls,
        symbol: str,
        rows: Iterable[Mapping[str, Any] | Any],
        *,
        tick: Decimal = Decimal("0.05"),
        lot_size: int = 1,
        currency: str = "INR",
    ) -> Bars:
        """Bars from rows with ``date``, ``open``, ``high``, ``low``, ``close`` and ``volume``:
        mappings (``values()`` of a queryset) or objects (``DailyBar`` instances), oldest first."""
        columns: dict[str, list[Any]] = {name: [] for name in ("date", *BAR_FIELDS)}
        for row in rows:
            for name, values in columns.items():
                values.append(row[name] if isinstance(row, Mapping) else getattr(row, name))
        return cls(
            symbol=symbol,
            dates=np.array(columns["date"], dtype="datetime64[D]"),
            **{name: np.array([float(value) for value in columns[name]], dtype=np.float64) for name in BAR_FIELDS},
            tick=Decimal(tick),
            lot_size=int(lot_size),
            currency=currency,
        )

    @classmethod
    def from_frame(
        cls, symbol: str, frame: Any, *, tick: Decimal = Decimal("0.05"), lot_size: int = 1, currency: str = "INR"
    ) -> Bars:
        """Bars from a date-indexed frame with the bar columns (``trading.market.selectors.bars_frame``)."""
        return cls(
            symbol=symbol,
            dates=np.array([np.datetime64(day, "D") for day in frame.index], dtype="datetime64[D]"),
            **{name: frame[name].to_numpy(dtype=np.float64) for name in BAR_FIELDS},
            tick=Decimal(tick),
            lot_size=int(lot_size),
            currency=currency,
        )


def _check_prices(bars: Bars) -> None:
    for name in BAR_FIELDS:
        values = getattr(bars, name)
        if not np.isfinite(values).all():
            raise ValueError(f"{bars.symbol}: {name} has a missing or non-finite value")
        if name != "volume" and (values <= 0).any():
            raise ValueError(f"{bars.symbol}: {name} prices must be positive")
    if (bars.volume < 0).any():
        raise ValueError(f"{bars.symbol}: volume must not be negative")


@dataclass(frozen=True)
class ParamRange:
    """One tunable parameter: ``low`` to ``high`` inclusive, searched in steps of ``step``.

    ``kind`` "int" takes whole numbers only; "float" any finite number in the range. ``default``
    is the value used when a strategy is built without this parameter (the grid value nearest the
    middle when not given). ``contains`` checks the range, not the grid: a proposer may pick a
    value between grid points.
    """

    low: float
    high: float
    step: float
    kind: ParamKind = "int"
    default: float | None = field(default=None)

    def __post_init__(self) -> None:
        if self.kind not in ("int", "float"):
            raise ValueError(f"a parameter's kind must be 'int' or 'float', got {self.kind!r}")
        for name in ("low", "high", "step"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"a parameter's {name} must be a finite number, got {value!r}")
        if self.low > self.high:
            raise ValueError(f"a parameter's low ({self.low}) is above its high ({self.high})")
        if self.step <= 0:
            raise ValueError(f"a parameter's step must be positive, got {self.step}")
        if self.kind == "int" and not all(float(v).is_integer() for v in (self.low, self.high, self.step)):
            raise ValueError("an int parameter needs whole-number low, high and step")
        if self.default is not None and not self.contains(self.default):
            raise ValueError(f"the default {self.default} lies outside {self.low}..{self.high}")

    def values(self) -> list[ParamValue]:
        """Every grid value from ``low`` to ``high`` (``high`` included when on the grid)."""
        count = math.floor((self.high - self.low) / self.step + 1e-9) + 1
        points = [self.low + index * self.step for index in range(count)]
        if self.kind == "int":
            return [round(point) for point in points]
        return [round(point, 10) for point in points]

    def contains(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        if self.kind == "int" and not float(value).is_integer():
            return False
        return self.low <= value <= self.high

    def coerce(self, value: ParamValue) -> ParamValue:
        return int(value) if self.kind == "int" else float(value)

    def default_value(self) -> ParamValue:
        if self.default is not None:
            return self.coerce(self.default)
        grid = self.values()
        return grid[len(grid) // 2]

    def describe(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "step": self.step, "kind": self.kind}


class SignalStrategy(ABC):
    """A rule from one instrument's daily bars to a target position per bar.

    Subclasses set ``key`` (a short name), ``PARAM_RANGES`` (at most five ``ParamRange``),
    ``ALLOWS_SHORT``, a docstring saying what the rule is, and implement ``positions``. Build one
    with keyword parameters: unknown names, values outside their range and missing values without
    a default are refused with a ``ValueError`` naming the parameter; ``check_params`` adds the
    rules between parameters (a fast average shorter than the slow one).
    """

    key: ClassVar[str] = ""
    PARAM_RANGES: ClassVar[dict[str, ParamRange]] = {}
    ALLOWS_SHORT: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        self.params: dict[str, ParamValue] = self.validate_params(params)
        self.check_params()

    @classmethod
    def validate_params(cls, params: Mapping[str, Any]) -> dict[str, ParamValue]:
        """The full parameter set (defaults filled in), or ``ValueError`` saying what is wrong."""
        ranges = cls.PARAM_RANGES
        if len(ranges) > MAX_PARAMS:
            raise ValueError(f"{cls.__name__} declares {len(ranges)} parameters; at most {MAX_PARAMS} are allowed")
        unknown = sorted(set(params) - set(ranges))
        if unknown:
            raise ValueError(f"{cls.__name__} has no parameter {', '.join(unknown)}; it takes {', '.join(ranges)}")
        values: dict[str, ParamValue] = {}
        for name, bounds in ranges.items():
            if name not in params:
                values[name] = bounds.default_value()
                continue
            value = params[name]
            if not bounds.contains(value):
                kind = "a whole number" if bounds.kind == "int" else "a number"
                raise ValueError(
                    f"{cls.__name__}: {name} must be {kind} from {bounds.low} to {bounds.high}, got {value!r}"
                )
            values[name] = bounds.coerce(value)
        return values

    @classmethod
    def grid_values(cls, grid: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
        """Each parameter's values across ``grid`` as an array (defaults filled in), validated.

        The common case, every config naming every parameter with plain numbers in range, is
        checked in a few array operations; anything else goes through ``validate_params`` config
        by config, which fills defaults and raises the clear message. Rules between parameters
        are the caller's (``check_params`` per config is what a single strategy runs).
        """
        names = list(cls.PARAM_RANGES)
        if grid and all(len(params) == len(names) and all(name in params for name in names) for params in grid):
            try:
                arrays = {name: np.array([params[name] for params in grid], dtype=np.float64) for name in names}
            except (TypeError, ValueError):
                arrays = {}
            if arrays and all(
                _grid_in_range(arrays[name], bounds, grid, name) for name, bounds in cls.PARAM_RANGES.items()
            ):
                return arrays
        configs = [cls.validate_params(params) for params in grid]
        return {name: np.array([params[name] for params in configs], dtype=np.float64) for name in names}

    def check_params(self) -> None:
        """Rules between parameters; raise ``ValueError`` with a clear message. None by default."""
        return

    @abstractmethod
    def positions(self, bars: Bars) -> np.ndarray:
        """The target position on each bar (int8 in {-1, 0, 1}), decided with data up to and
        including that bar's close. Acted on from the next bar's open."""

    def indicators(self, bars: Bars) -> dict[str, np.ndarray]:
        """The series the rule reads, by name (NaN during warm-up); shown by ``reading``."""
        return {}

    @classmethod
    def positions_grid(cls, bars: Bars, grid: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Positions for many parameter sets at once: configs x bars, int8. This default builds
        each strategy in turn; subclasses vectorise where the rule allows."""
        matrix = np.zeros((len(grid), len(bars)), dtype=np.int8)
        for row, params in enumerate(grid):
            matrix[row] = cls(**params).positions(bars)
        return matrix

    def reading(self, bars: Bars) -> dict[str, Any]:
        """The latest position and indicator values, for the desk's evidence (JSON-friendly)."""
        if not len(bars):
            return {"strategy": self.key, "params": dict(self.params), "as_of": None, "position": 0, "values": {}}
        positions = self.positions(bars)
        values = {name: _json_number(series[-1]) for name, series in self.indicators(bars).items()}
        return {
            "strategy": self.key,
            "params": dict(self.params),
            "as_of": bars.date(len(bars) - 1).isoformat(),
            "last_close": float(bars.close[-1]),
            "position": int(positions[-1]),
            "values": values,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={value!r}" for name, value in self.params.items())
        return f"{type(self).__name__}({args})"


def _grid_in_range(values: np.ndarray, bounds: ParamRange, grid: Sequence[Mapping[str, Any]], name: str) -> bool:
    if not np.isfinite(values).all() or (values < bounds.low).any() or (values > bounds.high).any():
        return False
    if any(isinstance(params[name], bool) for params in grid):
        return False
    return bounds.kind == "float" or bool((values == np.round(values)).all())


def _json_number(value: float) -> float | None:
    number = float(value)
    return round(number, 6) if math.isfinite(number) else None


def as_positions(values: np.ndarray) -> np.ndarray:
    """Int8 positions in {-1, 0, 1} from any numeric array (NaN counts as flat)."""
    array = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0)
    return np.sign(array).astype(np.int8)
