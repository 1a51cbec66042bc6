"""One critique, run exactly once: evidence, the archive's memory, the critic, the checks, the directive.

``critique_run(critique_id)`` takes a ``Critique`` row (made by the trigger, ``reviews.critique.trigger``)
from QUEUED (or FAILED, or RUNNING when its worker died and the task came again) through RUNNING to
DONE or FAILED:

1. **The claim**: a conditional update of ``attempts`` from n to n + 1; of two workers that meet on
   the same attempt one proceeds, the other returns the row as it is. A DONE row is returned untouched.
2. **Evidence first**, by code: the evidence pack (``reviews.critique.evidence.evidence_pack``) of the
   strategy as of the critique's date, stored on the row before the critic is asked, and reused by
   a retried attempt (the same facts, not a later reading of them).
3. **Memory**: the strategy's earlier issued critiques (same replay flag, lower sequence) and how
   this critique's findings stand against theirs (``reviews.domain.escalation``).
4. **The critic** (``agents.roles.critic``), on the critique tier, with the grounding check
   (``reviews.domain.critique_grounding``) as its validation: a directive citing a figure or id the
   pack does not hold gets one repair request naming them; still ungrounded, the critique FAILS,
   visibly, and issues nothing.
5. **Settled by code** (``agents.roles.critic.settle``): escalation only raises the severity; an
   action of an unknown kind, or whose params cannot be checked against the pack (a lesson for a
   position that is not one of the strategy's losing ones), is free-form.
6. **The finish**, in one transaction that only the attempt still holding the row can commit: the
   row DONE, its ``CritiqueAction`` rows, the trading-owned ``StrategyDirective`` (markdown text,
   prohibitions, the blocking list), the strategy run's critique state, the audit record
   (``critique_issued``) and the archive file (``reviews.critique.archive``), so a crash at any
   point leaves either all of it or none (a file written before a failed commit is rewritten by
   the retry).
7. After the commit, ``reviews.critique.actions.actions_check`` once, so an action already satisfied
   by the record is marked done at once (and an earlier directive with nothing left to do gives way
   to this one: the gate's rule, ``reviews.critique.actions.directives_update``).

A database error is raised for the task to retry; any other failure leaves the row FAILED with the
reason and the strategy run's critique state ``failed``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from agents import recording
from agents.clients import model_choice
from agents.domain.llm import StageFailed, Tier
from agents.domain.pricing import PriceTable
from agents.roles.critic import CritiqueDirective, critique_request, settle, write_directive
from reviews.critique.actions import DEFAULT_MAX_GAP, actions_check, empirical_win_rate
from reviews.critique.archive import archive_critique
from reviews.critique.evidence import evidence_pack
from reviews.critique.signal_ics import ic_windows_kept
from reviews.domain.critique_grounding import GroundingCheck, check_grounding
from reviews.domain.escalation import EscalationResult, escalate, past_critique
from reviews.models import Critique, CritiqueAction
from reviews.narrative import DayBudget
from trading.audit import audit_record
from trading.models import Position, StrategyDirective, StrategyRun

__all__ = ["CritiqueFailed", "critique_run", "directive_markdown"]

logger = logging.getLogger(__name__)

Status = Critique.Status
State = StrategyRun.CritiqueState
LOOP_NUMBERS = tuple(range(1, 8))
ERROR_CHARS = 4000


class CritiqueFailed(Exception):
    """The critique could not be issued (no grounded directive after one repair, or no directive)."""


@dataclass
class _Grounding:
    """The grounding check as the critic's validation; keeps the last check for the row."""

    figures: dict[str, object]
    ids: dict[str, list[object]]
    last: GroundingCheck | None = field(default=None)

    def __call__(self, directive: CritiqueDirective) -> None:
        self.last = check_grounding(directive.model_dump(mode="json"), figures=self.figures, ids=self.ids)
        if not self.last.ok:
            raise ValueError(self.last.problem())


@dataclass(frozen=True)
class _Issued:
    directive: CritiqueDirective
    notes: list[str]
    model: str
    grounding: GroundingCheck | None


# --- the run -------------------------------------------------------------------------------------


def critique_run(critique_id: int) -> Critique:
    """Run critique ``critique_id`` (see the module): claimed once, finished once, a DONE one returned
    untouched. Raises ``Critique.DoesNotExist`` for an unknown id and a database error for a retry."""
    with ic_windows_kept():
        return _critique_run(critique_id)


