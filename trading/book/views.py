"""Pages for stages 8-11: the approval queue, a thesis, the portfolio."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.core.cache import cache
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import date as date_filter
from django.template.defaultfilters import floatformat
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import json_script
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from agents.recording import run_totals
from trading import edge
from trading.book import selectors
from trading.book.accounts import account_portfolio, default_account
from trading.book.approvals import APPROVE_PERMISSION, thesis_approve, thesis_reject, thesis_staleness
from trading.book.broker import position_close_by_hand
from trading.book.orders import order_cancel as cancel_order
from trading.market import charts
from trading.market import selectors as market_selectors
from trading.models import Account, Order, PipelineRun, Position, Strategy, StrategyDirective, Thesis
from trading.pipeline import presenters
from trading.refusals import refused
from trading.templatetags.desk import money
from vocabulary.money import format_money
from vocabulary.numbers import format_count
from vocabulary.refusals import NotAllowed, Refusal


def gated_strategies() -> dict[bool, set[int]]:
    """The strategies a critique's blocking directive holds, live (False) and replay (True): none of
    their theses reaches approval until the directive's actions are complete."""
    gated: dict[bool, set[int]] = {False: set(), True: set()}
    in_force = StrategyDirective.objects.filter(lifted_at__isnull=True, severity=StrategyDirective.Severity.DIRECTIVE)
    for directive in in_force.only("strategy_id", "is_replay", "severity", "blocking", "lifted_at"):
        if directive.is_blocking:
            gated[directive.is_replay].add(directive.strategy_id)
    return gated


QUEUE_PAGE_SIZE = 50


@dataclass(frozen=True)
class QueueRow:
    """One row of the approval queue, its figures formatted once (the page's template only places
    them): the same words the template filters wrote, at a fraction of the template's cost."""

    pk: int
    url: str
    is_replay: bool
    gated: bool
    strategy_id: int | None
    strategy_name: str
    symbol: str
    direction: str
    conviction: str
    entry: str
    stop: str
    target: str
    quantity: str
    risk_approved: bool
    status: str
    status_label: object  # the choice's label (a lazy translation), as get_status_display gives it
    created: str


_STATUS_LABELS = dict(Thesis._meta.get_field("status").flatchoices)


@lru_cache(maxsize=4096)
def _queue_words(
    pk: int,
    currency: str,
    conviction: Decimal,
    entry: Decimal,
    stop: Decimal,
    target: Decimal,
    quantity: int,
    created_at: dt.datetime,
) -> tuple[str, str, str, str, str, str, str]:
    """A row's address and figures as the template filters wrote them, remembered by their values:
    every view of the queue shows the same fifty rows again (one time zone and language per desk)."""
    return (
        reverse("thesis_detail", args=[pk]),
        floatformat(conviction, 2),
        money(entry, currency),
        money(stop, currency),
        money(target, currency),
        format_count(quantity),
        date_filter(timezone.localtime(created_at), "d M H:i"),
    )


def queue_row(row: dict[str, Any], *, gated: dict[bool, set[int]]) -> QueueRow:
    """``row``: one of ``selectors.thesis_queue_rows``; ``gated``: ``gated_strategies()``."""
    strategy_id = row["run__strategy_run__strategy_id"]
    is_replay = row["run__is_replay"]
    url, conviction, entry, stop, target, quantity, created = _queue_words(
        row["id"],
        row["instrument__currency"],
        row["conviction"],
        row["entry"],
        row["stop"],
        row["target"],
        row["quantity"],
        row["created_at"],
    )
    return QueueRow(
        pk=row["id"],
        url=url,
        is_replay=is_replay,
        gated=strategy_id in gated[bool(is_replay)],
        strategy_id=strategy_id,
        strategy_name=row["run__strategy_run__strategy__name"] or "",
        symbol=row["instrument__symbol"],
        direction=row["direction"],
        conviction=conviction,
        entry=entry,
        stop=stop,
        target=target,
        quantity=quantity,
        risk_approved=row["risk_approved"],
        status=row["status"],
        status_label=_STATUS_LABELS.get(row["status"], row["status"]),
        created=created,
    )


@lru_cache(maxsize=4096)
def queue_row_html(row: QueueRow) -> str:
    """A row of the queue's table as ``trading/theses_row.html`` draws it, remembered by the row's
    every value (whether it is gated included): the same fifty rows come back on every view, and
    the template loop over them was most of the page's CPU. Nothing of the person is in a row."""
    # The file's own final newline (an editor may add one) is not the row's: the page adds its own.
    return render_to_string("trading/theses_row.html", {"t": row}).removesuffix("\n")


