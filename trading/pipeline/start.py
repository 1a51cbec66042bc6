"""Starting runs from pages, the API and commands: check the request once, create, commit, then queue.

``run_request`` is the one check of a request to start runs: the run form (``forms.RunStartForm``)
and the API (``serializers.RunStartInput``) both call it, so they refuse exactly the same inputs
with the same words, field by field, before anything is created.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from agents.clients import PROVIDERS, provider_unavailable, require_configured, require_priced
from trading import edge
from trading.models import DailyBar, Instrument, PipelineRun
from trading.pipeline.dispatch import QueueUnavailable, run_send
from trading.pipeline.orchestrator import pipeline_run_create
from vocabulary.refusals import InputRefused, ServiceUnavailable

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

# A batch larger than the whole universe is a mistake; a symbol longer than this is not a symbol.
MAX_SYMBOLS = 500
MAX_SYMBOL_CHARS = 64
RUN_FIELDS = ("symbols", "as_of", "provider")


class RunRequestInvalid(InputRefused, ValueError):
    """A request to start runs the desk refuses: ``details`` maps each refused field (``symbols``,
    ``as_of``, ``provider``) to its problems, ``message`` joins them. Nothing was created."""

    @classmethod
    def from_fields(cls, problems: Mapping[str, list[str]]) -> RunRequestInvalid:
        refusal = cls("", {name: list(found) for name, found in problems.items() if found})
        refusal.message = "; ".join(refusal.lines())
        refusal.args = (refusal.message,)
        return refusal


class RunsNotQueued(ServiceUnavailable):
    """The runs were created but the broker refused (some of) their messages: those are kept,
    unsent, and the outbox sweep sends them when it is back. Starting them again would duplicate them."""

    def __init__(self, runs: list[PipelineRun], reason: str, unsent: list[int]) -> None:
        super().__init__(
            f"{len(runs)} run(s) saved, but {len(unsent)} could not be queued: {reason}; they start by "
            "themselves when the queue is back, so do not start them again",
            {"unsent": unsent},
        )
        self.runs = runs
        self.reason = reason
        self.unsent = unsent


@dataclass(frozen=True)
class RunRequest:
    """A checked request: active instruments in the order asked, a date inside the desk's window
    on which they have bars, and a provider that may run (a paid one has a price)."""

    instruments: list[Instrument]
    as_of: dt.date
    provider: str


def run_request(*, symbols: object, as_of: object = None, provider: object = None) -> RunRequest:
    """Check a request to start runs as it came in (a form's lists and strings, or a JSON body's
    values of any type). Raises ``RunRequestInvalid`` naming every refused field: an unknown symbol
    is refused, never dropped; ``as_of`` defaults to the latest bar of these instruments up to
    today (one bar dated 9999-12-31 must not set the date of a whole batch)."""
    problems: dict[str, list[str]] = {name: [] for name in RUN_FIELDS}
    instruments = _instruments(symbols, problems["symbols"])
    day = _day(as_of, problems["as_of"])
    chosen = _provider(provider, problems["provider"])
    if instruments and day is None and not problems["as_of"]:
        day = edge.default_run_as_of(instruments)
        if day is None:
            names = ", ".join(instrument.symbol for instrument in instruments)
            problems["symbols"].append(f"{edge.short(names)}: no bars up to today; import bars first")
    if any(problems.values()) or day is None:
        raise RunRequestInvalid.from_fields(problems)
    return RunRequest(instruments=instruments, as_of=day, provider=chosen)


def _instruments(symbols: object, problems: list[str]) -> list[Instrument]:
    if symbols is None or symbols == "":
        symbols = []
    if not isinstance(symbols, list | tuple):
        problems.append('a list of instrument symbols is expected, e.g. ["RELIANCE", "TCS"]')
        return []
    if len(symbols) > MAX_SYMBOLS:
        problems.append(f"{len(symbols):,} instruments asked for; at most {MAX_SYMBOLS} at once")
        return []
    wanted = _symbols(symbols, problems)
    if problems:
        return []
    if not wanted:
        problems.append("choose at least one instrument")
        return []
    found = {i.symbol: i for i in Instrument.objects.filter(symbol__in=wanted, is_active=True)}
    if unknown := [symbol for symbol in wanted if symbol not in found]:
        verb = "is" if len(unknown) == 1 else "are"
        problems.append(f"{edge.short(', '.join(unknown))} {verb} unknown or inactive")
        return []
    return [found[symbol] for symbol in wanted]


def _symbols(symbols: Sequence[object], problems: list[str]) -> list[str]:
    """The symbols asked for, upper-cased, each once, in the order asked."""
    wanted: dict[str, None] = {}
    for index, symbol in enumerate(symbols):
        name = f"symbols[{index}]"
        if not isinstance(symbol, str):
            problems.append(f"{name} is not a symbol (text such as RELIANCE)")
            continue
        try:
            value = edge.parse_name(symbol, name, limit=MAX_SYMBOL_CHARS)
        except edge.InputInvalid as problem:
            problems.append(problem.message)
            continue
        if not value:
            problems.append(f"{name} is blank")
            continue
        wanted[value.upper()] = None
    return list(wanted)


def _day(as_of: object, problems: list[str]) -> dt.date | None:
    try:
        if as_of is None or isinstance(as_of, str):
            return edge.parse_date(as_of, "as_of")
        if isinstance(as_of, dt.date) and not isinstance(as_of, dt.datetime):
            return edge.check_date(as_of, "as_of")
    except edge.InputInvalid as problem:
        problems.append(problem.message)
        return None
    problems.append(f"as_of {edge.short(repr(as_of))} is not a date (YYYY-MM-DD)")
    return None


def _provider(provider: object, problems: list[str]) -> str:
    if provider is None or provider == "":
        provider = settings.LLM["PROVIDER"]
    if not isinstance(provider, str):
        problems.append(f"provider is not one of {', '.join(PROVIDERS)}")
        return ""
    try:
        chosen = edge.parse_choice(provider, "provider", PROVIDERS)
        require_priced(chosen)
        require_configured(chosen)  # a run that could only fail in the worker is refused here
    except ValueError as problem:  # InputInvalid, a paid model without a price, no key or address
        problems.append(str(problem))
        return ""
    return chosen


@dataclass
class _Sends:
    refused: str = ""
    unsent: list[int] = field(default_factory=list)


def pipeline_runs_start(
    *,
    instruments: Sequence[Instrument],
    as_of: dt.date | None,
    provider: str,
    user: User | AnonymousUser | None = None,
) -> list[PipelineRun]:
    """Queue one run per instrument, as of ``as_of`` or the latest bar of those instruments. The
    task is sent only after the rows are committed, so a worker never looks for a missing run.
    Raises ``RunsNotQueued`` (after commit: the rows stay) when the broker refused. The edges pass
    a ``run_request`` they checked; these refusals are the guard for other callers."""
    if not instruments:
        raise RunRequestInvalid.from_fields({"symbols": ["choose at least one instrument"]})
    if problem := provider_unavailable(provider):
        raise RunRequestInvalid.from_fields({"provider": [problem]})
    # The latest session up to today: one bad future bar must not set the date of a whole batch.
    latest = DailyBar.objects.filter(instrument__in=instruments, date__lte=timezone.localdate())
    as_of = as_of or latest.aggregate(last=Max("date"))["last"]
    if as_of is None:
        raise RunRequestInvalid.from_fields({"symbols": ["these instruments have no bars yet"]})
    with transaction.atomic():
        runs = [
            pipeline_run_create(instrument=instrument, as_of=as_of, provider=provider, user=user)
            for instrument in instruments
        ]
        sends = _Sends()
        for run in runs:
            transaction.on_commit(partial(_send_after_commit, run.pk, sends))
    if sends.unsent:
        raise RunsNotQueued(runs, sends.refused, sends.unsent)
    return runs


def _send_after_commit(run_id: int, sends: _Sends) -> None:
    if sends.refused:
        # The broker just refused this request: the rest wait for the outbox, not for a timeout each.
        sends.unsent.append(run_id)
        return
    try:
        run_send(run_id, fail_fast=True)
    except QueueUnavailable as refused:
        sends.refused = str(refused)
        sends.unsent.append(run_id)
