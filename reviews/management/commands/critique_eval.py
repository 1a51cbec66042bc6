"""``manage.py critique_eval --strategy NAME [--replay]``: the critique's evaluation harness over a
strategy's critiques (live, or those of its history replays), one line per critique with its
quality (share of cited figures and ids found in its evidence pack; ids it invented) and its impact
(each fired detector's score then and over the following runs). The scores are computed by
``reviews.critique.evaluation``; this command only prints them."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reviews.critique.evaluation import DEFAULT_HORIZON_RUNS, Evaluation, strategy_evaluate
from trading.models import Strategy

HEADER = ("#", "as of", "run", "severity", "quality", "cited", "invented ids", "impact", "detectors")


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _detectors(evaluation: Evaluation) -> str:
    parts = []
    for item in evaluation.impact.detectors:
        after = "?" if item.after is None else f"{item.after:.2f}"
        parts.append(f"{item.detector} {item.before:.2f}→{after} {item.verdict}")
    return "; ".join(parts) or "none fired"


def evaluation_row(evaluation: Evaluation) -> tuple[str, ...]:
    quality = evaluation.quality
    return (
        str(evaluation.sequence),
        evaluation.as_of.isoformat(),
        str(evaluation.run_count),
        evaluation.severity or evaluation.status,
        _share(quality.score),
        f"{quality.figures_found + quality.ids_found}/{quality.cited}",
        ", ".join(quality.invented_ids) or "none",
        _share(evaluation.impact.score),
        "; ".join(evaluation.notes) or _detectors(evaluation),
    )


def table(rows: list[tuple[str, ...]]) -> str:
    """Plain columns, padded to the widest cell; the last column runs on."""
    widths = [max(len(row[index]) for row in rows) for index in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Evaluate a strategy's critiques: quality (share of cited figures and ids found in the evidence pack, "
        "invented ids) and impact (each fired detector's score before and over the following runs)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--strategy", required=True, help="the strategy's name")
        parser.add_argument("--replay", action="store_true", help="the critiques of its history replays")
        parser.add_argument(
            "--runs",
            type=int,
            default=DEFAULT_HORIZON_RUNS,
            help=f"how many runs after a critique its impact is measured over (default {DEFAULT_HORIZON_RUNS})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        strategy = Strategy.objects.filter(name=options["strategy"]).first()
        if strategy is None:
            raise CommandError(f"there is no strategy named {options['strategy']!r}")
        if options["runs"] < 1:
            raise CommandError("--runs must be at least 1")
        kind = "history replay" if options["replay"] else "live"
        evaluations = strategy_evaluate(strategy, is_replay=options["replay"], horizon_runs=options["runs"])
        if not evaluations:
            self.stdout.write(f"{strategy.name}: no {kind} critique to evaluate.")
            return
        self.stdout.write(f"{strategy.name}: {len(evaluations)} {kind} critique(s), impact over {options['runs']} runs")
        self.stdout.write(table([HEADER, *(evaluation_row(evaluation) for evaluation in evaluations)]))
        self.stdout.write(self._summary(evaluations))

    def _summary(self, evaluations: list[Evaluation]) -> str:
        qualities = [e.quality.score for e in evaluations if e.quality.score is not None]
        impacts = [e.impact.score for e in evaluations if e.impact.score is not None]
        invented = sum(len(e.quality.invented_ids) for e in evaluations)
        mean_quality = _share(sum(qualities) / len(qualities)) if qualities else "—"
        mean_impact = _share(sum(impacts) / len(impacts)) if impacts else "—"
        return (
            f"mean quality {mean_quality} over {len(qualities)} critique(s) · {invented} invented id(s) · "
            f"mean impact {mean_impact} over {len(impacts)} critique(s) with later data"
        )