def thesis_queue(request: HttpRequest) -> HttpResponse:
    """A bad filter is answered 400 with the reason and no list: a filter silently left off would
    show theses the person asked to leave out."""
    status = 200
    try:
        theses = selectors.thesis_queue(request.GET)
    except edge.InputInvalid as problem:
        messages.error(request, f"{problem}.")
        theses, status = Thesis.objects.none(), 400
    # Counted on the queue itself (one join), the page's rows read as plain values (five joins).
    page = Paginator(theses, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)  # the pager adds its own: a second "page" would win over it
    gated = gated_strategies()
    on_page = cast("QuerySet[Thesis]", page.object_list)  # a slice of ``theses``, still a queryset
    rows = [queue_row(row, gated=gated) for row in selectors.thesis_queue_rows(on_page)]
    return render(
        request,
        "trading/theses.html",
        {
            "page": page,
            "rows": rows,
            "rows_html": mark_safe("".join(queue_row_html(row) for row in rows)),  # autoescaped rows
            "query": query.urlencode(),
            "filters": {key: request.GET.get(key, "") for key in selectors.QUEUE_FILTERS},
            "statuses": list(selectors.QUEUE_STATUSES),
            "strategies": Strategy.objects.values_list("name", flat=True),
        },
        status=status,
    )


THESIS_CHART_BARS = 130  # drawn; the indicators read FEATURE_LOOKBACK_BARS more before them
THESIS_CHART_PANES = ("volume",)
THESIS_CHART_CACHE_SECONDS = 3600
THESIS_CHART_VERSION = 1  # bump when price_chart draws differently: old entries are never read again


def thesis_chart_script(thesis: Thesis, *, marks: list[charts.TradeMark], chart_end: dt.date | None) -> SafeString:
    """The thesis chart as the page embeds it (``json_script``), from the cache when the same figure
    was drawn before. The key holds every input of the figure: the levels, the trade's marks, the
    days it spans and the stored bars and splits it reads (``selectors.bars_fingerprint``), so a new
    bar, a corrected one, a fill or an exit is a new key and a stale chart is never served. Reading
    the bars as a frame, the indicators and the figure's JSON were most of the page's CPU."""
    lookback = int(settings.DESK["FEATURE_LOOKBACK_BARS"]) + THESIS_CHART_BARS  # a count; settings see a number
    symbol, currency, as_of = thesis.instrument.symbol, thesis.instrument.currency, thesis.run.as_of
    levels = {"entry": float(thesis.entry), "stop": float(thesis.stop), "target": float(thesis.target)}
    bars_read = selectors.bars_fingerprint(thesis.instrument_id, as_of=chart_end, limit=lookback)
    inputs = (THESIS_CHART_VERSION, symbol, currency, levels, THESIS_CHART_PANES, marks, as_of, chart_end, lookback)
    key = f"thesis-chart:{hashlib.sha256(repr((*inputs, bars_read)).encode()).hexdigest()}"
    script = cache.get(key)
    if script is None:
        bars = market_selectors.bars_frame(thesis.instrument, as_of=chart_end, limit=lookback)
        figure = charts.price_chart(
            bars,
            symbol=symbol,
            show_last=THESIS_CHART_BARS,
            levels=levels,
            currency=currency,
            panes=THESIS_CHART_PANES,
            marks=marks,
            as_of=as_of,
        )
        script = str(json_script(figure, "chart-data"))
        cache.set(key, script, THESIS_CHART_CACHE_SECONDS)
    return mark_safe(script)  # json_script's own output, escaped for a <script> element


RUN_BODY_CACHE_SECONDS = 3600
RUN_BODY_VERSION = 1  # bump when _run_body.html or run_context shows a run differently: old entries go unread


@dataclass(frozen=True)
class RunBody:
    """The thesis page's run record (``_run_body.html``) rendered, with the few figures the rest of
    the page reads from the same outputs: the model calls' totals, the analysts' notes (for the
    hints) and the debate (for the top box)."""

    html: SafeString
    totals: dict[str, Any]
    notes: list[presenters.NoteCard]
    debate: presenters.DebateOutput | None


