"""The playbook as the agents see it, and how a citation of it is read. Pure; no Django.

A heuristic of the playbook is named by a code, ``H-`` and a number (``H-7``). Agents cite it by
that code in their notes, cases, verdicts and theses; code reads the citations back out of the
text with ``extract_citations`` and checks each against the playbook that was active when the run
started (``verdicts``). What counts as a citation is deliberately narrow:

- capital ``H``, a hyphen and ASCII digits, as the playbook writes it (``h-7`` is not a citation);
- a whole word: not glued to a letter, digit or underscore on either side, so ``H-7`` is not found
  inside ``H-70``, ``XH-7`` or ``H-12x``;
- each code once per text, in order of first mention.

A code that reads as a citation but is not in the active playbook (``H-999``, a candidate, a
retired rule) is still reported, as *not accepted*: a hallucinated rule stays visible and is never
counted in the audit.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FACTORS",
    "HEURISTIC_CODE",
    "CitationVerdict",
    "PlaybookRule",
    "cited_codes",
    "codes_for_factors",
    "cut_text",
    "extract_citations",
    "verdicts",
]

# H, a hyphen and ASCII digits, not glued to a letter, digit or underscore on either side.
HEURISTIC_CODE = re.compile(r"(?<!\w)H-[0-9]+(?!\w)")

# The start of a code at the end of a cut text ("H-1" of "H-12", or a bare "H-").
_CODE_AT_END = re.compile(r"(?<!\w)H-[0-9]*$")

# The factors the offline rules read, by name: a heuristic tied to one of them is cited by the
# offline model when that factor drove its call. A heuristic may name another factor (a person's
# or a retrospective's proposal): real models may cite it, the offline rules never will.
FACTORS: dict[str, str] = {
    "trend": "close against SMA20/50/200 and the EMA20 > SMA50 > SMA200 stack (technical analyst)",
    "macd": "the MACD histogram and line (technical analyst)",
    "rsi": "RSI(14) bands (technical analyst)",
    "bollinger": "the close within the Bollinger bands (technical analyst)",
    "levels": "room to support and resistance (technical analyst)",
    "news": "the tone of recent headlines by event class (news analyst)",
    "valuation": "P/E, P/B and EV/EBITDA (fundamental analyst)",
    "growth": "revenue growth (fundamental analyst)",
    "margin": "net margin (fundamental analyst)",
    "dissent": "voting analysts opposing the debate's winner (research manager, trader)",
    "volatility": "ATR(14), which sets the stop and so the size (trader)",
}


class PlaybookRule(BaseModel):
    """One active heuristic as a run sees it: its code, its text and the factor it speaks to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str = Field(pattern=r"^H-[0-9]+$", description='"H-" and a number')
    text: str = Field(min_length=1, description="the rule, as the agents read it")
    factor: str = Field(default="", description="the factor it speaks to (see FACTORS), if any")


class CitationVerdict(BaseModel):
    """A code a text cites and whether the playbook active at the run holds it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    accepted: bool


def cited_codes(texts: Iterable[str]) -> tuple[str, ...]:
    """Every code the texts cite, each once, in order of first mention."""
    seen: dict[str, None] = {}
    for text in texts:
        seen.update(dict.fromkeys(HEURISTIC_CODE.findall(text)))
    return tuple(seen)


def extract_citations(text: str, active_codes: Collection[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The heuristic codes ``text`` cites, each once in order of first mention, split into those in
    the active playbook (``active_codes``) and those that are not (retired, or never written)."""
    seen = cited_codes([text])
    valid = tuple(code for code in seen if code in active_codes)
    unknown = tuple(code for code in seen if code not in active_codes)
    return valid, unknown


def verdicts(texts: Iterable[str], active_codes: Collection[str]) -> list[CitationVerdict]:
    """Each code the texts cite, once, with whether it was in the active playbook."""
    return [CitationVerdict(code=code, accepted=code in active_codes) for code in cited_codes(texts)]


def codes_for_factors(playbook: Sequence[PlaybookRule], factors: Collection[str]) -> list[str]:
    """The codes of the rules tied to any of ``factors``, in the playbook's order."""
    return [rule.code for rule in playbook if rule.factor and rule.factor in factors]


def cut_text(text: str, end: int) -> str:
    """``text[:end]``, without a code the cut split (``"per H-1"`` of ``"per H-12"``): clipping a long
    text must never turn one citation into another."""
    kept = text[:end]
    if end < len(text) and (text[end].isalnum() or text[end] == "_"):
        kept = _CODE_AT_END.sub("", kept)
    return kept
