"""The research pages: sessions and the form that starts one, a session watched live (its trials,
folds, the DSR against the number of trials, the PBO, the shortlist scored on the holdout), the
candidates' config files, and the desk signals a person attaches or detaches.

Views only parse, call a service and render: the session's checks are ``research.services``'s, the
attachment's ``research.attach``'s, the figures the session's. A refusal comes back as a message on
the page (a permission refusal as a 403).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from research import attach, presenters, services
from research.models import ResearchCandidate, ResearchSession
from research.signals import SIGNALS
from research.start import can_run, defaults, form_request, session_start
from trading.models.market import Instrument
from trading.refusals import refusal_sentence, refused
from vocabulary.refusals import InputRefused, NotAllowed, Refusal

SESSIONS_SHOWN = 50


# --- the pages ----------------------------------------------------------------------------------


def _list_context(request: HttpRequest, *, form: Any = None, problems: Any = None) -> dict[str, Any]:
    return {
        "sessions": ResearchSession.objects.select_related("created_by")[:SESSIONS_SHOWN],
        "can_run": can_run(request.user),
        "can_attach": attach.can_attach(request.user),
        "signals": presenters.attached_signals(),
        "instruments": Instrument.objects.filter(is_active=True).order_by("symbol").values_list("symbol", flat=True),
        "strategies": sorted(SIGNALS),
        "proposers": services.PROPOSERS,
        "providers": services.LLM_PROVIDERS,
        "form": form or {},
        "chosen_symbols": set(form.getlist("symbols")) if form is not None and hasattr(form, "getlist") else set(),
        "problems": problems or {},
        "defaults": defaults(),
        "here": "research",
    }


def session_list(request: HttpRequest) -> HttpResponse:
    """Any desk user reads it; approvers and admins also see the start form and the detach buttons."""
    if request.method == "POST":
        return _start(request)
    return render(request, "research/sessions.html", _list_context(request))


def _start(request: HttpRequest) -> HttpResponse:
    try:
        if not can_run(request.user):  # before reading the values: a viewer is told no, not what to fix
            raise NotAllowed("starting a research session needs the approver or admin role")
        session = session_start(params=form_request(request.POST), user=request.user)
    except Refusal as refusal:
        if isinstance(refusal, NotAllowed):
            return refused(request, refusal, redirect("research_sessions"))
        messages.error(request, refusal_sentence(refusal))
        context = _list_context(request, form=request.POST, problems=refusal.details)
        return render(request, "research/sessions.html", context, status=400)
    messages.success(request, f"Research session {session.pk} queued.")
    return redirect("research_session", session_id=session.pk)


def _session_context(request: HttpRequest, session: ResearchSession) -> dict[str, Any]:
    rows = presenters.trial_rows(session)
    candidates = presenters.candidates_of(session)
    return {
        "session": session,
        "rows": rows,
        "last_number": rows[-1].trial.number if rows else 0,
        "finished": session.status in presenters.FINISHED,
        "charts": presenters.session_charts(session, rows),
        **presenters.data_texts(session),
        "candidates": candidates,
        "signals": presenters.attached_signals(candidate_ids=[candidate.pk for candidate in candidates]),
        "strategies": attach.attachable_strategies() if candidates and attach.can_attach(request.user) else [],
        "can_attach": attach.can_attach(request.user),
        "can_run": can_run(request.user),
        "here": "research",
    }


def _whole(text: str) -> int | None:
    """A row id typed or posted: ASCII digits that fit a database integer, else None."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _session(session_id: int) -> ResearchSession:
    return get_object_or_404(ResearchSession.objects.select_related("created_by", "incumbent"), pk=session_id)


@require_GET
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _session(session_id)
    return render(request, "research/session.html", _session_context(request, session))


@require_GET
def session_live(request: HttpRequest, session_id: int) -> JsonResponse:
    """What the session page polls: the status, the trials numbered above ``?after=``, rendered as
    table rows, and both charts' figures (small: one point per trial or fold)."""
    session = get_object_or_404(ResearchSession, pk=session_id)
    after_text = request.GET.get("after", "0")
    after = _whole(after_text) or 0
    rows = presenters.trial_rows(session)
    new_rows = [row for row in rows if row.trial.number > after]
    html = "".join(render_to_string("research/_trial_row.html", {"row": row}, request=request) for row in new_rows)
    return JsonResponse(
        {
            "status": session.status,
            "finished": session.status in presenters.FINISHED,
            "n_trials": session.n_trials,
            "tokens_used": session.tokens_used,
            "stop_reason": session.stop_reason,
            "error": session.error,
            "last_number": rows[-1].trial.number if rows else after,
            "rows": html,
            **presenters.data_texts(session),
            "charts": presenters.session_charts(session, rows),
        }
    )


@require_GET
def session_results(request: HttpRequest, session_id: int) -> HttpResponse:
    """The results block (PBO, shortlist, desk signals), fetched by the page when the session ends."""
    session = _session(session_id)
    return render(request, "research/_results.html", _session_context(request, session))


@require_POST
def session_cancel(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _session(session_id)
    back = redirect("research_session", session_id=session.pk)
    try:
        if not can_run(request.user):
            raise NotAllowed("cancelling a research session needs the approver or admin role")
        services.session_cancel(session, user=request.user)
    except Refusal as refusal:
        return refused(request, refusal, back)
    messages.success(request, f"Research session {session.pk} cancelled.")
    return back


@require_GET
def candidate_config(request: HttpRequest, candidate_id: int) -> HttpResponse:
    """The candidate's config file (parameters and provenance), as a JSON download."""
    candidate = get_object_or_404(ResearchCandidate, pk=candidate_id)
    filename, body = presenters.config_file(candidate)
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- the desk attachment ------------------------------------------------------------------------


@require_POST
def candidate_attach(request: HttpRequest, candidate_id: int) -> HttpResponse:
    candidate = get_object_or_404(ResearchCandidate.objects.select_related("trial", "session"), pk=candidate_id)
    back = redirect("research_session", session_id=candidate.session_id)
    try:
        strategy_text = request.POST.get("strategy", "").strip()
        strategy_id = _whole(strategy_text)
        if strategy_id is None:
            raise InputRefused("choose the strategy to attach the signal to", {"strategy": ["choose a strategy"]})
        signal = attach.signal_attach(
            candidate=candidate,
            strategy_id=strategy_id,
            user=request.user,
            reason=request.POST.get("reason", ""),
        )
    except Refusal as refusal:
        return refused(request, refusal, back)
    messages.success(
        request, f"{signal.name} attached to {signal.strategy.name}: its analysts read it from the next run"
    )
    return back


@require_POST
def signal_detach(request: HttpRequest, signal_id: int) -> HttpResponse:
    """One click: from the next run on, the strategy's analysts no longer read the signal."""
    back = _back(request)
    try:
        signal = attach.signal_detach(signal_id=signal_id, user=request.user, reason=request.POST.get("reason", ""))
    except Refusal as refusal:
        return refused(request, refusal, back)
    messages.success(request, f"{signal.name} detached from {signal.strategy.name}.")
    return back


def _back(request: HttpRequest) -> HttpResponse:
    """Back to the page the button was on: a session page, the sessions list, or the strategies."""
    target = request.POST.get("next", "")
    session_id = _whole(target.removeprefix("session:")) if target.startswith("session:") else None
    if session_id is not None:
        return redirect("research_session", session_id=session_id)
    if target == "strategies":
        return redirect("strategy_list")
    return redirect("research_sessions")
