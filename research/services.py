"""Research sessions as the desk runs them: create (every value checked), run, cancel.

The glue around the pure loop (``research.loop``): a session's settings are frozen into its row
when it is created, so a run uses what was in force then; ``session_run`` claims the session,
loads the bars, reserves the holdout, writes the journal line by line and a ``ResearchTrial`` row
as each trial is decided (a page polling the session sees them arrive), checks between trials
whether a person cancelled, and at the end stores the shortlist's holdout figures and writes each
candidate's config file. Nothing here can place or approve a trade; a candidate is a file and a
row for a person to read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.clients import model_choice, require_priced
from research.backtest import BacktestConfig
from research.data import bar_count, load_bars, resolve_instrument
from research.holdout import MIN_HOLDOUT_BARS, reserve
from research.journal import Journal, backtest_from, json_safe, session_header
from research.loop import Budgets, Gates, SearchSpec, SearchState, TrialRecord, finish, run_search
from research.models import ResearchCandidate, ResearchSession, ResearchTrial
from research.proposers import FixedProposer, LLMProposer, OptunaProposer, Proposer, sweep_proposals
from research.signals import SIGNALS
from research.signals.base import SignalStrategy
from research.walkforward import MIN_WINDOW_BARS, WalkForwardSettings
from trading.audit import audit_record
from vocabulary.refusals import InputRefused, NotAllowed, StateConflict

__all__ = [
    "PROPOSERS",
    "build_proposer",
    "candidate_config",
    "candidate_path",
    "journal_path",
    "minimum_bars",
    "session_cancel",
    "session_create",
    "session_run",
    "session_spec",
]

log = logging.getLogger(__name__)

PROPOSERS = ("llm", "fixed", "optuna")
LLM_PROVIDERS = ("offline", "anthropic", "openai", "ollama")
RUN_PERMISSION = "research.run_research"
MAX_GOAL_CHARS = 2000
MAX_SYMBOLS = 20
MAX_TRIALS_LIMIT = 2000
Progress = Callable[[dict[str, Any]], None]


# --- create --------------------------------------------------------------------------------------


def _frozen_config(*, allow_short: bool = False) -> dict[str, Any]:
    research: Mapping[str, Any] = settings.RESEARCH
    return {
        "walkforward": WalkForwardSettings.from_mapping(research).to_dict(),
        "gates": Gates.from_mapping(research).to_dict(),
        "holdout_fraction": float(research["HOLDOUT_FRACTION"]),
        "shortlist_size": int(research["SHORTLIST_SIZE"]),
        "pbo_splits": int(research["PBO_SPLITS"]),
        "backtest": BacktestConfig.from_settings(allow_short=allow_short).to_dict(),
    }


def minimum_bars(config: Mapping[str, Any]) -> int:
    """The fewest common sessions a session needs: every walk-forward window long enough after the
    purge, and the holdout on top."""
    walk = config["walkforward"]
    search = (int(walk["folds"]) + 1) * (MIN_WINDOW_BARS + int(walk["purge_bars"]))
    fraction = float(config["holdout_fraction"])
    return max(int(search / (1 - fraction)) + 1, search + MIN_HOLDOUT_BARS)


def _check_numbers(max_trials: int, max_tokens: int, dry_rounds: int, problems: dict[str, list[str]]) -> None:
    if not 1 <= max_trials <= MAX_TRIALS_LIMIT:
        problems["max_trials"] = [f"the trial budget must be from 1 to {MAX_TRIALS_LIMIT}, not {max_trials}"]
    if max_tokens < 0:
        problems["max_tokens"] = [f"the token budget cannot be negative ({max_tokens})"]
    if dry_rounds < 1:
        problems["dry_rounds"] = [f"the dry-rounds stop needs at least 1 round, not {dry_rounds}"]


def _check_proposer(proposer: str, provider: str, allow_code_gen: bool, problems: dict[str, list[str]]) -> None:
    if proposer not in PROPOSERS:
        problems["proposer"] = [f"unknown proposer {proposer!r}; choose one of {', '.join(PROPOSERS)}"]
        return
    if proposer != "llm":
        if allow_code_gen:
            problems["allow_code_gen"] = ["only the llm proposer writes code; the fixed and optuna proposers tune"]
        return
    if provider not in LLM_PROVIDERS:
        problems["provider"] = [f"unknown provider {provider!r}; choose one of {', '.join(LLM_PROVIDERS)}"]
        return
    try:
        require_priced(provider)
    except ValueError as error:
        problems["provider"] = [str(error)]


def _check_symbols(symbols: Sequence[str], needed: int, problems: dict[str, list[str]]) -> list[str]:
    cleaned = list(dict.fromkeys(str(symbol).strip().upper() for symbol in symbols if str(symbol).strip()))
    if not cleaned:
        problems["symbols"] = ["name at least one symbol whose bars the session reads"]
        return cleaned
    if len(cleaned) > MAX_SYMBOLS:
        problems["symbols"] = [f"at most {MAX_SYMBOLS} symbols a session, not {len(cleaned)}"]
        return cleaned
    found = []
    for symbol in cleaned:
        try:
            instrument = resolve_instrument(symbol)
        except InputRefused:
            found.append(f"unknown symbol {symbol[:64]!r}")
            continue
        count = bar_count(instrument)
        if count < needed:
            found.append(f"{symbol} has {count} daily bars; a session needs at least {needed}")
    if found:
        problems["symbols"] = found
    return cleaned


def session_create(
    *,
    goal: str,
    strategy: str = "",
    symbols: Sequence[str],
    provider: str = "offline",
    proposer: str = "llm",
    max_trials: int | None = None,
    max_tokens: int | None = None,
    dry_rounds: int | None = None,
    allow_code_gen: bool = False,
    seed: int = 0,
    user: Any = None,
) -> ResearchSession:
    """A QUEUED session with its settings frozen, or ``InputRefused`` naming every bad value (and
    nothing created). Budgets left as None take ``settings.RESEARCH``'s."""
    research: Mapping[str, Any] = settings.RESEARCH
    max_trials = int(research["MAX_TRIALS"]) if max_trials is None else int(max_trials)
    max_tokens = int(research["MAX_TOKENS"]) if max_tokens is None else int(max_tokens)
    dry_rounds = int(research["DRY_ROUNDS"]) if dry_rounds is None else int(dry_rounds)
    config = _frozen_config()
    problems: dict[str, list[str]] = {}
    goal = (goal or "").strip()
    if not goal:
        problems["goal"] = ["state the research goal: what the session should look for"]
    elif len(goal) > MAX_GOAL_CHARS:
        problems["goal"] = [f"the goal is {len(goal)} characters; at most {MAX_GOAL_CHARS}"]
    strategy = (strategy or "").strip()
    if strategy and strategy not in SIGNALS:
        problems["strategy"] = [f"unknown strategy {strategy!r}; choose one of {', '.join(SIGNALS)} or leave blank"]
    _check_proposer(proposer, provider, allow_code_gen, problems)
    _check_numbers(max_trials, max_tokens, dry_rounds, problems)
    cleaned = _check_symbols(symbols, minimum_bars(config), problems)
    if problems:
        raise InputRefused("; ".join(line for lines in problems.values() for line in lines), problems)
    return ResearchSession.objects.create(
        goal=goal,
        strategy=strategy,
        symbols=cleaned,
        provider=provider if proposer == "llm" else proposer,
        proposer=proposer,
        max_trials=max_trials,
        max_tokens=max_tokens,
        dry_rounds=dry_rounds,
        allow_code_gen=allow_code_gen,
        seed=int(seed),
        config=config,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


# --- run -----------------------------------------------------------------------------------------


def journal_path(session: ResearchSession) -> Path:
    return Path(str(settings.RESEARCH["JOURNAL_DIR"])) / f"session_{session.pk}.jsonl"


def candidate_path(session: ResearchSession, rank: int) -> Path:
    return Path(str(settings.RESEARCH["CANDIDATES_DIR"])) / f"session_{session.pk}" / f"candidate_{rank}.json"


def _strategies(session: ResearchSession) -> dict[str, type[SignalStrategy]]:
    return {session.strategy: SIGNALS[session.strategy]} if session.strategy else dict(SIGNALS)


def session_spec(session: ResearchSession) -> SearchSpec:
    """The pure loop's spec from the session's frozen config and budgets."""
    config = session.config
    walk = config["walkforward"]
    return SearchSpec(
        goal=session.goal,
        strategies=_strategies(session),
        walkforward=WalkForwardSettings(
            window=walk["window"], folds=int(walk["folds"]), purge_bars=int(walk["purge_bars"])
        ),
        backtest=backtest_from(config["backtest"]),
        gates=Gates(**config["gates"]),
        budgets=Budgets(max_trials=session.max_trials, max_tokens=session.max_tokens, dry_rounds=session.dry_rounds),
        allow_code_gen=session.allow_code_gen,
        shortlist_size=int(config["shortlist_size"]),
        pbo_splits=int(config["pbo_splits"]),
    )


def build_proposer(session: ResearchSession, spec: SearchSpec) -> Proposer:
    if session.proposer == "fixed":
        return FixedProposer(sweep_proposals(spec.strategies, limit=session.max_trials))
    if session.proposer == "optuna":
        return OptunaProposer(session.seed, spec.strategies)
    symbol = session.symbols[0] if session.symbols else ""
    return LLMProposer(model_choice(session.provider, symbol=symbol), symbol=symbol, name=f"llm:{session.provider}")


def _trial_row(session: ResearchSession, record: TrialRecord) -> ResearchTrial:
    proposal = record.proposal
    result = record.result
    return ResearchTrial.objects.create(
        session=session,
        number=record.number,
        proposer=record.proposer[:64],
        kind=proposal.kind if proposal else ResearchTrial.Kind.TUNE,
        strategy=(proposal.strategy if proposal else "")[:64],
        params=json_safe(dict(proposal.params)) if proposal else {},
        code=proposal.code if proposal else "",
        rationale=proposal.rationale if proposal else "",
        decision=record.decision,
        reason=record.reason,
        folds=json_safe(result.folds) if result else [],
        oos_metrics=json_safe(result.oos_metrics) if result else {},
        oos_sharpe=record.oos_sharpe,
        dsr=record.dsr,
        n_trials_at_eval=record.n_trials_at_eval,
        promotable=record.promotable,
        tokens=record.tokens,
    )


class _Recorder:
    """Writes each decided trial as a row and keeps the session's counters current."""

    def __init__(self, session: ResearchSession, progress: Progress | None) -> None:
        self.session = session
        self.progress = progress
        self.rows: dict[int, ResearchTrial] = {}

    def __call__(self, record: TrialRecord, state: SearchState) -> None:
        row = _trial_row(self.session, record)
        self.rows[record.number] = row
        incumbent = self.rows.get(state.incumbent.number) if state.incumbent else None
        ResearchSession.objects.filter(pk=self.session.pk).update(
            n_trials=state.n_trials, tokens_used=state.tokens_used, incumbent=incumbent
        )
        if self.progress is not None:
            self.progress(
                {"event": "trial", **record.summary(), "n_trials": state.n_trials, "tokens_used": state.tokens_used}
            )


def _cancelled(session_id: int) -> Callable[[], bool]:
    def check() -> bool:
        return ResearchSession.objects.filter(pk=session_id, status=ResearchSession.Status.CANCELLED).exists()

    return check


def _write_candidate(session: ResearchSession, rank: int, config: Mapping[str, Any]) -> str:
    path = candidate_path(session, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_safe(dict(config)), indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return str(path)


def _provenance(session: ResearchSession) -> dict[str, Any]:
    return {
        "session": session.pk,
        "goal": session.goal,
        "symbols": list(session.symbols),
        "data_start": session.data_start.isoformat() if session.data_start else None,
        "holdout_start": session.holdout_start.isoformat() if session.holdout_start else None,
        "data_end": session.data_end.isoformat() if session.data_end else None,
        "walkforward": session.config.get("walkforward"),
        "gates": session.config.get("gates"),
        "backtest": session.config.get("backtest"),
    }


def _claim(session_id: int) -> bool:
    claimed = ResearchSession.objects.filter(pk=session_id, status=ResearchSession.Status.QUEUED).update(
        status=ResearchSession.Status.RUNNING, started_at=timezone.now()
    )
    return claimed == 1


def session_run(session_id: int, *, progress: Progress | None = None) -> ResearchSession:
    """Run a QUEUED session to its end (or its cancellation); any other status is left as it is, so
    a task delivered twice runs the session once. A failure is stored with its reason."""
    if not _claim(session_id):
        return ResearchSession.objects.get(pk=session_id)
    session = ResearchSession.objects.get(pk=session_id)
    audit_record(
        actor=session.created_by,
        action="research_session_started",
        target=f"research_session:{session.pk}",
        reason=session.goal[:200],
        details={"proposer": session.proposer, "provider": session.provider, "symbols": session.symbols},
    )
    try:
        _run(session, progress)
    except Exception as error:  # any failure stops this session visibly, never silently
        log.exception("research session %s failed", session.pk)
        ResearchSession.objects.filter(pk=session.pk).update(
            status=ResearchSession.Status.FAILED,
            error=f"{type(error).__name__}: {error}"[:2000],
            finished_at=timezone.now(),
        )
        audit_record(
            action="research_session_finished",
            target=f"research_session:{session.pk}",
            reason=f"failed: {type(error).__name__}: {error}"[:500],
            details={"status": "failed"},
        )
    session.refresh_from_db()
    return session


def _run(session: ResearchSession, progress: Progress | None) -> None:
    spec = session_spec(session)
    search_data, holdout = reserve(load_bars(session.symbols), float(session.config["holdout_fraction"]), spec.backtest)
    session.data_start = search_data.dates[0].astype(object)
    session.data_end = holdout.end
    session.holdout_start = holdout.start
    path = journal_path(session)
    if path.exists():
        raise StateConflict(f"the journal {path} exists already; a session's journal is never overwritten")
    session.journal_path = str(path)
    session.save(update_fields=["data_start", "data_end", "holdout_start", "journal_path"])
    journal = Journal(path)
    proposer = build_proposer(session, spec)
    journal.append(
        session_header(
            spec,
            search_data,
            proposer=proposer.name,
            spends_tokens=proposer.spends_tokens,
            extra={
                "session": session.pk,
                "symbols": session.symbols,
                "holdout_start": session.holdout_start,
                "seed": session.seed,
            },
        )
    )
    recorder = _Recorder(session, progress)
    search = run_search(
        spec, search_data, proposer, on_event=journal.append, on_trial=recorder, should_stop=_cancelled(session.pk)
    )
    if search.stop_reason == "cancelled":
        ResearchSession.objects.filter(pk=session.pk).update(
            stop_reason="cancelled by a person", finished_at=timezone.now()
        )
        journal.append({"event": "cancelled"})
        return
    outcome = finish(spec, search, holdout, provenance=_provenance(session), on_event=journal.append)
    with transaction.atomic():
        for config, record in zip(outcome.candidates, outcome.shortlist, strict=True):
            rank = int(config["rank"])
            config["provenance"]["trial_id"] = recorder.rows[record.number].pk
            ResearchCandidate.objects.create(
                session=session,
                trial=recorder.rows[record.number],
                rank=rank,
                holdout_metrics=json_safe(config["holdout_metrics"]),
                config=json_safe(config),
                config_path=_write_candidate(session, rank, config),
            )
        finished = ResearchSession.objects.filter(pk=session.pk, status=ResearchSession.Status.RUNNING).update(
            status=ResearchSession.Status.DONE,
            stop_reason=search.stop_reason,
            pbo=outcome.pbo,
            finished_at=timezone.now(),
        )
    journal.append({"event": "finished", "candidates": [config["rank"] for config in outcome.candidates]})
    audit_record(
        action="research_session_finished",
        target=f"research_session:{session.pk}",
        reason=search.stop_reason,
        details={
            "status": "done" if finished else "cancelled",
            "trials": len(search.trials),
            "n_trials": search.n_trials,
            "tokens_used": search.tokens_used,
            "candidates": len(outcome.candidates),
            "pbo": outcome.pbo,
        },
    )
    if progress is not None:
        progress({"event": "finished", "stop_reason": search.stop_reason, "pbo": outcome.pbo})


# --- cancel and read -----------------------------------------------------------------------------


def session_cancel(session: ResearchSession, *, user: Any) -> ResearchSession:
    """Stop a queued or running session: a running one stops between two trials and scores no
    holdout. ``StateConflict`` when it is over already."""
    if user is not None and not user.has_perm(RUN_PERMISSION):
        raise NotAllowed("cancelling a research session needs the approver or admin role")
    live = (ResearchSession.Status.QUEUED, ResearchSession.Status.RUNNING)
    with transaction.atomic():
        updated = ResearchSession.objects.filter(pk=session.pk, status__in=live).update(
            status=ResearchSession.Status.CANCELLED, stop_reason="cancelled by a person"
        )
        if not updated:
            session.refresh_from_db()
            raise StateConflict(
                f"research session {session.pk} is {session.status}; only a queued or running one can be cancelled"
            )
        audit_record(
            actor=user,
            action="research_session_cancelled",
            target=f"research_session:{session.pk}",
            reason="cancelled by a person",
            details={"goal": session.goal[:200]},
        )
    session.refresh_from_db()
    return session


def candidate_config(candidate: ResearchCandidate) -> dict[str, Any]:
    """The candidate's config file as written (params and provenance)."""
    return dict(candidate.config)
