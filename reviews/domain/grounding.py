"""Does the narrative cite only numbers the hard part holds? Pure; no Django.

A retrospective's narrative is a model's reading of figures code computed. Every number it writes
is read back here and looked up among the hard part's figures; one the hard part does not hold is
flagged (``ungrounded``), so the page can say which sentence quotes a figure nobody computed.

What counts as a number in the narrative (``cited_numbers``):

- digits with optional Indian or Western grouping (``1,23,456.50``, ``123,456``) and decimals;
- a sign written before the number or after a currency mark (``-₹1,234``, ``₹-1234.50``, ``+12``,
  the Unicode minus ``−``); a currency mark (``₹``, ``Rs``, ``INR``) is not part of the value;
- a suffix: ``%`` (a percentage), ``k`` (thousands), ``lakh`` and ``crore``; ``x`` and ``R``
  (multiples) are read as plain numbers;
- not a number: digits glued to a letter or underscore (``NIFTY50``, ``Q3``), the digits of a
  heuristic code (``H-7``) and ISO dates (``2026-11-20``; the period's dates are in the hard part
  as dates, and a date is not a figure).

When a number is grounded (``is_grounded``): some figure ``v`` of the hard part lies within the
number's own rounding, ``|v − n| ≤ ½ · 10^−decimals`` (``1,234.5`` is grounded by ``1234.50`` and by
``1234.54``; ``1,234`` by ``1234.49``). A percentage ``p%`` is grounded by a rate ``p / 100`` within
its rounding (``75%`` by ``0.7500``) or by the figure ``p`` itself. A thousands figure ``1.2k`` is
grounded within ½ of its last written digit (``1,150.00`` to ``1,250.00``). A number written with a
sign must match in sign; one written without may match either sign, as prose says "a loss of
₹500" for ``-500.00``.

The hard part's figures (``hard_figures``) are every number in it: integers, floats and strings
that spell a decimal number (money "−1234.50", rates "0.7500"), at any depth.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from reviews.domain.heuristics import HEURISTIC_CODE

__all__ = [
    "CitedNumber",
    "Figures",
    "cited_numbers",
    "hard_figures",
    "is_grounded",
    "narrative_texts",
    "ungrounded",
]

_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NUMBER = re.compile(
    r"""
    (?<![\w.,])                                   # not glued to a word or another number
    (?P<sign>[+\-−](?=₹|Rs\.?|INR|\d))?
    (?P<currency>₹|Rs\.?|INR)?\s?
    (?P<inner_sign>[+\-−](?=\d))?
    (?P<digits>\d{1,3}(?:,\d{2,3})+(?!\d)|\d+)
    (?:\.(?P<decimals>\d+))?
    (?P<suffix>\s?%|\s?k\b|\s?lakh\b|\s?crore\b|[xR]\b)?
    (?![\w%])                                     # nor glued to a word after it
    """,
    re.VERBOSE,
)
_SCALE = {"%": Decimal(1), "k": Decimal(1_000), "lakh": Decimal(100_000), "crore": Decimal(10_000_000)}
_PLAIN_NUMBER = re.compile(r"^[+\-]?\d+(?:\.\d+)?$")
_HUNDRED = Decimal(100)


@dataclass(frozen=True)
class CitedNumber:
    """A number as the narrative wrote it (``text``), its value, the tolerance its rounding
    allows, whether it carried a sign and whether it was a percentage."""

    text: str
    value: Decimal
    tolerance: Decimal
    signed: bool
    percent: bool


@dataclass(frozen=True)
class Figures:
    """The hard part's figures, sorted, with their absolute values, for lookups by range."""

    values: tuple[Decimal, ...]
    magnitudes: tuple[Decimal, ...]

    @classmethod
    def of(cls, values: Iterable[Decimal]) -> Figures:
        unique = set(values)
        return cls(values=tuple(sorted(unique)), magnitudes=tuple(sorted({abs(value) for value in unique})))


