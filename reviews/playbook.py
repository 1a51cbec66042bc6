"""The playbook looked back on: each heuristic's citations and what the trades that cited it paid,
and the decisions people take on it (activate a candidate, reject, demote, retire).

Figures come from stored rows only. A heuristic's record is the closed positions whose run cited it
(an *accepted* citation: the code was active when the run cited it), each position once however many
of its run's roles cited the code, its PnL the position's realised PnL. The recommendation is the
pure audit's (``reviews.domain.heuristics``) with the desk's thresholds (``settings.RETROSPECTIVE``),
over every closed position, live and replay books alike. Citations of codes that were not active
(hallucinated, candidate, retired) are listed apart and never counted.

Changes go through ``agents.playbook`` with the desk's audit log (``trading.audit``) as its callback,
so the change, its history row and its audit record are one transaction.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Q

from agents import playbook
from agents.models import Heuristic
from reviews.domain.heuristics import AuditSettings, HeuristicReport, audit_heuristic
from trading.audit import audit_record
from trading.book.approvals import APPROVE_PERMISSION
from trading.market.charts import MoneyLine, money_chart
from trading.models import HeuristicCitation, Position
from vocabulary.refusals import InputRefused, NotAllowed

__all__ = [
    "CITATION_ROWS",
    "DECISIONS",
    "EDIT_PERMISSION",
    "CitationRow",
    "HeuristicDetail",
    "HeuristicRecord",
    "HistoryRow",
    "Playbook",
    "audit_settings",
    "can_decide",
    "can_edit",
    "heuristic_decide",
    "heuristic_detail",
    "heuristic_history",
    "heuristic_records",
    "heuristic_update",
    "playbook_overview",
]

EDIT_PERMISSION = "agents.change_heuristic"  # the admin group's: edit a rule's text through the API
CITATION_ROWS = 500  # the detail page's table shows the latest this many citations (the chart, all)

# decision → (the status it sets, the statuses it may be taken from)
DECISIONS: dict[str, tuple[str, frozenset[str]]] = {
    "activate": (Heuristic.Status.ACTIVE, frozenset({Heuristic.Status.CANDIDATE, Heuristic.Status.DEMOTED})),
    "reject": (Heuristic.Status.RETIRED, frozenset({Heuristic.Status.CANDIDATE})),
    "demote": (Heuristic.Status.DEMOTED, frozenset({Heuristic.Status.ACTIVE})),
    "retire": (Heuristic.Status.RETIRED, frozenset({Heuristic.Status.ACTIVE, Heuristic.Status.DEMOTED})),
}


def audit_settings() -> AuditSettings:
    """The audit's lines from ``settings.RETROSPECTIVE`` (money in ``MONEY_UNIT``s)."""
    config = settings.RETROSPECTIVE
    return AuditSettings(
        min_citations=int(str(config["HEURISTIC_MIN_CITATIONS"])),
        demote_below=Decimal(str(config["HEURISTIC_DEMOTE_BELOW"])),
        investigate_below=Decimal(str(config["HEURISTIC_INVESTIGATE_BELOW"])),
        unit=Decimal(str(config["MONEY_UNIT"])),
    )


def can_decide(user: Any) -> bool:
    """Approvers and admins activate, reject, demote and retire heuristics from the pages."""
    return bool(user.has_perm(APPROVE_PERMISSION) or user.has_perm(EDIT_PERMISSION))


def can_edit(user: Any) -> bool:
    """Admins edit a heuristic's text, factor and status (the API, the admin)."""
    return bool(user.has_perm(EDIT_PERMISSION))


# --- reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeuristicRecord:
    """One heuristic with its accepted citations and the audit of the closed positions that cited it."""

    heuristic: Heuristic
    citations: int
    report: HeuristicReport

    @property
    def code(self) -> str:
        return self.heuristic.code


