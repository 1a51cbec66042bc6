"""The heuristic audit: which of the playbook's rules the trades that cited them paid for. Pure; no
Django. A heuristic is named by a code such as ``H-7``; the trades and positions whose note or
thesis cited it are its citations, and their PnL is its record.

The recommendation, by this rule, first match wins (``unit`` is a money unit such as ₹1,000, and
the two lines are counted in it, so the average PnL per citation is read as so many units):

1. fewer than ``min_citations`` citations: INSUFFICIENT_DATA (too few to judge; exactly
   ``min_citations`` is enough);
2. average PnL per citation strictly below ``demote_below`` units: DEMOTE;
3. average strictly below ``investigate_below`` units: INVESTIGATE;
4. otherwise: KEEP.

So an average exactly on the demote line is INVESTIGATE, and exactly on the investigate line is
KEEP. The average compared is the one reported, rounded to the paisa (0.01, halves up), so a
report never shows a figure that contradicts its own recommendation.

Citations are read from a note's text by ``extract_citations``: ``H-`` and digits, as a whole word,
capital H as the playbook writes it. ``h-7`` is not a citation; ``H-7`` is not found inside
``H-70``; and a note that cites a heuristic twice cites it once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

# The citation's reading belongs to the playbook the agents cite (agents.domain.playbook); the audit
# re-exports it so one module answers "which rules did these trades cite, and what did they pay".
from agents.domain.playbook import HEURISTIC_CODE, extract_citations

__all__ = [
    "HEURISTIC_CODE",
    "AuditSettings",
    "HeuristicReport",
    "Recommendation",
    "audit_heuristic",
    "extract_citations",
    "heuristic_audit",
    "outcomes_by_heuristic",
    "recommend",
]

Recommendation = Literal["KEEP", "DEMOTE", "INVESTIGATE", "INSUFFICIENT_DATA"]

PAISE = Decimal("0.01")
RATE = Decimal("0.0001")
ZERO = Decimal("0.00")


@dataclass(frozen=True)
class AuditSettings:
    """The audit's lines. ``demote_below`` and ``investigate_below`` are counted in ``unit`` (money in
    the account's currency, e.g. ₹1,000), so -1.0 means an average loss of one unit per citation."""

    min_citations: int = 3
    demote_below: Decimal = Decimal("-1.0")
    investigate_below: Decimal = Decimal("0.5")
    unit: Decimal = Decimal(1000)

    def __post_init__(self) -> None:
        count = self.min_citations
        # At least one: an average needs a citation to average over.
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"min_citations must be a whole number of at least 1, got {count!r}")
        for name in ("demote_below", "investigate_below", "unit"):
            value = getattr(self, name)
            if not isinstance(value, Decimal) or not value.is_finite():
                raise ValueError(f"{name} must be a finite Decimal, got {value!r}")
        if self.unit <= 0:
            raise ValueError(f"unit must be a positive amount of money, got {self.unit}")
        if self.demote_below > self.investigate_below:
            raise ValueError(
                f"demote_below ({self.demote_below}) must not be above investigate_below ({self.investigate_below})"
            )

    @property
    def demote_line(self) -> Decimal:
        """The demote line in money: ``demote_below`` units."""
        return self.demote_below * self.unit

    @property
    def investigate_line(self) -> Decimal:
        """The investigate line in money: ``investigate_below`` units."""
        return self.investigate_below * self.unit


@dataclass(frozen=True)
class HeuristicReport:
    """One heuristic's record. ``win_rate`` is the share of citations with a profit (above zero; a
    trade that made exactly zero is no win), a fraction to 4 places; it and ``average_pnl`` are
    None when nothing cited the heuristic."""

    code: str
    citations: int
    wins: int
    total_pnl: Decimal
    win_rate: Decimal | None
    average_pnl: Decimal | None
    recommendation: Recommendation


def heuristic_audit(
    outcomes: Mapping[str, Sequence[Decimal]], settings: AuditSettings | None = None
) -> tuple[HeuristicReport, ...]:
    """A report for each heuristic in ``outcomes`` (code → the PnL of each citation), in its order.
    Pass every active code, an uncited one with no outcomes, so it is reported as INSUFFICIENT_DATA."""
    chosen = settings if settings is not None else AuditSettings()
    return tuple(audit_heuristic(code, pnls, chosen) for code, pnls in outcomes.items())


def audit_heuristic(code: str, pnls: Sequence[Decimal], settings: AuditSettings | None = None) -> HeuristicReport:
    """The record of one heuristic from the PnL of each trade that cited it."""
    chosen = settings if settings is not None else AuditSettings()
    _check_outcomes(code, pnls)
    citations = len(pnls)
    wins = sum(1 for pnl in pnls if pnl > 0)
    total = _to_paise(sum(pnls, ZERO))
    average = _to_paise(total / citations) if citations else None
    win_rate = (Decimal(wins) / citations).quantize(RATE, rounding=ROUND_HALF_UP) if citations else None
    return HeuristicReport(
        code=code,
        citations=citations,
        wins=wins,
        total_pnl=total,
        win_rate=win_rate,
        average_pnl=average,
        recommendation=recommend(citations, average, chosen),
    )


def recommend(citations: int, average_pnl: Decimal | None, settings: AuditSettings) -> Recommendation:
    """The audit's rule (see the module's docstring): too few citations first, then the demote line,
    then the investigate line, each compared strictly below."""
    if citations < settings.min_citations or average_pnl is None:
        return "INSUFFICIENT_DATA"
    if average_pnl < settings.demote_line:
        return "DEMOTE"
    if average_pnl < settings.investigate_line:
        return "INVESTIGATE"
    return "KEEP"


def outcomes_by_heuristic(
    cited: Iterable[tuple[str, Decimal]], active_codes: Collection[str]
) -> tuple[dict[str, list[Decimal]], tuple[str, ...]]:
    """The audit's input from (text, PnL) pairs, one pair per trade or position (join its note and
    thesis into one text, so a trade citing a code in both counts once). Returns every active code,
    in ``active_codes``'s order, with the PnL of each trade citing it, and the unknown codes cited
    (each once, in order of first mention)."""
    outcomes: dict[str, list[Decimal]] = {code: [] for code in active_codes}
    unknown: dict[str, None] = {}
    for text, pnl in cited:
        valid, strangers = extract_citations(text, active_codes)
        for code in valid:
            outcomes[code].append(pnl)
        unknown.update(dict.fromkeys(strangers))
    return outcomes, tuple(unknown)


def _check_outcomes(code: str, pnls: Sequence[Decimal]) -> None:
    for pnl in pnls:
        # Floats are not exact money; a float here is a bug upstream, not a figure to round.
        if not isinstance(pnl, Decimal) or not pnl.is_finite():
            raise ValueError(f"{code}: each citation's PnL must be a finite Decimal, got {pnl!r}")


def _to_paise(amount: Decimal) -> Decimal:
    return amount.quantize(PAISE, rounding=ROUND_HALF_UP)