def run_body_key(run: PipelineRun, totals: dict[str, Any]) -> str:
    """Everything of the run the fragment shows or depends on. Once a run has finished its stages
    never change; a resumed run changes status, attempts and finish time, and a trade review adds
    model calls to the run after it finished (its ``totals``), so either is a new key. The fragment
    holds nothing of the person (no form, no token, no link that depends on a role), so one entry
    serves everyone."""
    finished = run.finished_at.isoformat() if run.finished_at else ""
    reason = hashlib.sha256(run.failure_reason.encode()).hexdigest()[:16]
    calls = ":".join(f"{name}={totals[name]}" for name in sorted(totals))
    return (
        f"run-body:{RUN_BODY_VERSION}:{run.pk}:{run.status}:{finished}:{run.attempts}:"
        f"{run.instrument.currency}:{reason}:{calls}"
    )


def thesis_run_body(run: PipelineRun) -> RunBody:
    """The run record as ``trading/_run_body.html`` draws it, from the cache once the run has
    finished (reading and validating every stage's output and rendering it was a sixth of the
    page's CPU). A run still working is drawn afresh on every view."""
    totals = run_totals(run)  # one query: the calls a trade review adds later change the key
    key = run_body_key(run, totals) if run.is_finished else None
    body = cache.get(key) if key is not None else None
    if body is None:
        context = presenters.run_context(run, totals)
        body = RunBody(
            html=mark_safe(render_to_string("trading/_run_body.html", {"run": run, **context})),  # autoescaped
            totals=context["totals"],
            notes=context["notes"],
            debate=context["debate"],
        )
        if key is not None:
            cache.set(key, body, RUN_BODY_CACHE_SECONDS)
    return body


def thesis_detail(request: HttpRequest, thesis_id: int) -> HttpResponse:
    # Its order and the order's position (one each at most) come with it: one query, not three.
    thesis = get_object_or_404(
        Thesis.objects.select_related("instrument", "run__instrument", "decided_by", "order__position"), pk=thesis_id
    )
    run = thesis.run
    body = thesis_run_body(run)
    order: Order | None = getattr(thesis, "order", None)
    position: Position | None = getattr(order, "position", None) if order is not None else None
    marks = charts.trade_marks(
        direction=thesis.direction,
        quantity=order.quantity if order is not None else thesis.quantity,
        filled_on=order.filled_on if order is not None else None,
        fill_price=order.fill_price if order is not None else None,
        closed_on=position.closed_on if position is not None else None,
        exit_price=position.exit_price if position is not None else None,
        exit_reason=position.exit_reason if position is not None else "",
    )
    # Once traded, the chart runs on to the exit (or, while open, to the latest bar) so the fill and
    # exit markers sit on their candles; support and resistance stay as the analysts saw them.
    chart_end: dt.date | None = max([run.as_of, *(mark.day for mark in marks)]) if marks else run.as_of
    if marks and position is not None and position.closed_on is None:
        chart_end = None
    chart_script = thesis_chart_script(thesis, marks=marks, chart_end=chart_end)
    can_decide = thesis.status == Thesis.Status.PENDING and request.user.has_perm("trading.approve_thesis")
    return render(
        request,
        "trading/thesis.html",
        {
            "thesis": thesis,
            "run": run,
            "chart_script": chart_script,
            "hints": presenters.interpretation_hints({"notes": body.notes}, thesis),
            "staleness": thesis_staleness(thesis) if thesis.status == Thesis.Status.PENDING else None,
            "can_decide": can_decide,
            "order": order,
            "position": position,  # the order's: the thesis's own, read with it
            "box": presenters.thesis_box(thesis, body.debate, order=order, position=position),
            "totals": body.totals,
            "run_body": body.html,
        },
    )


@require_POST
def thesis_decide(request: HttpRequest, thesis_id: int) -> HttpResponse:
    """Approve or reject. The permission and every rule are enforced by the services, so a forged
    POST gets the same refusal as a click; a refusal is answered by ``trading.refusals``."""
    thesis = get_object_or_404(Thesis.objects.select_related("instrument", "run"), pk=thesis_id)
    back = redirect("thesis_detail", thesis_id=thesis.pk)
    comment = request.POST.get("comment", "").strip()
    try:
        edge.check_comment(comment)  # refused like any decision: nothing stored
        if request.POST.get("decision") == "approve":
            order = thesis_approve(thesis=thesis, user=request.user, comment=comment)
            messages.success(request, f"Approved: order #{order.pk} to {order.side} {order.quantity} placed.")
        elif request.POST.get("decision") == "reject":
            thesis_reject(thesis=thesis, user=request.user, comment=comment)
            messages.success(request, "Rejected.")
        else:
            messages.error(request, "Choose approve or reject.")
    except Refusal as refusal:
        return refused(request, refusal, back)
    return back