@dataclass(frozen=True)
class Playbook:
    """The playbook page: the rules in force or set aside, the candidates, and unaccepted citations."""

    records: list[HeuristicRecord]
    candidates: list[HeuristicRecord]
    unaccepted: list[dict[str, Any]]  # [{"code": "H-999", "citations": 3}], most cited first
    settings: AuditSettings


def _number(heuristic: Heuristic) -> int:
    return heuristic.number if heuristic.code.removeprefix("H-").isdigit() else 0


def _position_outcomes(heuristic_ids: Iterable[int]) -> dict[int, dict[int, Decimal]]:
    """heuristic id → {closed position id: its realised PnL}: each position once per heuristic."""
    rows = (
        HeuristicCitation.objects.filter(
            accepted=True,
            heuristic_id__in=list(heuristic_ids),
            run__thesis__position__status=Position.Status.CLOSED,
            run__thesis__position__realised_pnl__isnull=False,
        )
        .order_by()
        .values_list("heuristic_id", "run__thesis__position__id", "run__thesis__position__realised_pnl")
    )
    outcomes: dict[int, dict[int, Decimal]] = defaultdict(dict)
    for heuristic_id, position_id, pnl in rows:
        if heuristic_id is not None and pnl is not None:  # both filtered above; the checker cannot tell
            outcomes[heuristic_id][position_id] = pnl
    return outcomes


def heuristic_records(heuristics: Sequence[Heuristic], chosen: AuditSettings | None = None) -> list[HeuristicRecord]:
    """The record of each of ``heuristics``, in their order: three queries however many."""
    return _records(heuristics, chosen or audit_settings())


def _records(heuristics: Sequence[Heuristic], chosen: AuditSettings) -> list[HeuristicRecord]:
    ids = [heuristic.pk for heuristic in heuristics]
    counts = dict(
        HeuristicCitation.objects.filter(accepted=True, heuristic_id__in=ids)
        .order_by()
        .values("heuristic_id")
        .annotate(n=Count("id"))
        .values_list("heuristic_id", "n")
    )
    outcomes = _position_outcomes(ids)
    return [
        HeuristicRecord(
            heuristic=heuristic,
            citations=counts.get(heuristic.pk, 0),
            report=audit_heuristic(heuristic.code, list(outcomes.get(heuristic.pk, {}).values()), chosen),
        )
        for heuristic in heuristics
    ]


def playbook_overview() -> Playbook:
    """Every heuristic with its record, candidates apart; four queries whatever the playbook's size."""
    chosen = audit_settings()
    heuristics = sorted(Heuristic.objects.all(), key=lambda heuristic: (_number(heuristic), heuristic.code))
    records = _records(heuristics, chosen)
    unaccepted = list(
        HeuristicCitation.objects.filter(accepted=False)
        .values("code")
        .annotate(citations=Count("id"))
        .order_by("-citations", "code")[:50]
    )
    return Playbook(
        records=[r for r in records if r.heuristic.status != Heuristic.Status.CANDIDATE],
        candidates=[r for r in records if r.heuristic.status == Heuristic.Status.CANDIDATE],
        unaccepted=unaccepted,
        settings=chosen,
    )


@dataclass(frozen=True)
class CitationRow:
    """One citation of the code: where it came from and how the position that followed ended."""

    citation: HeuristicCitation
    position: Position | None

    @property
    def outcome(self) -> str:
        if self.position is None:
            return "no position"
        if self.position.status != Position.Status.CLOSED:
            return "open"
        return self.position.exit_reason or "closed"


@dataclass(frozen=True)
class HistoryRow:
    when: dt.datetime
    who: str
    kind: str
    reason: str
    changes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class HeuristicDetail:
    record: HeuristicRecord
    rows: list[CitationRow]
    total_rows: int
    history: list[HistoryRow]
    chart: dict[str, Any] | None
    points: int  # closed positions on the chart


