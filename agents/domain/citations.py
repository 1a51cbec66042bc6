"""Numbers a note cites, checked against the bundle it was written from. Pure; no Django.

A model is told to use only the numbers it was handed; this is the check that it did. The
technical indicators a note names with a value next to them ("RSI(14)=58.00", "RSI 14 at 32.4",
"rsi_14=32.4", "ATR 12.3", "SMA50 2450", "close ₹2,450.50", "MACD hist -1.20 (line …, signal …)",
"Bollinger 720.00 / 740.00 / 760.00", "support 735.00 (support_distance_pct +2.00)") are read
from the summary, the key points and the evidence, and compared with the bundle's
``TechnicalFeatures``. A value the bundle does not have (the indicator is ``None``) is a mismatch:
the model cited a number it was never handed.

Tolerance: a cited value matches when it is within 1% of the bundle's value (relative) or within
the rounding of the cited figure (half a unit of its last printed decimal: "32" covers 31.5-32.5,
"32.4" covers 32.35-32.45), whichever is larger. Prompts print two decimals, so an honest quote
always matches; a restated or invented one does not.

Reading is deliberately narrow: a name must be followed directly by its value (optionally after
"=", ":", "at", "of", "is", "near", …), so "RSI above 70" or "close below support" cite nothing. A
period right after RSI or ATR ("RSI 14", "ATR(14)") is read as the period, never as the value.
Figures followed by "%", "x", "days" or "sessions" are not levels and are skipped (except for the
distance-in-percent fields). Only technical indicators are checked.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from agents.roles import AnalystNote
from vocabulary.features import FeatureBundle

__all__ = [
    "RELATIVE_TOLERANCE",
    "Citation",
    "CitationCheck",
    "check_citations",
    "extract_citations",
    "mismatch_warnings",
]

RELATIVE_TOLERANCE = 0.01

# field -> label shown to a person
LABELS: dict[str, str] = {
    "rsi_14": "RSI(14)",
    "atr_14": "ATR(14)",
    "sma_20": "SMA20",
    "sma_50": "SMA50",
    "sma_200": "SMA200",
    "ema_20": "EMA20",
    "macd_line": "MACD line",
    "macd_signal": "MACD signal",
    "macd_hist": "MACD histogram",
    "bb_upper": "Bollinger upper",
    "bb_middle": "Bollinger middle",
    "bb_lower": "Bollinger lower",
    "support": "support",
    "resistance": "resistance",
    "support_distance_pct": "support distance %",
    "resistance_distance_pct": "resistance distance %",
    "swing_high": "swing high",
    "swing_low": "swing low",
    "last_close": "close",
    "prev_close": "previous close",
}
PERCENT_FIELDS = frozenset({"support_distance_pct", "resistance_distance_pct"})

_SEP = r"_\s-"
_PERIOD_14 = rf"(?>\s*\(\s*14\s*\)|[{_SEP}]?14\b(?!\.\d))?+"  # atomic: "RSI 14" is never the value 14
# Ordered so the longer name wins where two start at the same place ("prev close" before "close").
_ALIASES: tuple[tuple[str, str], ...] = (
    ("support_distance_pct", r"support[\s_]distance(?:[\s_]pct)?"),
    ("resistance_distance_pct", r"resistance[\s_]distance(?:[\s_]pct)?"),
    ("rsi_14", rf"rsi{_PERIOD_14}"),
    ("atr_14", rf"atr{_PERIOD_14}"),
    ("sma_200", rf"(?:sma|dma)[{_SEP}]*\(?\s*200\s*\)?|200[\s-]*(?:day[\s-]*)?(?:sma|dma|moving average)"),
    ("sma_50", rf"(?:sma|dma)[{_SEP}]*\(?\s*50\s*\)?|50[\s-]*(?:day[\s-]*)?(?:sma|dma|moving average)"),
    ("sma_20", rf"(?:sma|dma)[{_SEP}]*\(?\s*20\s*\)?|20[\s-]*(?:day[\s-]*)?(?:sma|dma|moving average)"),
    ("ema_20", rf"ema[{_SEP}]*\(?\s*20\s*\)?|20[\s-]*(?:day[\s-]*)?ema"),
    ("macd_hist", rf"macd[{_SEP}]*hist(?:ogram)?"),
    ("macd_signal", rf"macd[{_SEP}]*signal(?:[\s_]line)?"),
    ("macd_line", rf"macd(?:[{_SEP}]*line)?"),
    ("bb_upper", r"bb[\s_]upper|(?:upper bollinger(?: band)?|bollinger upper(?: band)?)"),
    ("bb_middle", r"bb[\s_]middle|(?:middle bollinger(?: band)?|bollinger middle(?: band)?)"),
    ("bb_lower", r"bb[\s_]lower|(?:lower bollinger(?: band)?|bollinger lower(?: band)?)"),
    ("swing_high", r"swing[\s_]high"),
    ("swing_low", r"swing[\s_]low"),
    ("prev_close", r"prev(?:ious)?[\s_]close"),
    ("last_close", r"(?:last[\s_])?close|last[\s_]price|closing price"),
    ("support", r"support"),
    ("resistance", r"resistance"),
)
_FILLER_WORDS = ("is", "was", "at", "of", "near", "around", "about", "stands", "sits", "reads")
_FILLER = r"(?:\s*(?:=|:|≈|~|" + "|".join(rf"\b{word}\b" for word in _FILLER_WORDS) + "))*"
_NUMBER = r"[-+−]?\s?(?:₹|rs\.?|inr)?\s?[-+−]?(?:\d{1,3}(?:,\d{2,3})+|\d+)(?:\.\d+)?"
_UNIT_AFTER = re.compile(r"\s*(?:%|x\b|×|days?\b|sessions?\b|bars?\b|-day\b|crore\b|cr\b)", re.IGNORECASE)
# Every name above starts with one of these characters (either case). Checked first, before the
# look-behind and the twenty names are tried at a position, it lets most positions of a text be
# passed over at once: the same matches, about twice as fast (a test holds the two to the same).
NAME_STARTS = "sradebmulpc25"
_NAMED = re.compile(
    rf"(?=[{NAME_STARTS}])(?<![\w.])(?:"
    + "|".join(rf"(?P<{field}>{pattern})" for field, pattern in _ALIASES)
    + rf")(?![\w]){_FILLER}\s*(?P<value>{_NUMBER})(?![\d.,]\d)",
    re.IGNORECASE,
)
# The offline model's composite citations: one name, several values.
_MACD_TRIPLE = re.compile(
    rf"macd[{_SEP}]*hist(?:ogram)?\s*(?P<hist>{_NUMBER})\s*\(\s*line\s*(?P<line>{_NUMBER})\s*,\s*"
    rf"signal\s*(?P<signal>{_NUMBER})\s*\)",
    re.IGNORECASE,
)
_BOLLINGER_TRIPLE = re.compile(
    rf"bollinger(?: bands?)?\s*(?P<lower>{_NUMBER})\s*/\s*(?P<middle>{_NUMBER})\s*/\s*(?P<upper>{_NUMBER})",
    re.IGNORECASE,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Citation(_Frozen):
    name: str  # the TechnicalFeatures field
    label: str
    cited: float
    cited_text: str
    actual: float | None
    ok: bool


class CitationCheck(_Frozen):
    citations: list[Citation]
    mismatches: int


def _value(text: str) -> tuple[float, int]:
    """The number and how many decimals it was printed with."""
    cleaned = re.sub(r"₹|rs\.?|inr|,|\s", "", text, flags=re.IGNORECASE).replace("−", "-")
    sign = -1.0 if cleaned.count("-") % 2 else 1.0
    digits = cleaned.replace("-", "").replace("+", "")
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    return sign * float(digits), decimals


def _matches(cited: float, decimals: int, actual: float | None) -> bool:
    if actual is None:
        return False
    tolerance = max(RELATIVE_TOLERANCE * abs(actual), 0.5 * 10.0**-decimals)
    return abs(cited - actual) <= tolerance + 1e-9


def _composites(text: str) -> Iterator[tuple[int, int, str, str]]:
    for match in _MACD_TRIPLE.finditer(text):
        for group, name in (("hist", "macd_hist"), ("line", "macd_line"), ("signal", "macd_signal")):
            yield match.start(), match.end(), name, match.group(group)
    for match in _BOLLINGER_TRIPLE.finditer(text):
        for group, name in (("lower", "bb_lower"), ("middle", "bb_middle"), ("upper", "bb_upper")):
            yield match.start(), match.end(), name, match.group(group)


def _named(text: str, taken: Sequence[tuple[int, int]]) -> Iterator[tuple[str, str]]:
    for match in _NAMED.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        name = next(field for field, _ in _ALIASES if match.group(field) is not None)
        if name not in PERCENT_FIELDS and _UNIT_AFTER.match(text, match.end()):
            continue  # "close 2% above SMA50": a distance, not a level
        yield name, match.group("value")


def extract_citations(text: str) -> list[tuple[str, str]]:
    """(field, cited figure as written) for every indicator value ``text`` names, in reading order."""
    return list(_extracted(text))


@functools.lru_cache(maxsize=4096)
def _extracted(text: str) -> tuple[tuple[str, str], ...]:
    # Kept per text: the same lines recur from run to run (an abstaining analyst's reason, a feed
    # that is not wired), and about half the texts a replay checks were checked already.
    composites = list(_composites(text))
    taken = sorted({(start, end) for start, end, _, _ in composites})
    return tuple([(name, value) for _, _, name, value in composites] + list(_named(text, taken)))


def _note_texts(note: AnalystNote) -> list[str]:
    return [note.summary, *note.key_points, *note.evidence]


def check_citations(note: AnalystNote, bundle: FeatureBundle) -> CitationCheck:
    """Every indicator value the note cites, each with the bundle's value and whether they match.
    The same (field, figure) cited twice is checked once."""
    technical = bundle.technical
    seen: dict[tuple[str, str], Citation] = {}
    for text in _note_texts(note):
        for name, written in extract_citations(text):
            key = (name, written.strip())
            if key in seen:
                continue
            cited, decimals = _value(written)
            actual = getattr(technical, name)
            seen[key] = Citation(
                name=name,
                label=LABELS[name],
                cited=cited,
                cited_text=written.strip(),
                actual=actual,
                ok=_matches(cited, decimals, actual),
            )
    citations = list(seen.values())
    return CitationCheck(citations=citations, mismatches=sum(not citation.ok for citation in citations))


def _shown(value: float | None) -> str:
    if value is None:
        return "nothing (n/a)"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def mismatch_warnings(checks: Mapping[str, Mapping[str, object] | CitationCheck]) -> list[str]:
    """One line per flagged citation, e.g. "technical note cites RSI(14) 99; the bundle says 32.4"."""
    lines: list[str] = []
    for role, stored in checks.items():
        check = stored if isinstance(stored, CitationCheck) else CitationCheck.model_validate(stored)
        lines += [
            f"{role} note cites {citation.label} {citation.cited_text}; the bundle says {_shown(citation.actual)}"
            for citation in check.citations
            if not citation.ok
        ]
    return lines
