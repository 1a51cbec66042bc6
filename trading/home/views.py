"""The home page (what needs a person now), its JSON for the page's live refresh, and the
notifications pages."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, cast

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from trading.health.probes import health_report
from trading.home import notifications, selectors
from trading.home.selectors import HomeState
from trading.market.selectors import stale_exchanges
from trading.models import Notification
from trading.refusals import refused
from vocabulary.money import format_money
from vocabulary.refusals import Refusal

if TYPE_CHECKING:
    from django.contrib.auth.models import User

NOTIFICATIONS_PER_PAGE = 50


def _person(request: HttpRequest) -> User:
    """The signed-in person (the desk's login middleware lets no one else reach these views)."""
    return cast("User", request.user)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    state = selectors.home_state()
    return render(
        request,
        "home/home.html",
        {
            "state": state,
            # The strip agrees with the health page: stale bars make the desk "degraded" here too
            # (the freshness the page already read, not a second read).
            "health": health_report(market_data=lambda _now: state.stale),
            "can_decide": request.user.has_perm(selectors.APPROVE_PERMISSION),
        },
    )


def _sign(value: Decimal) -> int:
    return (value > 0) - (value < 0)


def _figures(state: HomeState, request: HttpRequest) -> dict[str, object]:
    """The figures the page refreshes, formatted as the page prints them (the JSON is for the
    page's script, which only sets text)."""
    pnl, currency = state.pnl, state.pnl.currency
    today = pnl.today
    return {
        "at": timezone.localtime().strftime("%H:%M:%S"),
        "pending_count": state.pending_count,
        "pending": [
            {
                "label": f"{thesis.direction} {thesis.instrument.symbol}",
                "conviction": f"{thesis.conviction:.2f}",
                "at_risk": format_money(thesis.risk_amount, thesis.account.currency),
                "link": reverse("thesis_detail", args=[thesis.pk]),
            }
            for thesis in state.pending
        ],
        "pnl_total": format_money(pnl.total, currency),
        "pnl_total_sign": _sign(pnl.total),
        "pnl_realised": format_money(pnl.realised, currency),
        "pnl_unrealised": format_money(pnl.unrealised, currency),
        "pnl_today": format_money(today.change, currency) if today else "—",
        "pnl_today_sign": _sign(today.change) if today else 0,
        "open_count": state.open_count,
        "working_count": state.working_count,
        "running_count": state.running_count,
        "failed_count": state.failed_count,
        "stale": [verdict.text for verdict in state.stale],
        "nav": {
            "pending": state.pending_count if request.user.has_perm(selectors.APPROVE_PERMISSION) else None,
            "unread": Notification.objects.filter(user=_person(request), read_at__isnull=True).count(),
        },
    }


@require_GET
def health(request: HttpRequest) -> HttpResponse:
    """Every moving part's check, and the market data's freshness on the exchange calendar (the page
    only: the anonymous probe leaves it out)."""
    report = health_report(market_data=stale_exchanges)
    return render(request, "trading/health.html", {"health": report}, status=report.http_status)


@require_GET
def home_figures(request: HttpRequest) -> JsonResponse:
    response = JsonResponse(_figures(selectors.home_state(), request))
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def notification_list(request: HttpRequest) -> HttpResponse:
    person = _person(request)
    mine = Notification.objects.filter(user=person).order_by("-created_at", "-id")
    page = Paginator(mine, NOTIFICATIONS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "home/notifications.html",
        {
            "page": page,
            "unread": mine.filter(read_at__isnull=True).count(),
            "kinds": Notification.Kind.choices,
            "email_kinds": notifications.email_kinds_of(person),
            "has_email": bool(person.email),
        },
    )


def _back(request: HttpRequest) -> HttpResponse:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect("notification_list")


@require_POST
def notification_read(request: HttpRequest, notification_id: int) -> HttpResponse:
    """Mark one read. Someone else's notification is answered as if it did not exist."""
    notifications.notification_mark_read(user=_person(request), notification_id=notification_id)
    return _back(request)


@require_POST
def notification_read_all(request: HttpRequest) -> HttpResponse:
    count = notifications.notifications_mark_all_read(user=_person(request))
    messages.success(request, f"{count} notification{'s' if count != 1 else ''} marked read.")
    return _back(request)


@require_POST
def notification_preferences(request: HttpRequest) -> HttpResponse:
    person = _person(request)
    try:
        preference = notifications.notification_preference_set(
            user=person, email_kinds=request.POST.getlist("email_kinds")
        )
    except Refusal as refusal:
        return refused(request, refusal, redirect("notification_list"))
    labels = dict(Notification.Kind.choices)
    chosen = ", ".join(str(labels[kind]) for kind in preference.email_kinds) or "none"
    note = "" if person.email else " You have no e-mail address on your account, so none will be sent."
    messages.success(request, f"E-mail for: {chosen}.{note}")
    return redirect("notification_list")