def heuristic_history(heuristic: Heuristic) -> list[HistoryRow]:
    """Each edit, newest first, with what it changed (field: before → after)."""
    records = list(heuristic.history.select_related("history_user").order_by("-history_date", "-history_id"))
    rows: list[HistoryRow] = []
    for index, record in enumerate(records):
        previous = records[index + 1] if index + 1 < len(records) else None
        changes: list[str] = []
        if previous is not None:
            delta = record.diff_against(previous, excluded_fields=["updated_at", "created_at"])
            changes = [f"{change.field}: {change.old} → {change.new}" for change in delta.changes]
        rows.append(
            HistoryRow(
                when=record.history_date,
                who=record.history_user.get_username() if record.history_user else "system",
                kind={"+": "created", "~": "changed", "-": "deleted"}.get(record.history_type, record.history_type),
                reason=record.history_change_reason or "",
                changes=changes,
            )
        )
    return rows


def _cumulative_chart(outcomes: Sequence[tuple[dt.date, Decimal]], currency: str) -> dict[str, Any] | None:
    """Cumulative PnL of the citing positions by the day each closed; None before the first close."""
    if not outcomes:
        return None
    running = Decimal("0.00")
    points: list[tuple[dt.date | str, Decimal | float]] = []
    for day, pnl in outcomes:
        running += pnl
        points.append((day, running))
    return money_chart([MoneyLine("cumulative PnL of citing positions", points, "#1d4ed8")], currency=currency)


def heuristic_detail(heuristic: Heuristic, *, currency: str) -> HeuristicDetail:
    """One heuristic's page: its record, its citations (latest first, bounded), its history and the
    cumulative PnL of the closed positions that cited it, by the day each closed."""
    record = _records([heuristic], audit_settings())[0]
    citations = HeuristicCitation.objects.filter(Q(heuristic=heuristic) | Q(code=heuristic.code))
    total = citations.count()
    latest = list(
        citations.select_related("run__instrument", "thesis", "note").order_by("-cited_on", "-run_id", "role")[
            :CITATION_ROWS
        ]
    )
    positions = {
        position.thesis.run_id: position
        for position in Position.objects.filter(thesis__run_id__in={c.run_id for c in latest}).select_related("thesis")
    }
    closed = (
        Position.objects.filter(
            status=Position.Status.CLOSED,
            realised_pnl__isnull=False,
            thesis__run__heuristic_citations__heuristic=heuristic,
            thesis__run__heuristic_citations__accepted=True,
        )
        .distinct()
        .order_by("closed_on", "id")
        .values_list("closed_on", "realised_pnl")
    )
    outcomes = [(day, pnl) for day, pnl in closed if day is not None and pnl is not None]
    return HeuristicDetail(
        record=record,
        rows=[CitationRow(citation, positions.get(citation.run_id)) for citation in latest],
        total_rows=total,
        history=heuristic_history(heuristic),
        chart=_cumulative_chart(outcomes, currency),
        points=len(outcomes),
    )


# --- changing ------------------------------------------------------------------------------------


def heuristic_decide(*, heuristic: Heuristic, decision: str, user: Any, reason: str) -> Heuristic:
    """A person's decision on a heuristic from the pages (approvers and admins), audited with why."""
    if not can_decide(user):
        raise NotAllowed("only approvers and admins decide on heuristics")
    if decision not in DECISIONS:
        raise InputRefused(
            f"{decision!r} is not a decision; choose one of {', '.join(DECISIONS)}",
            {"decision": f"one of {', '.join(DECISIONS)}"},
        )
    status, allowed_from = DECISIONS[decision]
    return playbook.set_status(
        heuristic, status, user=user, reason=reason, audit=audit_record, allowed_from=allowed_from
    )


def heuristic_update(
    *,
    heuristic: Heuristic,
    user: Any,
    reason: str,
    text: str | None = None,
    factor: str | None = None,
    status: str | None = None,
) -> Heuristic:
    """An admin's edit of a heuristic's text, factor or status (the API), audited with why."""
    if not can_edit(user):
        raise NotAllowed("only admins edit heuristics")
    return playbook.heuristic_edit(
        heuristic, user=user, reason=reason, text=text, factor=factor, status=status, audit=audit_record
    )
