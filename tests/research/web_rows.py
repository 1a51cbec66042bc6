"""Research rows for the page, API and attachment tests, written directly (no search is run): a
session, its trials with walk-forward folds shaped as ``research.walkforward`` records them, and a
shortlist scored on the holdout."""

from __future__ import annotations

from typing import Any

from research.models import ResearchCandidate, ResearchSession, ResearchTrial


def metrics(sharpe: float, total_return: float, *, trades: int = 14, max_drawdown: float = -0.08) -> dict[str, Any]:
    return {
        "sharpe": round(sharpe * 15.87, 4),
        "sharpe_per_period": sharpe,
        "total_return": total_return,
        "max_drawdown": max_drawdown,
        "trades": trades,
        "bars": 120,
    }


def folds(count: int, *, in_sample: float, out_of_sample: float, params: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "fold": index,
            "in_sample": {"start": f"2024-0{index + 1}-01", "end": f"2024-0{index + 1}-28"},
            "out_of_sample": {"start": f"2024-0{index + 2}-05", "end": f"2024-0{index + 2}-28"},
            "purge_bars": 5,
            "params": dict(params),
            "is_metrics": metrics(in_sample + index / 100, 0.03),
            "oos_metrics": metrics(out_of_sample - index / 100, 0.01),
        }
        for index in range(count)
    ]


def session(user: Any = None, **fields: Any) -> ResearchSession:
    values: dict[str, Any] = {
        "goal": "a trend follower that survives a drawdown",
        "strategy": "sma_crossover",
        "symbols": ["RELIANCE"],
        "provider": "optuna",
        "proposer": "optuna",
        "max_trials": 20,
        "max_tokens": 0,
        "dry_rounds": 5,
        "seed": 7,
        "status": ResearchSession.Status.RUNNING,
        "created_by": user,
        "config": {"gates": {"min_dsr": 0.9}},
    }
    values.update(fields)
    return ResearchSession.objects.create(**values)


def trial(research: ResearchSession, number: int, **fields: Any) -> ResearchTrial:
    params = fields.pop("params", {"fast": 10, "slow": 50 + 10 * number})
    values: dict[str, Any] = {
        "number": number,
        "proposer": research.proposer,
        "kind": ResearchTrial.Kind.TUNE,
        "strategy": "sma_crossover",
        "params": params,
        "rationale": f"slower trend filter #{number}",
        "decision": ResearchTrial.Decision.KEPT if number % 2 else ResearchTrial.Decision.DISCARDED,
        "reason": "beats the incumbent out of sample" if number % 2 else "no better than the incumbent",
        "folds": folds(3, in_sample=0.08, out_of_sample=0.03, params=params),
        "oos_metrics": metrics(0.03 + number / 1000, 0.05),
        "oos_sharpe": 0.03 + number / 1000,
        "dsr": min(0.99, 0.5 + number / 50),
        "n_trials_at_eval": number,
        "promotable": bool(number % 2),
    }
    values.update(fields)
    made = ResearchTrial.objects.create(session=research, **values)
    ResearchSession.objects.filter(pk=research.pk).update(n_trials=number)
    return made


def candidate(made: ResearchTrial, rank: int, **fields: Any) -> ResearchCandidate:
    values: dict[str, Any] = {
        "rank": rank,
        "holdout_metrics": metrics(0.02, 0.04, trades=6),
        "config": {
            "session": made.session_id,
            "trial": made.number,
            "strategy": made.strategy,
            "params": made.params,
            "rationale": made.rationale,
            "dsr": made.dsr,
        },
    }
    values.update(fields)
    return ResearchCandidate.objects.create(session=made.session, trial=made, **values)


def finished_session(user: Any = None, *, trials: int = 4, shortlist: int = 2) -> ResearchSession:
    """A DONE session with ``trials`` trials, the odd ones kept, the first ``shortlist`` kept ones
    scored on the holdout."""
    research = session(user, status=ResearchSession.Status.DONE, stop_reason="trial budget spent", pbo=0.25)
    made = [trial(research, number) for number in range(1, trials + 1)]
    kept = [row for row in made if row.decision == ResearchTrial.Decision.KEPT]
    for rank, row in enumerate(kept[:shortlist], start=1):
        candidate(row, rank)
    research.refresh_from_db()
    return research
