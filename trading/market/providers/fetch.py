"""Bars from a provider into the desk: ``fetch_bars`` for one instrument, ``refresh_universe`` for
every active one (the after-close beat task). Bars go through the importer's validation
(``upsert_bars``): any invalid bar and nothing of that instrument is written."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from trading.audit import audit_record
from trading.market.imports import ImportReport, upsert_bars
from trading.market.providers.base import MarketDataProvider, ProviderError
from trading.models import CorporateAction, DailyBar, Instrument

# Without --since and without stored bars, this much history is fetched.
FIRST_FETCH_DAYS = 5 * 366


@dataclass
class FetchResult:
    instrument: str
    report: ImportReport | None = None
    error: str = ""
    actions_added: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error and self.report is not None and self.report.ok


def fetch_bars(
    *,
    provider: MarketDataProvider,
    instrument: Instrument,
    since: dt.date | None = None,
    until: dt.date | None = None,
    actor_label: str = "fetch_bars",
    actor: Any = None,
) -> FetchResult:
    """Fetch and store one instrument's bars from ``since`` (default: the day after its last stored
    bar, or five years back) to ``until`` (default: today on the desk's clock)."""
    end = until or timezone.localdate()
    if since is None:
        last = DailyBar.objects.filter(instrument=instrument).order_by("-date").values_list("date", flat=True).first()
        since = last + dt.timedelta(days=1) if last else end - dt.timedelta(days=FIRST_FETCH_DAYS)
    result = FetchResult(instrument=str(instrument))
    if since > end:
        result.report = ImportReport(path=f"{provider.name}:{instrument}", kind="bar", file_format="provider")
        return result
    try:
        bars = provider.daily_bars(instrument.exchange, instrument.symbol, since, end)
        actions = provider.corporate_actions(instrument.exchange, instrument.symbol, since, end)
    except ProviderError as error:
        result.error = str(error)
        return result
    source = f"{provider.name}:{provider.ticker(instrument.exchange, instrument.symbol)}"
    with transaction.atomic():
        # Actions first, so that the report's quality check sees the split that explains a move;
        # undone with the bars when a bar is refused.
        result.actions_added = _store_actions(instrument, actions, source, actor_label, actor)
        result.report = upsert_bars(
            instrument, [bar.as_row() for bar in bars], source=source, actor_label=actor_label, actor=actor
        )
        if not result.report.ok:
            result.actions_added = []
            transaction.set_rollback(True)
    return result


def _store_actions(instrument: Instrument, actions: list[Any], source: str, actor_label: str, actor: Any) -> list[str]:
    """New corporate actions the provider knows; one already stored (same kind and ex-date) is kept
    as it is: the desk's record may have been corrected by hand."""
    added = []
    for action in actions:
        kind = CorporateAction.Kind.SPLIT if action.kind == "split" else CorporateAction.Kind.DIVIDEND
        if CorporateAction.objects.filter(instrument=instrument, kind=kind, ex_date=action.ex_date).exists():
            continue
        try:
            with transaction.atomic():
                CorporateAction.objects.create(
                    instrument=instrument,
                    kind=kind,
                    ex_date=action.ex_date,
                    ratio_old=action.ratio_old,
                    ratio_new=action.ratio_new,
                    amount=action.amount,
                    source=source[:100],
                )
        except IntegrityError:
            continue
        text = (
            f"{instrument} {kind} {action.ratio_old}:{action.ratio_new} on {action.ex_date}"
            if kind == CorporateAction.Kind.SPLIT
            else f"{instrument} dividend {action.amount} on {action.ex_date}"
        )
        added.append(text)
    if added:
        audit_record(
            actor=actor,
            actor_label=actor_label,
            action="corporate_actions_fetched",
            target=source,
            details={"added": added},
        )
    return added


def refresh_universe(*, provider: MarketDataProvider, actor_label: str = "refresh_market_data") -> list[FetchResult]:
    """Every active instrument's new bars since its last one; one instrument's failure is reported
    and the others still run."""
    return [
        fetch_bars(provider=provider, instrument=instrument, actor_label=actor_label)
        for instrument in Instrument.objects.filter(is_active=True).order_by("exchange", "symbol")
    ]
