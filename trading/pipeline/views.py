from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from agents.clients import PROVIDERS
from agents.recording import run_totals
from trading import edge
from trading.models import Instrument, PipelineRun
from trading.pipeline import presenters, selectors
from trading.pipeline.forms import RunStartForm
from trading.pipeline.start import pipeline_runs_start
from trading.refusals import refused
from vocabulary.refusals import Refusal


def _start_form_context(request: HttpRequest, form: RunStartForm | None = None) -> dict:
    """The run form, blank or as the person sent it (a refused form keeps every value typed and
    ticked, with each field's problem next to it)."""
    form = form or RunStartForm()
    return {
        "instruments": Instrument.objects.filter(is_active=True).order_by("symbol"),
        "providers": PROVIDERS,
        "default_provider": (form["provider"].value() if form.is_bound else "") or settings.LLM["PROVIDER"],
        "can_start": request.user.has_perm("trading.start_run"),
        "start_form": form,
        "chosen_symbols": form.chosen_symbols(),
    }


def _runs_page(
    request: HttpRequest, *, with_replays: bool, form: RunStartForm | None = None, status: int = 200
) -> HttpResponse:
    """The runs list with the run form (blank, or as the person sent it when it was refused)."""
    runs = selectors.run_rows(with_replays=with_replays)
    context = {"runs": runs, "with_replays": with_replays, **_start_form_context(request, form)}
    return render(request, "trading/runs.html", context, status=status)


def run_list(request: HttpRequest) -> HttpResponse:
    """Live runs; ``?replay=1`` adds the runs of history replays (badged in the table).
    ``?replay=`` must be a flag: anything else shows the live runs with the reason, as a 400."""
    try:
        with_replays = edge.parse_flag(request.GET.get("replay"), "replay")
    except edge.InputInvalid as problem:
        messages.error(request, f"{problem}; showing live runs.")
        return _runs_page(request, with_replays=False, status=400)
    return _runs_page(request, with_replays=with_replays)


@require_POST
@permission_required("trading.start_run", raise_exception=True)
def run_start(request: HttpRequest) -> HttpResponse:
    """Start runs from the form. A refused form comes back (400) with each problem next to its field,
    in the API's words, and nothing created; the runs saved while the queue is down are said so."""
    form = RunStartForm(request.POST)
    checked = form.checked if form.is_valid() else None  # a valid form has its checked request
    if checked is None:
        return _runs_page(request, with_replays=False, form=form, status=400)
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
