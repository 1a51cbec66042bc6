"""Hindsight on a trade's memory record: what a position retrospective adds to the lesson the
stage-12 review wrote when the position closed. Pure; no Django.

The review's record carries the trade's *valence* in its ``outcome`` tag, a fact code wrote from
the realised PnL: ``win`` is positive, ``loss`` negative, ``scratch`` (a result inside the scratch
band) neutral. The retrospective knows more: the whole path, its peak and the regret. The record
gains three hindsight tags, each a figure of the retrospective's hard part (never a model's):
``final_pnl``, ``vs_inaction`` and ``regret``, money as two-decimal strings.

**The reversal rule.** Hindsight's valence is decided from the figures alone:

- negative when inaction was better: ``vs_inaction < 0`` (the trade lost money against doing
  nothing, which earns exactly zero);
- negative when the exit gave back more than it kept: the trade ended ahead (``final_pnl > 0``)
  but ``regret > final_pnl``, i.e. less than half of the peak profit was banked. The entry was
  right; the exit threw most of it away, so the lesson must not be recalled as a clean win;
- positive when the trade ended ahead and kept at least half of its peak (``regret <= final_pnl``);
- neutral when it ended exactly flat.

The record's valence is *reversed* when the stated valence and hindsight's have opposite signs
(a ``win`` whose hindsight is negative, or a ``loss`` whose hindsight is positive). A neutral
side on either end reverses nothing: there was no sign to contradict. A reversal adds the tags
``retrospective_reversal`` (what it reversed, e.g. ``win to negative: exit gave back the peak``)
and ``valence`` (hindsight's: ``negative`` or ``positive``); the ``outcome`` tag stays the fact it
was. The rule reads only the record's ``outcome`` tag and the figures, never the tags it writes,
so applying it twice gives the same tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Literal

__all__ = [
    "HINDSIGHT_TAGS",
    "REVERSAL_TAG",
    "VALENCE_TAG",
    "Hindsight",
    "HindsightTags",
    "hindsight_tags",
    "hindsight_valence",
    "stated_valence",
]

Valence = Literal[-1, 0, 1]

REVERSAL_TAG = "retrospective_reversal"
VALENCE_TAG = "valence"
HINDSIGHT_TAGS = ("final_pnl", "vs_inaction", "regret")
_PAISE = Decimal("0.01")
_ZERO = Decimal(0)
_VALENCE_BY_OUTCOME: dict[str, Valence] = {"win": 1, "loss": -1, "scratch": 0}
_VALENCE_WORD = {1: "positive", -1: "negative", 0: "neutral"}


@dataclass(frozen=True)
class Hindsight:
    """The retrospective's figures for one closed position (money, in the account's currency)."""

    final_pnl: Decimal
    vs_inaction: Decimal
    regret: Decimal

    @classmethod
    def from_figures(cls, figures: Mapping[str, object]) -> Hindsight:
        """From a hard part's lifecycle or position row: ``final_pnl`` (or ``realised_pnl``),
        ``vs_inaction`` and ``regret``, as decimal strings or numbers. Refuses (ValueError) a
        missing or non-numeric figure and a negative regret (a peak is never below the end)."""
        final = figures.get("final_pnl", figures.get("realised_pnl"))
        hindsight = cls(
            final_pnl=_money(final, "final_pnl"),
            vs_inaction=_money(figures.get("vs_inaction"), "vs_inaction"),
            regret=_money(figures.get("regret"), "regret"),
        )
        if hindsight.regret < _ZERO:
            raise ValueError(f"regret is the peak less the final PnL and cannot be negative, got {hindsight.regret}")
        return hindsight


@dataclass(frozen=True)
class HindsightTags:
    """The record's tags after hindsight, and whether its valence was reversed."""

    tags: dict[str, str]
    reversed: bool
    valence: Valence


def _money(value: object, label: str) -> Decimal:
    if value is None or isinstance(value, bool):
        raise ValueError(f"the hindsight figure {label} is missing")
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"the hindsight figure {label} is not a number: {value!r}") from None
    if not amount.is_finite():
        raise ValueError(f"the hindsight figure {label} is not finite: {value!r}")
    return amount.quantize(_PAISE, rounding=ROUND_HALF_UP)


def stated_valence(tags: Mapping[str, str]) -> Valence:
    """The valence the review gave the record: its ``outcome`` tag (win +1, loss −1, else 0)."""
    return _VALENCE_BY_OUTCOME.get(str(tags.get("outcome", "")).lower(), 0)


def hindsight_valence(hindsight: Hindsight) -> tuple[Valence, str]:
    """Hindsight's valence and why (see the module's rule)."""
    if hindsight.vs_inaction < _ZERO:
        return -1, "inaction was better"
    if hindsight.final_pnl > _ZERO and hindsight.regret > hindsight.final_pnl:
        return -1, "exit gave back the peak"
    if hindsight.final_pnl > _ZERO:
        return 1, "kept most of the peak"
    return 0, "ended flat"


def hindsight_tags(tags: Mapping[str, str], hindsight: Hindsight) -> HindsightTags:
    """``tags`` with the hindsight figures added and, when hindsight reverses the stated valence,
    the reversal tags; every other tag is kept as it was. Idempotent: feeding the result back in
    with the same figures returns the same tags."""
    stated = stated_valence(tags)
    valence, why = hindsight_valence(hindsight)
    updated = {key: value for key, value in tags.items() if key not in (REVERSAL_TAG, VALENCE_TAG)}
    updated.update(
        final_pnl=_plain(hindsight.final_pnl),
        vs_inaction=_plain(hindsight.vs_inaction),
        regret=_plain(hindsight.regret),
    )
    reversed_ = stated != 0 and valence != 0 and stated != valence
    if reversed_:
        updated[REVERSAL_TAG] = f"{tags.get('outcome', '')} to {_VALENCE_WORD[valence]}: {why}"
        updated[VALENCE_TAG] = _VALENCE_WORD[valence]
    return HindsightTags(tags=updated, reversed=reversed_, valence=valence)


def _plain(amount: Decimal) -> str:
    return f"{amount:.2f}"
