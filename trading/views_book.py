"""Pages for stages 8-11: the approval queue, a thesis, the portfolio."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from trading import charts, edge, presenters, selectors, selectors_book
from trading.approvals import DecisionRefused, thesis_approve, thesis_reject, thesis_staleness
from trading.broker import BrokerError, position_close_by_hand
from trading.domain.money import currency_symbol
from trading.models import Account, Position, Strategy, StrategyRun, Thesis
from trading.pipeline import run_totals
from trading.portfolio import account_portfolio, default_account
from trading.strategies import strategy_run_start


def thesis_queue(request: HttpRequest) -> HttpResponse:
    """A bad filter is answered 400 with the reason and no list: a filter silently left off would
    show theses the person asked to leave out."""
    status = 200
    try:
        theses = selectors_book.thesis_queue(request.GET)
    except edge.InputInvalid as problem:
        messages.error(request, f"{problem}.")
        theses, status = Thesis.objects.none(), 400
    page = Paginator(theses, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "trading/theses.html",
        {
            "page": page,
            "filters": {key: request.GET.get(key, "") for key in selectors_book.QUEUE_FILTERS},
            "statuses": list(selectors_book.QUEUE_STATUSES),
            "strategies": Strategy.objects.values_list("name", flat=True),
        },
        status=status,
    )


def thesis_detail(request: HttpRequest, thesis_id: int) -> HttpResponse:
    thesis = get_object_or_404(
        Thesis.objects.select_related("instrument", "run__instrument", "decided_by"), pk=thesis_id
    )
    run = thesis.run
    context = presenters.run_context(run, run_totals(run))
    bars = selectors.bars_frame(thesis.instrument, as_of=run.as_of, limit=settings.DESK["FEATURE_LOOKBACK_BARS"] + 130)
    chart = charts.price_chart(
        bars,
        symbol=thesis.instrument.symbol,
        show_last=130,
        levels={"entry": float(thesis.entry), "stop": float(thesis.stop), "target": float(thesis.target)},
    )
    can_decide = request.user.has_perm("trading.approve_thesis") and thesis.status == Thesis.Status.PENDING
    return render(
        request,
        "trading/thesis.html",
        {
            "thesis": thesis,
            "run": run,
            "chart": chart,
            "hints": presenters.interpretation_hints(context, thesis),
            "staleness": thesis_staleness(thesis) if thesis.status == Thesis.Status.PENDING else None,
            "can_decide": can_decide,
            "order": getattr(thesis, "order", None),
            **context,
        },
    )


@require_POST
def thesis_decide(request: HttpRequest, thesis_id: int) -> HttpResponse:
    """Approve or reject. The permission and every rule are enforced by the services, so a forged
    POST gets the same refusal as a click."""
    thesis = get_object_or_404(Thesis.objects.select_related("instrument", "run"), pk=thesis_id)
    comment = request.POST.get("comment", "").strip()
    try:
        try:
            edge.check_comment(comment)
        except edge.InputInvalid as problem:
            raise DecisionRefused(str(problem)) from None  # refused like any decision: nothing stored
        if request.POST.get("decision") == "approve":
            order = thesis_approve(thesis=thesis, user=request.user, comment=comment)
            messages.success(request, f"Approved: order #{order.pk} to {order.side} {order.quantity} placed.")
        elif request.POST.get("decision") == "reject":
            thesis_reject(thesis=thesis, user=request.user, comment=comment)
            messages.success(request, "Rejected.")
        else:
            messages.error(request, "Choose approve or reject.")
    except DecisionRefused as refusal:
        messages.error(request, f"Refused: {refusal.reason}.")
        return (
            redirect("thesis_detail", thesis_id=thesis.pk)
            if request.user.has_perm("trading.approve_thesis")
            else HttpResponse(f"Refused: {refusal.reason}.", status=403)
        )
    return redirect("thesis_detail", thesis_id=thesis.pk)


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
    open_positions = list(selectors_book.open_positions(account))
    curve = selectors_book.equity_curve(account)
    figure = {
        "data": [
            {
                "type": "scatter",
                "mode": "lines",
                "name": "equity",
                "x": [d for d, _ in curve],
                "y": [v for _, v in curve],
                "line": {"color": "#1d4ed8"},
            }
        ],
        "layout": {
            "margin": {"l": 60, "r": 20, "t": 10, "b": 30},
            "height": 300,
            "yaxis": {"title": {"text": currency_symbol(account.currency)}},
        },
    }
    return render(
        request,
        "trading/portfolio.html",
        {
            "account": account,
            "state": state,
            "open_positions": open_positions,
            "closed_positions": selectors_book.closed_positions(account),
            "unrealised": sum((p.unrealised_pnl for p in open_positions), start=0),
            "chart": figure if curve else None,
            "can_close": request.user.has_perm("trading.approve_thesis") and account.pk == live.pk,
            "accounts": accounts,
        },
        status=status,
    )


@require_POST
def position_close(request: HttpRequest, position_id: int) -> HttpResponse:
    position = get_object_or_404(Position.objects.select_related("instrument"), pk=position_id)
    try:
        comment = request.POST.get("comment", "")
        try:
            edge.check_comment(comment.strip(), "reason")
        except edge.InputInvalid as problem:
            raise BrokerError(str(problem)) from None  # refused like any close: nothing changes
        closed = position_close_by_hand(position=position, user=request.user, comment=comment)
    except BrokerError as error:
        if not request.user.has_perm("trading.approve_thesis"):
            return HttpResponse(f"Refused: {error.reason}.", status=403)
        messages.error(request, f"Refused: {error.reason}.")
    else:
        messages.success(
            request, f"Closed {closed.instrument.symbol} at {closed.exit_price}: PnL {closed.realised_pnl}."
        )
    return redirect("portfolio")


def strategy_list(request: HttpRequest) -> HttpResponse:
    strategies = Strategy.objects.prefetch_related("universe").order_by("name")
    runs = (
        StrategyRun.objects.select_related("strategy")
        .annotate(pipeline_count=Count("pipeline_runs"))
        .order_by("-as_of", "-id")[:100]
    )
    return render(
        request,
        "trading/strategies.html",
        {"strategies": strategies, "runs": runs, "can_start": request.user.has_perm("trading.start_run")},
    )


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def strategy_start(request: HttpRequest, strategy_id: int) -> HttpResponse:
    strategy = get_object_or_404(Strategy, pk=strategy_id)
    try:
        strategy_run = strategy_run_start(strategy=strategy, user=request.user)
    except ValueError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"{strategy.name}: run of {strategy_run.as_of:%d %b %Y} started.")
    return redirect("strategy_list")
