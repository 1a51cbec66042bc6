"""A run or a thesis as a Markdown report, from the stored rows: every stage with its output, the
evidence (features, notes, citations, debate), the decision and who took it.

Text a model wrote (and a person's comment, a headline) is data, never structure: each piece goes
in a fenced block whose fence is longer than any run of backticks inside it, so no line of it can
close the fence, start a heading, a list, a table or a link; a short value inside a line (a cited
number as the model wrote it) has every mark that could shape Markdown backslash-escaped. The figures are
the stored ones, formatted as the pages format them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.utils import timezone

from agents.recording import run_totals
from trading.models import HeuristicCitation, PipelineRun, Thesis
from trading.pipeline.outputs import RunOutputs
from trading.pipeline.presenters import ANALYST_ORDER, evidence_flags, run_outputs
from vocabulary.money import format_money

__all__ = ["fenced", "inline", "report_filename", "run_report", "thesis_report"]

# The marks that can start or shape Markdown inside a line (emphasis, code, links, images, raw HTML,
# entities, table cells, headings). Line-start marks (a "1." or "-") cannot occur: an inline value
# always follows a label on its line.
_SIGNIFICANT = re.compile(r"([\\`*_{}\[\]()#+\-!|<>~&])")
_BACKTICKS = re.compile(r"`+")


def inline(text: object) -> str:
    """A value placed inside a line: one line, every Markdown-significant character escaped."""
    flat = " ".join(str(text).replace("\x00", "").split())
    return _SIGNIFICANT.sub(r"\\\1", flat)


def fenced(text: object, info: str = "text") -> str:
    """``text`` as a fenced block that nothing inside it can close (CommonMark: a closing fence
    is at least as long as the opening one)."""
    body = str(text).replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def _points(points: Iterable[object]) -> str:
    return fenced("\n".join(f"- {point}" for point in points))


def _when(value: Any) -> str:
    if value is None:
        return "—"
    return timezone.localtime(value).strftime("%d %b %Y %H:%M %Z")


def report_filename(kind: str, pk: int, symbol: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", symbol)[:32]
    return f"{kind}-{pk}-{safe}.md"


def run_report(run: PipelineRun) -> str:
    """The whole run as Markdown."""
    lines = [f"# Run {run.pk}: {inline(run.instrument.symbol)} as of {run.as_of:%d %b %Y}", ""]
    lines += _run_sections(run, level=2)
    return "\n".join(lines).rstrip("\n") + "\n"


def thesis_report(thesis: Thesis) -> str:
    """The thesis, its decision and what came of it, then the run that made it."""
    run = thesis.run
    currency = thesis.instrument.currency
    lines = [
        f"# Thesis {thesis.pk}: {inline(thesis.instrument.symbol)} {inline(thesis.direction)} "
        f"as of {run.as_of:%d %b %Y}",
        "",
        "## Decision",
        "",
        f"- Status: {inline(thesis.get_status_display())}",
        f"- Decided by: {inline(thesis.decided_by.get_username()) if thesis.decided_by else '—'}",
        f"- Decided at: {_when(thesis.decided_at)}",
        f"- Conviction: {thesis.conviction:.2f}",
        f"- Entry {format_money(thesis.entry, currency)} · stop {format_money(thesis.stop, currency)}"
        f" · target {format_money(thesis.target, currency)} · {thesis.horizon_sessions} sessions",
        f"- Quantity {thesis.quantity:,} · at risk {format_money(thesis.risk_amount, currency)}"
        f" · notional {format_money(thesis.notional, currency)}",
        f"- Risk checks: {'passed' if thesis.risk_approved else 'failed'}",
        "",
    ]
    if thesis.decision_comment:
        lines += ["The decider's comment:", "", fenced(thesis.decision_comment), ""]
    if thesis.warnings:
        lines += ["What code overruled in the trader's reply:", "", _points(thesis.warnings), ""]
    lines += _trade_lines(thesis, currency)
    lines += [f"# The run: {run.pk}", ""]
    lines += _run_sections(run, level=2)
    return "\n".join(lines).rstrip("\n") + "\n"


def _trade_lines(thesis: Thesis, currency: str) -> list[str]:
    order = getattr(thesis, "order", None)
    if order is None:
        return []
    lines = ["## Order and position", "", f"- Order: {inline(order.side)} {order.quantity:,}, {inline(order.status)}"]
    if order.fill_price is not None:
        lines.append(f"- Filled {order.filled_on:%d %b %Y} at {format_money(order.fill_price, currency)}")
    if order.note:
        lines += ["", fenced(order.note)]
    position = getattr(order, "position", None)
    if position is not None:
        if position.closed_on is not None and position.exit_price is not None:
            lines.append(
                f"- Exited {position.closed_on:%d %b %Y} at {format_money(position.exit_price, currency)}"
                f" ({inline(position.exit_reason)})"
            )
        if position.realised_pnl is not None:
            lines.append(f"- Realised PnL net of costs: {format_money(position.realised_pnl, currency)}")
        else:
            lines.append(f"- Open; unrealised PnL {format_money(position.unrealised_pnl, currency)}")
    return [*lines, ""]


def _run_sections(run: PipelineRun, *, level: int) -> list[str]:
    head = "#" * level
    outputs = run_outputs(run)
    totals = run_totals(run)
    currency = run.instrument.currency
    lines = [
        f"- Instrument: {inline(run.instrument.symbol)} ({inline(run.instrument.exchange)}), "
        f"{inline(run.instrument.name)}",
        f"- As of: {run.as_of:%d %b %Y}",
        f"- Model provider: {inline(run.provider)}",
        f"- Status: {inline(run.status)}{' (history replay)' if run.is_replay else ''}",
        f"- Created: {_when(run.created_at)}; finished: {_when(run.finished_at)}",
        f"- Model calls: {totals['calls']:,}; tokens {totals['input_tokens']:,} in, {totals['output_tokens']:,} out;"
        f" cost {inline(totals['cost'])}",
    ]
    if (strategy_run := run.strategy_run) is not None:
        lines.append(
            f"- Strategy: {inline(strategy_run.strategy.name)}, its run of {strategy_run.as_of:%d %b %Y}"
            f" ({inline(strategy_run.decision)})"
        )
    lines.append("")
    if run.failure_reason:
        lines += ["Why it failed or held:", "", fenced(run.failure_reason), ""]
    lines += _stage_table(run, head)
    lines += _features(outputs, head)
    lines += _context(outputs, head)
    lines += _analysts(outputs, head)
    lines += _debate(outputs, head)
    lines += _trader(outputs, head)
    lines += _risk(outputs, head, currency)
    lines += _heuristics(run, head)
    return lines


def _stage_table(run: PipelineRun, head: str) -> list[str]:
    lines = [f"{head} Stages", "", "| Stage | Status | Finished | Error |", "| --- | --- | --- | --- |"]
    for stage in run.stages.all():
        error = inline(stage.error) if stage.error else ""
        lines.append(f"| {inline(stage.stage)} | {inline(stage.status)} | {_when(stage.finished_at)} | {error} |")
    return [*lines, ""]


def _features(outputs: RunOutputs, head: str) -> list[str]:
    if outputs.features is None:
        return []
    flagged = evidence_flags(outputs)["flagged_headlines"]
    lines = [f"{head} Features", "", "The bundle every agent read, as stored:", ""]
    lines += [fenced(json.dumps(outputs.features.bundle.model_dump(mode="json"), indent=2, ensure_ascii=False), "json")]
    if flagged:
        lines += ["", "Headlines flagged as carrying instructions (kept out of every score):", "", _points(flagged)]
    return [*lines, ""]


def _context(outputs: RunOutputs, head: str) -> list[str]:
    context = outputs.context
    if context is None:
        return []
    lines = [f"{head} Context", ""]
    if context.mandate:
        lines += ["The strategy's mandate:", "", fenced(context.mandate), ""]
    if context.memory_block:
        lines += ["Memory shown to the agents:", "", fenced(context.memory_block), ""]
    if not context.mandate and not context.memory_block:
        lines += ["No mandate and no memory were shown.", ""]
    return lines


def _analysts(outputs: RunOutputs, head: str) -> list[str]:
    analysts = outputs.analysts
    if analysts is None:
        return []
    quorum = "met" if analysts.quorum else "not met"
    lines = [
        f"{head} Analysts",
        "",
        f"Quorum {quorum}; {analysts.citation_mismatches} cited value(s) contradicted.",
        "",
    ]
    for role in ANALYST_ORDER:
        note, failure = analysts.notes.get(role), analysts.failures.get(role)
        lines += [f"{head}# {role.capitalize()}", ""]
        if note is None:
            lines += ["Failed:" if failure else "No note.", "", *([fenced(failure), ""] if failure else [])]
            continue
        abstained = " (abstained: no real data)" if note.abstained else ""
        lines += [
            f"- Stance {note.stance:+.2f}, confidence {note.confidence:.2f}{abstained};"
            f" model {inline(note.model_used)}",
            "",
            "Summary:",
            "",
            fenced(note.summary),
            "",
        ]
        if note.key_points:
            lines += ["Key points:", "", _points(note.key_points), ""]
        if note.evidence:
            lines += ["Evidence cited:", "", _points(note.evidence), ""]
        check = analysts.citations.get(role)
        if check is not None and check.citations:
            lines += ["| Cited | As written | In the bundle | Agrees |", "| --- | --- | --- | --- |"]
            for citation in check.citations:
                actual = "—" if citation.actual is None else f"{citation.actual:g}"
                lines.append(
                    f"| {inline(citation.label)} | {inline(citation.cited_text)} | {actual} | "
                    f"{'yes' if citation.ok else 'NO'} |"
                )
            lines.append("")
    return lines


def _debate(outputs: RunOutputs, head: str) -> list[str]:
    debate = outputs.debate
    if debate is None:
        return []
    result, calibration = debate.result, debate.calibration
    lines = [
        f"{head} Debate",
        "",
        f"- Winner: {inline(result.winner)}, conviction {calibration.conviction:.2f} (the model proposed "
        f"{calibration.proposed:.2f}; {calibration.opposing} of {calibration.side_taking} side-taking analysts "
        f"opposed, haircut {calibration.haircut:.2f})",
        "",
    ]
    for title, case in (("Bull, after rebuttal", debate.bull), ("Bear, after rebuttal", debate.bear)):
        lines += [
            f"{head}# {title}",
            "",
            fenced(case.argument),
            "",
            "Supporting points:",
            "",
            _points(case.supporting_points),
        ]
        if case.risks:
            lines += ["", "Risks acknowledged:", "", _points(case.risks)]
        lines.append("")
    lines += [f"{head}# Manager", "", fenced(result.manager_rationale), ""]
    if result.key_disagreements:
        lines += ["Disagreements:", "", _points(result.key_disagreements), ""]
    if result.falsifiers:
        lines += ["Falsifiers:", "", _points(result.falsifiers), ""]
    return lines


def _trader(outputs: RunOutputs, head: str) -> list[str]:
    trader = outputs.trader
    if trader is None:
        return []
    thesis = trader.thesis
    lines = [
        f"{head} Trader",
        "",
        f"- {inline(thesis.direction)}: entry {thesis.entry:,.2f}, stop {thesis.stop:,.2f},"
        f" target {thesis.target:,.2f}, {thesis.horizon_sessions} sessions"
        f" (levels from {inline(thesis.levels_source)})",
        "",
        "Rationale:",
        "",
        fenced(thesis.rationale),
        "",
    ]
    if thesis.invalidation_conditions:
        lines += ["Invalidation conditions:", "", _points(thesis.invalidation_conditions), ""]
    if thesis.key_risks:
        lines += ["Key risks:", "", _points(thesis.key_risks), ""]
    if trader.warnings:
        lines += ["What code overruled in the reply:", "", _points(trader.warnings), ""]
    return lines


def _risk(outputs: RunOutputs, head: str, currency: str) -> list[str]:
    risk = outputs.risk
    if risk is None:
        return []
    decision = risk.decision
    if decision is None:
        return [f"{head} Risk", "", "Not sized: the run held.", "", fenced(risk.held), ""]
    verdict = "approved" if decision.approved else "rejected"
    lines = [
        f"{head} Risk: {verdict}",
        "",
        f"- Quantity {decision.quantity:,}; at risk {format_money(Decimal(decision.risk_amount), currency)};"
        f" notional {format_money(Decimal(decision.notional), currency)}",
        "",
        "| Check | Passed | Detail |",
        "| --- | --- | --- |",
    ]
    lines += [
        f"| {inline(check.name)} | {'yes' if check.passed else 'NO'} | {inline(check.detail)} |"
        for check in decision.checks
    ]
    return [*lines, ""]


def _heuristics(run: PipelineRun, head: str) -> list[str]:
    cited = list(HeuristicCitation.objects.filter(run=run).order_by("id"))
    if not cited:
        return []
    lines = [f"{head} Heuristics cited", "", "| By | Code | Accepted |", "| --- | --- | --- |"]
    lines += [f"| {inline(c.role)} | {inline(c.code)} | {'yes' if c.accepted else 'no'} |" for c in cited]
    return [*lines, ""]
