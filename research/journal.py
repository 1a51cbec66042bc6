"""The session's journal: one JSON object a line, appended, never rewritten; and its replay.

The first line (``session``) holds everything the search was given: the goal, the strategies, the
walk-forward settings, the gates and budgets, the backtest's costs, and the search data itself
(the bars before the holdout, with their SHA-256). Then one ``proposal`` line per proposal (as the
proposer made it, with the tokens it cost), one ``trial`` line per decision (with the figures it
was made on and the folds), one ``stop`` line, and at the end the ``holdout`` line (the shortlist
and its scores) and the candidates' files.

``replay_journal`` re-runs the search from the journal alone: the same data (checked against its
SHA-256), the same settings, the recorded proposals replayed in order (a model is not asked
again), and checks that every decision, figure and the stop are reproduced, and that the same
trials make the shortlist. It reports the first mismatch, so an edited journal is caught at the
line it was edited. The holdout's bars are not in the journal (the search never had them), so its
scores are not recomputed. Pure: no Django.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from research.backtest import BacktestConfig
from research.holdout import SearchData
from research.loop import Budgets, Gates, SearchSpec, run_search, shortlist
from research.proposers import Proposal, ProposalContext, Proposed
from research.signals import SIGNALS, Bars
from research.walkforward import WalkForwardSettings
from vocabulary.costs import CostModel

__all__ = [
    "Journal",
    "ReplayReport",
    "json_safe",
    "read_journal",
    "replay_journal",
    "session_header",
    "spec_from_header",
]

VERSION = 1
_BAR_ARRAYS = ("open", "high", "low", "close", "volume")
# The trial fields a replay must reproduce.
CHECKED_FIELDS = (
    "number",
    "kind",
    "strategy",
    "params",
    "decision",
    "reason",
    "oos_sharpe",
    "dsr",
    "trades",
    "max_drawdown",
    "n_trials_at_eval",
    "promotable",
)


def _default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    raise TypeError(f"not JSON-able in a journal: {type(value).__name__}")


def json_safe(value: Any) -> Any:
    """Non-finite floats become null: a journal line is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


class Journal:
    """Appends events to ``path`` (created with its folders), one line each, flushed at once."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, event: Mapping[str, Any]) -> None:
        line = json.dumps(json_safe(dict(event)), default=_default, sort_keys=True, ensure_ascii=False)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    __call__ = append


def read_journal(path: str | Path) -> list[dict[str, Any]]:
    """Every event of a journal, in order; ``ValueError`` naming the line that is not JSON."""
    events = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not a JSON line ({error.msg})") from None
    return events


# --- the header ----------------------------------------------------------------------------------


def _bars_dict(bars: Bars) -> dict[str, Any]:
    return {
        "dates": [str(day) for day in bars.dates],
        **{name: [float(value) for value in getattr(bars, name)] for name in _BAR_ARRAYS},
        "tick": str(bars.tick),
        "lot_size": bars.lot_size,
        "currency": bars.currency,
    }


def _bars_from(symbol: str, data: Mapping[str, Any]) -> Bars:
    return Bars(
        symbol=symbol,
        dates=np.array(data["dates"], dtype="datetime64[D]"),
        **{name: np.array(data[name], dtype=np.float64) for name in _BAR_ARRAYS},
        tick=Decimal(data["tick"]),
        lot_size=int(data["lot_size"]),
        currency=str(data["currency"]),
    )


def backtest_from(data: Mapping[str, Any]) -> BacktestConfig:
    return BacktestConfig(
        capital=Decimal(data["capital"]),
        costs=CostModel.from_mapping({name: value for name, value in data["costs"].items()}),
        slippage_bps=Decimal(data["slippage_bps"]),
        allow_short=bool(data["allow_short"]),
    )


def session_header(
    spec: SearchSpec, data: SearchData, *, proposer: str, spends_tokens: bool, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The journal's first line: all the search was given, the search data included."""
    return {
        "event": "session",
        "version": VERSION,
        **dict(extra or {}),
        "goal": spec.goal,
        "strategies": list(spec.strategies),
        "walkforward": spec.walkforward.to_dict(),
        "gates": spec.gates.to_dict(),
        "budgets": spec.budgets.to_dict(),
        "allow_code_gen": spec.allow_code_gen,
        "shortlist_size": spec.shortlist_size,
        "pbo_splits": spec.pbo_splits,
        "backtest": spec.backtest.to_dict(),
        "proposer": proposer,
        "spends_tokens": spends_tokens,
        "fingerprint": data.fingerprint(),
        "search_data": {symbol: _bars_dict(bars) for symbol, bars in data.bars.items()},
    }


def spec_from_header(header: Mapping[str, Any]) -> tuple[SearchSpec, SearchData]:
    """The search's spec and data back from a journal's first line; ``ValueError`` when the data
    does not match its recorded SHA-256 or names a strategy this desk does not have."""
    data = SearchData({symbol: _bars_from(symbol, bars) for symbol, bars in header["search_data"].items()})
    if data.fingerprint() != header.get("fingerprint"):
        raise ValueError("the journal's search data does not match its recorded SHA-256: it was edited")
    unknown = [key for key in header["strategies"] if key not in SIGNALS]
    if unknown:
        raise ValueError(f"the journal names strategies this desk does not have: {', '.join(unknown)}")
    walk = header["walkforward"]
    spec = SearchSpec(
        goal=str(header["goal"]),
        strategies={key: SIGNALS[key] for key in header["strategies"]},
        walkforward=WalkForwardSettings(
            window=walk["window"], folds=int(walk["folds"]), purge_bars=int(walk["purge_bars"])
        ),
        backtest=backtest_from(header["backtest"]),
        gates=Gates(**header["gates"]),
        budgets=Budgets(**header["budgets"]),
        allow_code_gen=bool(header["allow_code_gen"]),
        shortlist_size=int(header["shortlist_size"]),
        pbo_splits=int(header["pbo_splits"]),
    )
    return spec, data


