"""Glue between the pure model layer and the database: call records, budgets, replay, memory.

Model calls of one stage run in threads. Those threads never touch the database: the recorder
buffers each attempt in memory and the orchestrator flushes the buffer from its own thread after
the stage, so a test transaction or a SQLite write lock can never deadlock a stage.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.db.models import Count, Max, Model, Q, Sum
from django.utils import timezone

from agents.domain.llm import BudgetExceeded, CallRecord, ModelReply
from agents.domain.memory import LIVE_SCOPE, HybridIndex, MemoryHit, MemoryRecord, replay_scope
from agents.domain.pricing import PriceTable
from agents.models import MemoryEntry, ModelCall
from agents.providers.recorded import prompt_key
from security.redaction import secrets_redactor


class BufferedRecorder:
    """Collects call records from any thread; ``flush`` writes them from the caller's thread."""

    def __init__(self, *, run_id: int | None, prices: PriceTable) -> None:
        self.run_id = run_id
        self.prices = prices
        self._lock = threading.Lock()
        self._pending: list[CallRecord] = []
        self.tokens = 0
        self.cost = Decimal(0)
        self.flushed_cost = Decimal(0)  # the part of ``cost`` already in the table

    def record(self, call: CallRecord) -> None:
        with self._lock:
            self._pending.append(call)
            self.tokens += call.input_tokens + call.output_tokens
            self.cost += self.prices.cost(call.model, call.input_tokens, call.output_tokens, provider=call.provider)

    def flush(self) -> int:
        with self._lock:
            pending, self._pending = self._pending, []
            if not pending:
                return 0  # nothing to write: not even an empty transaction for the write lock
            self.flushed_cost += sum(
                (self.prices.cost(c.model, c.input_tokens, c.output_tokens, provider=c.provider) for c in pending),
                Decimal(0),
            )
        redact_text = secrets_redactor()  # the secrets read once for the batch, not twice per call
        ModelCall.objects.bulk_create(
            ModelCall(
                run_id=self.run_id,
                role=c.role,
                symbol=c.symbol,
                tier=c.tier,
                provider=c.provider,
                model=c.model,
                prompt_key=prompt_key(c.role, c.system, c.prompt),
                system=c.system,
                prompt=c.prompt,
                reply=redact_text(c.reply),  # a reply or an error may echo a credential
                input_tokens=c.input_tokens,
                output_tokens=c.output_tokens,
                cost=self.prices.cost(c.model, c.input_tokens, c.output_tokens, provider=c.provider),
                latency_ms=c.latency_ms,
                ok=c.ok,
                error=redact_text(c.error),
                attempt=c.attempt,
            )
            for c in pending
        )
        return len(pending)


class RunBudget:
    """Stops further calls once the run's tokens or the day's cost are spent. The stored totals
    are read in the orchestrator's thread, at the start and again before every stage
    (``refresh``), so other runs' spending is seen stage by stage; calls made since are counted
    by the recorder."""

    # Providers whose calls cost nothing: their runs need not read the day's spend at all.
    FREE_PROVIDERS = frozenset({"offline", "replay", "ollama"})

    def __init__(self, *, run_id: int, recorder: BufferedRecorder, provider: str = "", fresh: bool = False) -> None:
        """``fresh``: the caller knows no call of the run is stored yet (a replay's run, made in
        the transaction executing it), so its tokens so far are 0 without asking."""
        self.recorder = recorder
        # An int (config/env.py's env_int); the checker sees settings.LLM's values only as objects.
        self.run_tokens_limit = cast(int, settings.LLM["RUN_TOKEN_BUDGET"])
        self.day_cost_limit = Decimal(str(settings.LLM["DAILY_COST_BUDGET"]))
        self.run_tokens_before = 0
        if not fresh:
            run_calls = ModelCall.objects.filter(run_id=run_id).aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
            self.run_tokens_before = (run_calls["i"] or 0) + (run_calls["o"] or 0)
        self.paid = provider not in self.FREE_PROVIDERS
        self.day_cost_before = self._spent_today() if self.paid else Decimal(0)

    def refresh(self) -> None:
        """Read the day's spend again (the orchestrator calls this between stages). What this run
        already flushed is in the table and in the recorder's count: it is taken out once."""
        if self.paid:
            self.day_cost_before = self._spent_today() - self.recorder.flushed_cost

    @staticmethod
    def _spent_today() -> Decimal:
        # A range between local midnights uses the index on created_at; a __date lookup cannot.
        midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
        today = ModelCall.objects.filter(
            created_at__gte=midnight, created_at__lt=midnight + dt.timedelta(days=1), cost__gt=0
        )
        return today.aggregate(c=Sum("cost"))["c"] or Decimal(0)

    def check(self) -> None:
        tokens = self.run_tokens_before + self.recorder.tokens
        if self.run_tokens_limit and tokens >= self.run_tokens_limit:
            raise BudgetExceeded(f"run token budget spent ({tokens:,} of {self.run_tokens_limit:,} tokens)")
        cost = self.day_cost_before + self.recorder.cost
        if self.day_cost_limit and cost >= self.day_cost_limit:
            raise BudgetExceeded(f"daily cost budget spent ({cost:.4f} of {self.day_cost_limit:.2f})")


