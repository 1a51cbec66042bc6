"""``manage.py research``: run one research session in this process, with a progress bar and a table.

The same service as the page's worker (``research.services``): the session is created with every
value checked, run to its end here, and its trials, shortlist and holdout figures printed. Nothing
is promoted: the candidates are config files for a person to read.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm  # type: ignore[import-untyped]

from research.models import ResearchSession, ResearchTrial
from research.services import LLM_PROVIDERS, PROPOSERS, session_create, session_run
from research.signals import SIGNALS
from vocabulary.refusals import Refusal


def _figure(value: Any, digits: int = 4) -> str:
    return "—" if value is None else f"{float(value):.{digits}f}"


def _params(params: dict[str, Any]) -> str:
    return " ".join(f"{name}={value}" for name, value in params.items())


def _trial_params(trial: ResearchTrial) -> str:
    """A tune trial's parameters; a code trial's as its latest fold chose them (optimised per fold)."""
    if trial.kind == ResearchTrial.Kind.CODE and trial.folds:
        return "per fold, last: " + _params(trial.folds[-1].get("params") or {})
    return _params(trial.params)


class Command(BaseCommand):
    help = (
        "Run a research session: proposals validated walk-forward (out-of-sample fitness only, deflated Sharpe "
        "over every trial of the session), kept or discarded against the incumbent, until a budget or K dry "
        "rounds; the shortlist is scored once on the holdout and written as config files for a person."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--goal", required=True, help="what the session should look for, in words")
        parser.add_argument("--strategy", default="", help=f"one of {', '.join(SIGNALS)}; blank: all of them")
        parser.add_argument("--symbols", nargs="+", required=True, help="the instruments whose daily bars to read")
        parser.add_argument("--provider", default="offline", choices=LLM_PROVIDERS, help="the llm proposer's model")
        parser.add_argument("--proposer", default="llm", choices=PROPOSERS)
        parser.add_argument("--max-trials", type=int, default=None, help="trial budget (default: settings)")
        parser.add_argument("--max-tokens", type=int, default=None, help="token budget of the llm proposer")
        parser.add_argument("--dry-rounds", type=int, default=None, help="stop after K rounds with no improvement")
        parser.add_argument("--allow-code-gen", action="store_true", help="let the llm proposer write strategy code")
        parser.add_argument("--seed", type=int, default=0, help="the optimiser's seed (default 0)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            session = session_create(
                goal=options["goal"],
                strategy=options["strategy"],
                symbols=options["symbols"],
                provider=options["provider"],
                proposer=options["proposer"],
                max_trials=options["max_trials"],
                max_tokens=options["max_tokens"],
                dry_rounds=options["dry_rounds"],
                allow_code_gen=options["allow_code_gen"],
                seed=options["seed"],
            )
        except Refusal as refusal:
            raise CommandError(refusal.message) from None
        bar = tqdm(total=session.max_trials, unit="trial", disable=options["verbosity"] == 0, file=self.stderr._out)

        def progress(event: dict[str, Any]) -> None:
            if event.get("event") == "trial":
                bar.set_postfix_str(
                    f"#{event['number']} {event['decision']} OOS SR {_figure(event.get('oos_sharpe'))} "
                    f"n_trials={event['n_trials']}"
                )
                bar.update()

        session = session_run(session.pk, progress=progress)
        bar.close()
        self._report(session)
        if session.status == ResearchSession.Status.FAILED:
            raise CommandError(f"research session {session.pk} failed: {session.error}")

    def _report(self, session: ResearchSession) -> None:
        write = self.stdout.write
        write(
            f"Research session {session.pk}: {session.status}, stopped on {session.stop_reason or '—'}; "
            f"{session.trials.count()} trials, n_trials={session.n_trials}, tokens={session.tokens_used}; "
            f"data {session.data_start} to {session.data_end}, holdout from {session.holdout_start}"
        )
        header = (
            f"{'#':>3} {'decision':<9} {'strategy':<20} {'params':<44} {'OOS SR':>8} {'DSR':>6} {'trades':>6} "
            f"{'MaxDD':>7}"
        )
        write(header)
        write("-" * len(header))
        for trial in session.trials.order_by("number"):
            metrics = trial.oos_metrics or {}
            write(
                f"{trial.number:>3} {trial.decision:<9} {trial.strategy[:20]:<20} {_trial_params(trial)[:44]:<44} "
                f"{_figure(trial.oos_sharpe):>8} {_figure(trial.dsr, 3):>6} {metrics.get('trades', '—')!s:>6} "
                f"{_figure(metrics.get('max_drawdown'), 3):>7}"
            )
        write(f"PBO over the trial matrix: {_figure(session.pbo, 3)}")
        candidates = list(session.candidates.select_related("trial").order_by("rank"))
        if not candidates:
            write("Shortlist: none — no trial passed the promotion gates.")
        for candidate in candidates:
            holdout = candidate.holdout_metrics or {}
            write(
                f"Candidate {candidate.rank}: trial {candidate.trial.number} {candidate.trial.strategy} "
                f"{_params(candidate.config.get('params') or {})} — OOS SR {_figure(candidate.trial.oos_sharpe)}, DSR "
                f"{_figure(candidate.trial.dsr, 3)}; holdout SR {_figure(holdout.get('sharpe_per_period'))}, return "
                f"{_figure(holdout.get('total_return'), 3)}, drawdown {_figure(holdout.get('max_drawdown'), 3)} → "
                f"{candidate.config_path}"
            )
        write(f"Journal: {session.journal_path}")