def _critique_run(critique_id: int) -> Critique:
    critique, attempt = _claim(critique_id)
    if attempt is None:
        return critique
    grounding: _Grounding | None = None
    try:
        pack = critique.evidence or _stored_evidence(critique, attempt)
        earlier = _earlier(critique)
        result = escalate(_findings(pack), [past_critique(row.sequence, row.findings or []) for row in earlier])
        grounding = _grounding(pack, result, earlier)
        issued = _ask(critique, pack, earlier, result, grounding)
        critique = _finish(critique, attempt, pack, result, issued)
    except DatabaseError:
        raise
    except Exception as error:
        if not isinstance(error, CritiqueFailed | StageFailed):
            logger.exception("critique %s failed", critique.pk)
        return _fail(critique, attempt, _reason(error, grounding), grounding)
    if critique.status == Status.DONE:
        _check_actions(critique)
    return critique


def _claim(critique_id: int) -> tuple[Critique, int | None]:
    critique = Critique.objects.select_related("strategy").get(pk=critique_id)
    if critique.status == Status.DONE:
        return critique, None
    attempt = critique.attempts + 1
    claimed = (
        Critique.objects.filter(pk=critique.pk, attempts=critique.attempts)
        .exclude(status=Status.DONE)
        .update(attempts=attempt, status=Status.RUNNING, error="", started_at=timezone.now(), finished_at=None)
    )
    critique.refresh_from_db()
    return critique, attempt if claimed else None


def _stored_evidence(critique: Critique, attempt: int) -> dict[str, Any]:
    """Compute the pack and keep it (and its findings) on the row before the critic is asked."""
    pack = evidence_pack(critique.strategy, as_of=critique.as_of, is_replay=critique.is_replay)
    findings = _findings(pack)
    Critique.objects.filter(pk=critique.pk, attempts=attempt).update(evidence=pack, findings=findings)
    critique.evidence, critique.findings = pack, findings
    return pack


def _findings(pack: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(row) for row in pack.get("loops") or [] if isinstance(row, Mapping)]


def _earlier(critique: Critique) -> list[Critique]:
    return list(
        Critique.objects.filter(
            strategy=critique.strategy,
            is_replay=critique.is_replay,
            status=Status.DONE,
            sequence__lt=critique.sequence,
        )
        .prefetch_related("actions")
        .order_by("sequence")
    )


def _earlier_summary(earlier: Sequence[Critique]) -> list[dict[str, Any]]:
    """What the critic is told of its earlier critiques: when, how severe, what fired, what it asked
    and whether that was done."""
    return [
        {
            "sequence": row.sequence,
            "as_of": row.as_of.isoformat(),
            "severity": row.severity,
            "trajectory": row.trajectory,
            "fired": [str(item.get("detector")) for item in row.findings or [] if item.get("fired")],
            "diagnosis": row.diagnosis,
            "actions": [
                {"kind": action.kind, "text": action.text, "status": action.status} for action in row.actions.all()
            ],
        }
        for row in earlier
    ]


def _grounding(pack: Mapping[str, Any], result: EscalationResult, earlier: Sequence[Critique]) -> _Grounding:
    """What the critic may cite: the pack's figures and ids, escalation's counts, the earlier
    critiques' sequence numbers and the seven loops' numbers."""
    figures: dict[str, object] = dict(pack.get("figures") or {})
    figures.update(result.figures())
    ids: dict[str, list[object]] = {str(kind): list(values) for kind, values in (pack.get("ids") or {}).items()}
    ids["critiques"] = [row.sequence for row in earlier]
    ids["loops"] = list(LOOP_NUMBERS)
    return _Grounding(figures=figures, ids=ids)


def _tier() -> Tier:
    return "deep" if str(settings.CRITIQUE["TIER"]) == "deep" else "default"


def _ask(
    critique: Critique,
    pack: Mapping[str, Any],
    earlier: Sequence[Critique],
    result: EscalationResult,
    grounding: _Grounding,
) -> _Issued:
    provider = critique.strategy.provider or str(settings.LLM["PROVIDER"])
    losing = sorted(_losing_positions(critique, pack))
    recorder = recording.BufferedRecorder(run_id=None, prices=PriceTable.from_mapping(settings.LLM["PRICES"]))
    request = critique_request(
        pack=pack,
        earlier=_earlier_summary(earlier),
        escalations=result.as_json(),
        trajectory=result.trajectory,
        losing_positions=losing,
        tier=_tier(),
    )
    try:
        directive, model = write_directive(
            model_choice(provider, symbol=""),
            request,
            check=grounding,
            recorder=recorder,
            budget=DayBudget(recorder, provider),
        )
    finally:
        recorder.flush()
    settled, notes = settle(
        directive,
        minimum_severity=result.minimum_severity,
        escalated=[escalation.as_json() for escalation in result.escalated],
        universe=_universe(pack),
        losing_positions=losing,
        heuristics=[str(code) for code in (pack.get("ids") or {}).get("heuristics") or []],
        closed_positions=_closed_count(pack),
    )
    return _Issued(directive=settled, notes=notes, model=model, grounding=grounding.last)