def replay_lookup_for(symbol: str) -> Callable[[str], ModelReply | None]:
    """Recorded replies for one instrument, keyed by prompt key (loaded once). Rejected replies are
    kept too: replaying a run that needed a repair must see the same bad first answer. The first
    recording of a prompt wins, so a replay reproduces the original run, not a later one."""
    replies: dict[str, ModelReply] = {}
    recorded = ModelCall.objects.filter(symbol=symbol).exclude(provider="replay").exclude(reply="").order_by("id")
    for call in recorded:
        replies.setdefault(
            call.prompt_key,
            ModelReply(
                text=call.reply,
                provider="replay",
                model=call.model,
                input_tokens=call.input_tokens,
                output_tokens=call.output_tokens,
            ),
        )
    return replies.get


class _MemoryCache:
    """One in-process index, extended with rows added since the last look. It is rebuilt when rows
    it holds were deleted (a new replay of a strategy forgets the old one's lessons) or reweighted
    (a position retrospective's hindsight raises a lesson's weight and adds its hindsight tags),
    which one aggregate per search detects: the count and the total weight of the rows it holds.
    Scopes are a filter of the search, never a rebuild."""

    def __init__(self) -> None:
        self.index: HybridIndex | None = None
        self.last_id = 0
        self.weight_total = 0.0
        self.lock = threading.Lock()

    def _held(self) -> tuple[int, float, int]:
        """The count and total weight of the rows the index holds, and the newest row's id: one
        aggregate, so a search with nothing new to add costs one query."""
        held = MemoryEntry.objects.aggregate(
            count=Count("id", filter=Q(id__lte=self.last_id)),
            weight=Sum("weight", filter=Q(id__lte=self.last_id)),
            newest=Max("id"),
        )
        return int(held["count"] or 0), float(held["weight"] or 0.0), int(held["newest"] or 0)

    def refresh(self) -> HybridIndex:
        with self.lock:
            newest = None
            if self.index is not None:
                count, weight, newest = self._held()
                if count != len(self.index) or not math.isclose(weight, self.weight_total, rel_tol=0, abs_tol=1e-6):
                    self.index, self.last_id, self.weight_total, newest = None, 0, 0.0, None
            if self.index is None:
                self.index = HybridIndex()
            if newest is not None and newest <= self.last_id:
                return self.index  # nothing added since the last look
            fresh = list(MemoryEntry.objects.filter(id__gt=self.last_id).order_by("id"))
            self.index.add_many(
                MemoryRecord(
                    id=row.pk,
                    kind=row.kind,
                    symbol=row.symbol or None,
                    text=row.text,
                    tags={str(k): str(v) for k, v in row.tags.items()},
                    created_on=row.created_on,
                    scope=row.scope,
                    weight=row.weight if row.weight > 0 else 1.0,
                )
                for row in fresh
            )
            if fresh:
                self.last_id = fresh[-1].pk
                self.weight_total += math.fsum(row.weight for row in fresh)
            return self.index

    def reset(self) -> None:
        with self.lock:
            self.index = None
            self.last_id = 0
            self.weight_total = 0.0


memory_cache = _MemoryCache()


def memory_scopes(*, replay_account_id: int | None = None) -> tuple[str, ...]:
    """What a run recalls. Live: live lessons only. A replay: the live lessons (``as_of`` still
    hides those written after the replayed day) and its own replay's, never another replay's."""
    if replay_account_id is None:
        return (LIVE_SCOPE,)
    return (LIVE_SCOPE, replay_scope(replay_account_id))


def memory_search(
    query: str,
    *,
    symbol: str,
    as_of: dt.date,
    k: int = 5,
    scopes: Iterable[str] = (LIVE_SCOPE,),
    index: HybridIndex | None = None,
) -> list[MemoryHit]:
    """The k most relevant lessons as of ``as_of`` within ``scopes`` (live lessons unless the
    caller names a replay's scopes: see ``memory_scopes``). ``index``: ``memory_cache.refresh()``
    as the caller read it a moment ago, when nothing can have written a lesson since (the runs of
    one replay day); else it is refreshed here."""
    index = index if index is not None else memory_cache.refresh()
    return index.search(query, k=k, symbol=symbol, as_of=as_of, scopes=tuple(scopes))


def run_totals(run: Model) -> dict[str, Any]:
    """What a run's model calls added up to: calls, tokens and cost (zero when it made none)."""
    totals = ModelCall.objects.filter(run_id=run.pk).aggregate(
        calls=Count("id"), input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), cost=Sum("cost")
    )
    return {key: value or 0 for key, value in totals.items()}