def portfolio(request: HttpRequest) -> HttpResponse:
    """The live book by default; ?account=<id> shows a replay's book (same figures, same page). An
    unknown account is answered 400 with the reason, over the live book (not silently the live book)."""
    live = default_account()
    accounts = list(Account.objects.order_by("id"))
    wanted = request.GET.get("account", "").strip()
    account = next((a for a in accounts if str(a.pk) == wanted), None) if wanted else live
    status = 200
    if account is None:
        messages.error(request, f"There is no such account: {edge.short(wanted)!r}; showing the live book.")
        account, status = live, 400
    state = account_portfolio(account)
    holdings = selectors.open_holdings(account)
    closed = selectors.closed_rows(account)
    curve = selectors.equity_curve(account)
    figure = charts.equity_chart(curve, currency=account.currency)
    return render(
        request,
        "trading/portfolio.html",
        {
            "account": account,
            "state": state,
            "holdings": holdings,
            "closed_rows": closed,
            "show_dividends": any(h.dividends for h in holdings) or any(r.position.dividends for r in closed),
            "unrealised": sum((h.unrealised for h in holdings), start=0),
            "chart": figure if curve else None,
            "can_close": request.user.has_perm("trading.approve_thesis") and account.pk == live.pk,
            "accounts": accounts,
        },
        status=status,
    )


@require_POST
def position_close(request: HttpRequest, position_id: int) -> HttpResponse:
    """Close by hand. The role is checked first, as the API does: a viewer's forged POST is a 403
    whatever else is wrong with it."""
    position = get_object_or_404(Position.objects.select_related("instrument"), pk=position_id)
    back = redirect("portfolio")
    try:
        if not request.user.has_perm(APPROVE_PERMISSION):
            raise NotAllowed("only approvers can close a position")
        comment = request.POST.get("comment", "")
        edge.check_comment(comment.strip(), "reason")  # refused like any close: nothing changes
        closed = position_close_by_hand(position=position, user=request.user, comment=comment)
    except Refusal as refusal:
        return refused(request, refusal, back)
    currency = closed.instrument.currency
    exit_price = format_money(closed.exit_price, currency) if closed.exit_price is not None else "—"
    pnl = format_money(closed.realised_pnl, currency) if closed.realised_pnl is not None else "—"
    messages.success(request, f"Closed {closed.instrument.symbol} at {exit_price}: PnL {pnl} (net of costs).")
    return back


ORDERS_PER_PAGE = 50


def order_list(request: HttpRequest) -> HttpResponse:
    """The blotter: working, filled and cancelled orders (with why), newest first. A bad filter is
    answered 400 with the reason and no list, as the approval queue does."""
    live = default_account()
    status = 200
    try:
        orders = selectors.order_blotter(request.GET, live=live)
    except edge.InputInvalid as problem:
        messages.error(request, f"{problem}.")
        orders, status = Order.objects.none(), 400
    page = Paginator(orders, ORDERS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "trading/orders.html",
        {
            "page": page,
            "query": query.urlencode(),
            "filters": {key: request.GET.get(key, "") for key in selectors.ORDER_FILTERS},
            "statuses": selectors.ORDER_STATUSES,
            "accounts": Account.objects.order_by("id"),
            "live": live,
            "can_cancel": request.user.has_perm(APPROVE_PERMISSION),
        },
        status=status,
    )


@require_POST
def order_cancel(request: HttpRequest, order_id: int) -> HttpResponse:
    """Cancel a working order by hand. The role is checked first: a viewer's forged POST is a 403
    whatever else is wrong with it; every other rule is the service's."""
    order = get_object_or_404(Order.objects.select_related("instrument", "account", "thesis__run"), pk=order_id)
    back = redirect("order_list")
    try:
        if not request.user.has_perm(APPROVE_PERMISSION):
            raise NotAllowed("only approvers can cancel an order")
        cancelled = cancel_order(order=order, user=request.user, reason=request.POST.get("reason", ""))
    except Refusal as refusal:
        return refused(request, refusal, back)
    messages.success(
        request,
        f"Cancelled order #{cancelled.pk} ({cancelled.side} {cancelled.quantity} {cancelled.instrument.symbol}).",
    )
    return back