# --- the replay ----------------------------------------------------------------------------------


class _ReplayProposer:
    """Gives back the journal's proposals (and failures) in order, with the tokens each cost."""

    def __init__(self, events: Sequence[Mapping[str, Any]], *, name: str, spends_tokens: bool) -> None:
        self.name = name
        self.spends_tokens = spends_tokens
        self._answers: Iterator[Proposed] = iter(
            [
                Proposed(
                    Proposal.model_validate(event["proposal"]) if event.get("proposal") else None,
                    int(event.get("tokens") or 0),
                    str(event.get("error") or ""),
                )
                for event in events
            ]
        )

    def propose(self, context: ProposalContext) -> Proposed:
        return next(self._answers, Proposed(None))

    def tell(self, proposal: Proposal, fitness: float | None) -> None:
        return None


@dataclass(frozen=True)
class ReplayReport:
    ok: bool
    checked: int
    mismatch: str = ""

    def __str__(self) -> str:
        if self.ok:
            return f"replayed: all {self.checked} decisions reproduced"
        return f"replay mismatch after {self.checked} matching decisions: {self.mismatch}"


def _same(recorded: Any, replayed: Any) -> bool:
    if isinstance(recorded, float) or isinstance(replayed, float):
        if recorded is None or replayed is None:
            return recorded is None and replayed is None
        return math.isclose(float(recorded), float(replayed), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(recorded, Mapping) and isinstance(replayed, Mapping):
        return recorded.keys() == replayed.keys() and all(_same(recorded[k], replayed[k]) for k in recorded)
    return bool(recorded == replayed)


def _first_difference(recorded: Mapping[str, Any], replayed: Mapping[str, Any]) -> str:
    for name in CHECKED_FIELDS:
        if not _same(recorded.get(name), replayed.get(name)):
            return (
                f"trial {recorded.get('number')}: {name} is {recorded.get(name)!r} in the journal but the replay "
                f"gives {replayed.get(name)!r}"
            )
    return ""


def _compare(recorded: Sequence[Mapping[str, Any]], replayed: Sequence[Mapping[str, Any]]) -> ReplayReport:
    for index, (old, new) in enumerate(zip(recorded, replayed, strict=False)):
        difference = _first_difference(old, new)
        if difference:
            return ReplayReport(False, index, difference)
    if len(recorded) != len(replayed):
        return ReplayReport(
            False,
            min(len(recorded), len(replayed)),
            f"the journal holds {len(recorded)} trials but the replay made {len(replayed)}",
        )
    return ReplayReport(True, len(recorded))


def replay_journal(path: str | Path) -> ReplayReport:
    """Re-run the session of the journal at ``path`` and check every decision is reproduced."""
    events = read_journal(path)
    headers = [event for event in events if event.get("event") == "session"]
    if not headers:
        return ReplayReport(False, 0, "the journal has no session line")
    header = headers[0]
    try:
        spec, data = spec_from_header(header)
    except (KeyError, TypeError, ValueError) as error:
        return ReplayReport(False, 0, f"the session line cannot be read: {error}")
    proposals = [event for event in events if event.get("event") == "proposal"]
    proposer = _ReplayProposer(
        proposals, name=str(header.get("proposer", "replay")), spends_tokens=bool(header.get("spends_tokens"))
    )
    replayed: list[dict[str, Any]] = []
    result = run_search(spec, data, proposer, on_event=replayed.append)
    report = _compare(
        [event for event in events if event.get("event") == "trial"],
        [event for event in replayed if event.get("event") == "trial"],
    )
    if not report.ok:
        return report
    return _compare_end(
        events,
        replayed,
        result_shortlist=[r.number for r in shortlist(result.trials, spec.shortlist_size)],
        checked=report.checked,
    )


def _compare_end(
    events: Sequence[Mapping[str, Any]],
    replayed: Sequence[Mapping[str, Any]],
    *,
    result_shortlist: list[int],
    checked: int,
) -> ReplayReport:
    stops = [event.get("reason") for event in events if event.get("event") == "stop"]
    replayed_stop = next(event.get("reason") for event in replayed if event.get("event") == "stop")
    if stops and stops[0] != replayed_stop:
        return ReplayReport(
            False, checked, f"the stop is {stops[0]!r} in the journal but the replay stops on {replayed_stop!r}"
        )
    holdouts = [event for event in events if event.get("event") == "holdout"]
    if holdouts and list(holdouts[0].get("shortlist") or []) != result_shortlist:
        return ReplayReport(
            False,
            checked,
            f"the shortlist is {holdouts[0].get('shortlist')} in the journal but the replay gives {result_shortlist}",
        )
    return ReplayReport(True, checked)