def _closed_count(pack: Mapping[str, Any]) -> int:
    performance = pack.get("performance")
    closed = performance.get("closed") if isinstance(performance, Mapping) else None
    return closed if isinstance(closed, int) and not isinstance(closed, bool) else 0


def _universe(pack: Mapping[str, Any]) -> list[str]:
    strategy = pack.get("strategy") or {}
    symbols = strategy.get("universe") or strategy.get("universe_symbols") or []
    return [str(symbol) for symbol in symbols]


def _losing_positions(critique: Critique, pack: Mapping[str, Any]) -> set[int]:
    """The pack's positions that are this strategy's closed losing ones as of the critique's date."""
    named = [int(value) for value in (pack.get("ids") or {}).get("positions") or [] if str(value).isdigit()]
    losing = Position.objects.filter(
        pk__in=named,
        thesis__run__strategy_run__strategy=critique.strategy,
        is_replay=critique.is_replay,
        status=Position.Status.CLOSED,
        closed_on__lte=critique.as_of,
        realised_pnl__lt=0,
    )
    return set(losing.values_list("pk", flat=True))


# --- the finish ----------------------------------------------------------------------------------


def _finish(
    critique: Critique, attempt: int, pack: Mapping[str, Any], result: EscalationResult, issued: _Issued
) -> Critique:
    directive = issued.directive
    grounding = issued.grounding.as_json() if issued.grounding else {}
    with transaction.atomic():
        won = Critique.objects.filter(pk=critique.pk, attempts=attempt, status=Status.RUNNING).update(
            status=Status.DONE,
            evidence=pack,
            findings=_findings(pack),
            severity=directive.severity,
            diagnosis=directive.diagnosis,
            directive={**directive.model_dump(mode="json"), "settled": issued.notes},
            escalations=result.as_json(),
            trajectory=result.trajectory,
            grounding=grounding,
            model_used=issued.model[:200],
            error="",
            finished_at=timezone.now(),
        )
        critique.refresh_from_db()
        if not won:
            return critique  # a later attempt took it over; it finishes
        actions = _write_actions(critique, directive)
        issued_directive = _write_directive(critique, directive, actions, result)
        _set_run_state(critique, done=True)
        audit_record(
            action="critique_issued",
            target=f"critique {critique.pk}",
            reason=f"strategy {critique.strategy.name}, critique #{critique.sequence}: {directive.severity}",
            details={
                "strategy": critique.strategy_id,
                "sequence": critique.sequence,
                "is_replay": critique.is_replay,
                "severity": directive.severity,
                "directive": issued_directive.pk,
                "actions": [action.kind for action in actions],
                "escalated": [escalation.detector for escalation in result.escalated],
                "resolved": [escalation.detector for escalation in result.resolved],
                "trajectory": result.trajectory,
                "grounding_share": grounding.get("share"),
                "settled": issued.notes,
                "model": issued.model,
                "attempts": attempt,
            },
        )
        path = archive_critique(critique)
        Critique.objects.filter(pk=critique.pk).update(archive_path=str(path)[:500])
        critique.archive_path = str(path)[:500]
    return critique


def _write_actions(critique: Critique, directive: CritiqueDirective) -> list[CritiqueAction]:
    CritiqueAction.objects.filter(critique=critique).delete()  # an attempt that lost its transaction left none
    return [
        CritiqueAction.objects.create(
            critique=critique, number=number, kind=action.kind, text=action.text, params=dict(action.params)
        )
        for number, action in enumerate(directive.required_actions, start=1)
    ]


