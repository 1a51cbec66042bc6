"""Turns a FeatureBundle into rows a person can scan. Formatting only; no figures are computed here.

A run's presentation (its notes, debate, thesis and risk) is ``trading.pipeline.presenters``."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from vocabulary.features import FeatureBundle, TechnicalFeatures
from vocabulary.money import DEFAULT_CURRENCY, format_money
from vocabulary.numbers import format_number, format_signed_percent

NOT_ENOUGH = "n/a"


@dataclass(frozen=True)
class Row:
    label: str
    value: str
    tone: str = ""  # "up", "down" or "" for colouring only


def _num(value: float | None, digits: int = 2) -> str:
    return NOT_ENOUGH if value is None else format_number(value, digits)


def _pct(value: float | None, digits: int = 2) -> str:
    return NOT_ENOUGH if value is None else format_signed_percent(value, digits)


def _level(level: float | None, move_pct: float | None, currency: str) -> str:
    """A level with the move from the last close to it: '₹735.00 (-0.88% from the close)' for a
    support below the price, '+1.20%' for a resistance above. The features store each distance as
    positive on its usual side (support below, resistance above), so the caller passes the move."""
    if level is None:
        return NOT_ENOUGH
    text = format_money(Decimal(str(level)), currency)
    return text if move_pct is None else f"{text} ({_pct(move_pct)} from the close)"


def _negated(value: float | None) -> float | None:
    return None if value is None else -value


def _tone(value: float | None) -> str:
    if value is None or value == 0:
        return ""
    return "up" if value > 0 else "down"


def technical_sections(t: TechnicalFeatures, *, currency: str = DEFAULT_CURRENCY) -> list[tuple[str, list[Row]]]:
    """The technical features as labelled rows; prices in ``currency`` (the instrument's)."""
    above = lambda level: "" if level is None else ("up" if t.last_close > level else "down")  # noqa: E731

    def money(value: float | None) -> str:
        return NOT_ENOUGH if value is None else format_money(Decimal(str(value)), currency)

    return [
        (
            "Price",
            [
                Row("Last close", money(t.last_close)),
                Row("Previous close", money(t.prev_close)),
                Row("Gap at open", _pct(t.gap_pct), _tone(t.gap_pct)),
                Row(
                    "Volume vs 20-day average",
                    NOT_ENOUGH if t.volume_vs_avg is None else f"{t.volume_vs_avg:.2f}×",
                ),
            ],
        ),
        (
            "Trend",
            [
                Row("SMA 20", money(t.sma_20), above(t.sma_20)),
                Row("SMA 50", money(t.sma_50), above(t.sma_50)),
                Row("SMA 200", money(t.sma_200), above(t.sma_200)),
                Row("EMA 20", money(t.ema_20), above(t.ema_20)),
            ],
        ),
        (
            "Momentum",
            [
                Row("RSI 14", _num(t.rsi_14, 1)),
                Row("MACD line", _num(t.macd_line, 3), _tone(t.macd_line)),
                Row("MACD signal", _num(t.macd_signal, 3)),
                Row("MACD histogram", _num(t.macd_hist, 3), _tone(t.macd_hist)),
            ],
        ),
        (
            "Volatility",
            [
                Row("ATR 14", money(t.atr_14)),
                Row("Bollinger upper", money(t.bb_upper)),
                Row("Bollinger middle", money(t.bb_middle)),
                Row("Bollinger lower", money(t.bb_lower)),
            ],
        ),
        (
            "Levels",
            [
                Row("Swing high (20)", money(t.swing_high)),
                Row("Swing low (20)", money(t.swing_low)),
                # support_distance_pct is positive when the support is below the close: the move to it is down.
                Row("Support", _level(t.support, _negated(t.support_distance_pct), currency)),
                Row("Resistance", _level(t.resistance, t.resistance_distance_pct, currency)),
            ],
        ),
    ]


def bundle_context(bundle: FeatureBundle, *, currency: str = DEFAULT_CURRENCY) -> dict:
    return {"technical_sections": technical_sections(bundle.technical, currency=currency)}