def cited_numbers(text: str) -> list[CitedNumber]:
    """Every number ``text`` cites, in order (see the module for what counts)."""
    cleaned = _ISO_DATE.sub(" ", HEURISTIC_CODE.sub(" ", text))
    return [_cited(match) for match in _NUMBER.finditer(cleaned)]


def _cited(match: re.Match[str]) -> CitedNumber:
    sign_text = match.group("sign") or match.group("inner_sign") or ""
    negative = sign_text in ("-", "−")
    decimals = match.group("decimals") or ""
    digits = match.group("digits").replace(",", "")
    suffix = (match.group("suffix") or "").strip()
    scale = _SCALE.get(suffix, Decimal(1))
    written = Decimal(f"{digits}.{decimals}" if decimals else digits)
    half_unit = Decimal(5).scaleb(-(len(decimals) + 1))  # ½ of the last written digit
    value = -written * scale if negative else written * scale
    return CitedNumber(
        text=match.group(0).strip(),
        value=value,
        tolerance=half_unit * scale,
        signed=bool(sign_text),
        percent=suffix == "%",
    )


def hard_figures(hard: object) -> Figures:
    """Every number in the hard part, at any depth (see the module)."""
    return Figures.of(_numbers(hard))


def _numbers(node: object) -> Iterator[Decimal]:
    if isinstance(node, Mapping):
        for value in node.values():
            yield from _numbers(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _numbers(item)
    else:
        number = _leaf_number(node)
        if number is not None:
            yield number


def _leaf_number(node: object) -> Decimal | None:
    """A leaf's number: an int, a finite float (by its shortest repr), or a string spelling a
    decimal; None for anything else (a bool, a date, a word)."""
    if isinstance(node, bool):
        return None
    if isinstance(node, int):
        return Decimal(node)
    if isinstance(node, float):
        return Decimal(repr(node)) if math.isfinite(node) else None
    if isinstance(node, str) and _PLAIN_NUMBER.match(node.strip()):
        return Decimal(node.strip())
    return None


def is_grounded(number: CitedNumber, figures: Figures) -> bool:
    """Whether a figure of the hard part lies within the number's own rounding (see the module)."""
    candidates = [(number.value, number.tolerance)]
    if number.percent:
        candidates.append((number.value / _HUNDRED, number.tolerance / _HUNDRED))
    for value, tolerance in candidates:
        pool = figures.values if number.signed else figures.magnitudes
        target = value if number.signed else abs(value)
        if _within(pool, target, tolerance):
            return True
    return False


def _within(pool: Sequence[Decimal], target: Decimal, tolerance: Decimal) -> bool:
    index = bisect_left(pool, target - tolerance)
    return index < len(pool) and pool[index] <= target + tolerance


def narrative_texts(narrative: Mapping[str, object]) -> list[tuple[str, str]]:
    """(where, text) for each text of a narrative: ``what_worked[0]``, ``hindsight``,
    ``proposals[1].text`` … (the proposal's factor and heuristic code are labels, not prose)."""
    texts: list[tuple[str, str]] = []
    for field in ("what_worked", "what_failed"):
        items = narrative.get(field) or []
        if isinstance(items, list):
            texts.extend((f"{field}[{index}]", str(item)) for index, item in enumerate(items))
    hindsight = narrative.get("hindsight")
    if isinstance(hindsight, str):
        texts.append(("hindsight", hindsight))
    proposals = narrative.get("proposals") or []
    if isinstance(proposals, list):
        for index, proposal in enumerate(proposals):
            if isinstance(proposal, Mapping):
                texts.append((f"proposals[{index}].text", str(proposal.get("text", ""))))
    return texts


def ungrounded(narrative: Mapping[str, object], hard: object) -> list[dict[str, str]]:
    """Each number the narrative cites that the hard part does not hold, with where it was cited:
    ``[{"number": "₹9,999", "where": "what_failed[1]"}, …]`` in reading order."""
    figures = hard_figures(hard)
    return [
        {"number": number.text, "where": where}
        for where, text in narrative_texts(narrative)
        for number in cited_numbers(text)
        if not is_grounded(number, figures)
    ]
