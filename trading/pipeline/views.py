from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.contrib.humanize.templatetags.humanize import intcomma
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from agents.clients import PROVIDERS, provider_unavailable, providers_available
from agents.recording import run_totals
from trading.models import Instrument, PipelineRun, Thesis
from trading.pipeline import export, presenters, selectors, serializers
from trading.pipeline.forms import RunStartForm
from trading.pipeline.start import pipeline_runs_start
from trading.refusals import refused
from vocabulary.refusals import Refusal


def _start_form_context(request: HttpRequest, form: RunStartForm | None = None) -> dict:
    """The run form, blank or as the person sent it (a refused form keeps every value typed and
    ticked, with each field's problem next to it). Only the providers a run may use here are
    offered; the others are named with why (no key, no address, no price)."""
    form = form or RunStartForm()
    offered = providers_available()
    asked = (form["provider"].value() if form.is_bound else "") or settings.LLM["PROVIDER"]
    return {
        "instruments": Instrument.objects.filter(is_active=True).order_by("symbol"),
        "providers": offered,
        "providers_missing": [(name, provider_unavailable(name)) for name in PROVIDERS if name not in offered],
        "default_provider": asked if asked in offered else (offered[0] if offered else ""),
        "can_start": request.user.has_perm("trading.start_run"),
        "start_form": form,
        "chosen_symbols": form.chosen_symbols(),
    }


def _list_context(request: HttpRequest) -> tuple[dict, list[str]]:
    """The runs list as the query string narrows it: a page of rows, the total, page links that
    keep the filters, and the values refused (each to be said; the rest apply)."""
    filters = selectors.RunFilters.from_query(request.GET)
    number, page_problem = selectors.page_number(request.GET.get("page"))
    problems = [f"{problem}; not applied" for problem in (*filters.problems, page_problem) if problem]
    page, rows = selectors.run_page(filters, number)
    kept = filters.query()
    context = {
        "runs": rows,
        "page": page,
        "filters": filters,
        "filter_query": urlencode(kept),
        "live_url": f"{reverse('run_list_rows')}?{urlencode({**kept, 'page': str(page.number)})}",
        "strategies": selectors.strategy_choices(),
        "statuses": selectors.STATUSES,
        "with_replays": filters.kind != "live",
    }
    return context, problems


def _runs_page(request: HttpRequest, *, form: RunStartForm | None = None, status: int = 200) -> HttpResponse:
    """The runs list with the run form (blank, or as the person sent it when it was refused)."""
    listed, problems = _list_context(request)
    for problem in problems:
        messages.error(request, f"{problem}.")
    context = {**listed, **_start_form_context(request, form)}
    return render(request, "trading/runs.html", context, status=400 if problems else status)


def run_list(request: HttpRequest) -> HttpResponse:
    """Live runs, a page at a time, narrowed by ``kind`` (live, replay, all; ``?replay=1`` is all),
    ``strategy``, ``status`` and ``symbol``. A refused value is said, with a 400, and left out."""
    return _runs_page(request)


def run_list_rows(request: HttpRequest) -> JsonResponse:
    """The runs list's page as JSON, for the page's live updates (static/js/runs.js): the same
    filters and page, each run with what its row shows."""
    listed, problems = _list_context(request)
    page = listed["page"]
    body = {
        "total": page.paginator.count,
        "total_label": intcomma(page.paginator.count),
        "page": page.number,
        "pages": page.paginator.num_pages,
        "runs": [serializers.run_row_json(row) for row in listed["runs"]],
        "problems": problems,
    }
    return JsonResponse(body, status=400 if problems else 200)


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def run_start(request: HttpRequest) -> HttpResponse:
    """Start runs from the form. A refused form comes back (400) with each problem next to its field,
    in the API's words, and nothing created; the runs saved while the queue is down are said so."""
    form = RunStartForm(request.POST)
    checked = form.checked if form.is_valid() else None  # a valid form has its checked request
    if checked is None:
        return _runs_page(request, form=form, status=400)
    try:
        runs = pipeline_runs_start(
            instruments=checked.instruments, as_of=checked.as_of, provider=checked.provider, user=request.user
        )
    except Refusal as refusal:  # RunsNotQueued: the runs are saved and start when the queue is back
        return refused(request, refusal, redirect("run_list"))
    messages.success(
        request, f"Queued {len(runs)} run(s) as of {runs[0].as_of:%d %b %Y} with the {checked.provider} model."
    )
    if len(runs) == 1:
        return redirect("run_detail", run_id=runs[0].pk)
    return redirect("run_list")


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run page: its stages from the typed outputs, with what code flagged in its evidence."""
    run = get_object_or_404(PipelineRun.objects.select_related("instrument"), pk=run_id)
    context = {"run": run, **presenters.run_context(run, run_totals(run))}
    template = "trading/_run_body.html" if request.GET.get("fragment") else "trading/run.html"
    return render(request, template, context)


def _markdown(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def run_report(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run as a Markdown report to download: every stage, the evidence, the decision."""
    run = get_object_or_404(PipelineRun.objects.select_related("instrument", "strategy_run__strategy"), pk=run_id)
    return _markdown(export.run_report(run), export.report_filename("run", run.pk, run.instrument.symbol))


def thesis_report(request: HttpRequest, thesis_id: int) -> HttpResponse:
    """The thesis as a Markdown report: its decision and what came of it, then its run."""
    thesis = get_object_or_404(
        Thesis.objects.select_related("instrument", "decided_by", "run__instrument", "run__strategy_run__strategy"),
        pk=thesis_id,
    )
    return _markdown(
        export.thesis_report(thesis), export.report_filename("thesis", thesis.pk, thesis.instrument.symbol)
    )