def directive_markdown(
    critique: Critique, directive: CritiqueDirective, escalations: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The directive as the agents read it: diagnosis, required actions, prohibited patterns."""
    heading = "DIRECTIVE (a hard gate)" if directive.severity == "directive" else "Advisory"
    lines = [f"### Critique #{critique.sequence} of {critique.as_of.isoformat()}: {heading}", "", directive.diagnosis]
    flagged = [row for row in escalations if row.get("escalates")]
    if flagged:
        lines += ["", "**Escalated:**", *[f"- {row.get('text')}" for row in flagged]]
    if directive.required_actions:
        gate = " (until every one is complete the strategy must HOLD)" if directive.severity == "directive" else ""
        lines += ["", f"**Required actions{gate}:**"]
        lines += [f"{number}. {action.text}" for number, action in enumerate(directive.required_actions, start=1)]
    if directive.prohibited_patterns:
        lines += ["", "**Prohibited patterns:**"]
        lines += [_pattern_line(pattern.kind, pattern.value, pattern.text) for pattern in directive.prohibited_patterns]
    return "\n".join(lines)


def _pattern_line(kind: str, value: str, text: str) -> str:
    return f"- {text}" if kind == "text" or not value else f"- {text} ({kind} {value})"


def conviction_caps(critique: Critique, actions: Sequence[CritiqueAction]) -> list[dict[str, str]]:
    """For each ``calibrate_confidence`` action, a ``max_conviction`` prohibition code derives (never
    the model): the strategy's empirical win rate, as the action's check reads it, plus the gap the
    action allows. Trading caps the conviction it calibrates at this value while the directive is in
    force, so the desk stops acting on a confidence its record does not support, and the action's
    check (stated conviction within the gap of the win rate) can pass on the runs that follow."""
    wins, closed = empirical_win_rate(critique.strategy, is_replay=critique.is_replay, as_of=critique.as_of)
    if not closed:
        return []
    win_rate = round(wins / closed, 4)
    caps = []
    for action in actions:
        if action.kind != CritiqueAction.Kind.CALIBRATE_CONFIDENCE:
            continue
        gap = _gap_of(action)
        cap = min(1.0, max(0.0, float(win_rate) + gap))
        caps.append(
            {
                "kind": "max_conviction",
                "value": f"{cap:.2f}",
                "text": f"a conviction above {cap:.2f}: {wins} of {closed} closed positions won ({win_rate}) "
                f"and action {action.number} allows a gap of {gap:.2f}",
            }
        )
    return caps


def _gap_of(action: CritiqueAction) -> float:
    try:
        gap = float((action.params or {}).get("max_gap", DEFAULT_MAX_GAP))
    except (TypeError, ValueError):
        return DEFAULT_MAX_GAP
    return gap if 0.0 <= gap <= 1.0 else DEFAULT_MAX_GAP


def _write_directive(
    critique: Critique, directive: CritiqueDirective, actions: Sequence[CritiqueAction], result: EscalationResult
) -> StrategyDirective:
    issued, _ = StrategyDirective.objects.update_or_create(
        strategy=critique.strategy,
        is_replay=critique.is_replay,
        source_ref=critique.pk,
        defaults={
            "sequence": critique.sequence,
            "severity": directive.severity,
            "text": directive_markdown(critique, directive, result.as_json()),
            "prohibitions": [
                *(pattern.model_dump(mode="json") for pattern in directive.prohibited_patterns),
                *conviction_caps(critique, actions),
            ],
            "blocking": [
                {"id": action.pk, "number": action.number, "kind": action.kind, "text": action.text}
                for action in actions
            ],
            "opened_on": critique.as_of,
            "lifted_at": None,
            "lifted_reason": "",
        },
    )
    return issued


def _set_run_state(critique: Critique, *, done: bool) -> None:
    """The strategy run's critique state: failed whatever the wait was; done only for a run still
    waiting (one that went on past its deadline stays late)."""
    if critique.strategy_run_id is None:
        return
    runs = StrategyRun.objects.filter(pk=critique.strategy_run_id)
    if done:
        runs.filter(critique_state=State.PENDING).update(critique_state=State.DONE)
    else:
        runs.update(critique_state=State.FAILED)


# --- failure and after ---------------------------------------------------------------------------


def _reason(error: Exception, grounding: _Grounding | None) -> str:
    if isinstance(error, StageFailed):
        check = grounding.last if grounding is not None else None
        if check is not None and not check.ok:
            return f"no grounded critique after one repair, nothing issued: {check.problem()}"
        return f"the critic gave no valid directive, nothing issued: {' '.join(error.reason.split())}"
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


def _fail(critique: Critique, attempt: int, reason: str, grounding: _Grounding | None) -> Critique:
    check = grounding.last if grounding is not None else None
    fields: dict[str, Any] = {"status": Status.FAILED, "error": reason[:ERROR_CHARS], "finished_at": timezone.now()}
    if check is not None:
        fields["grounding"] = check.as_json()
    updated = Critique.objects.filter(pk=critique.pk, attempts=attempt).exclude(status=Status.DONE).update(**fields)
    critique.refresh_from_db()
    if updated:
        _set_run_state(critique, done=False)
        audit_record(
            action="critique_failed",
            target=f"critique {critique.pk}",
            reason=reason[:500],
            details={"strategy": critique.strategy_id, "sequence": critique.sequence, "attempts": attempt},
        )
    return critique


def _check_actions(critique: Critique) -> None:
    """The gate's machine check, once, now that the actions exist (an action the record already
    satisfies is done at once). Its failure does not undo the critique: the next check runs it."""
    try:
        actions_check(critique.strategy, is_replay=critique.is_replay, as_of=critique.as_of)
    except Exception:
        logger.exception("the action check after critique %s failed", critique.pk)
