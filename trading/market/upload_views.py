"""The browser's upload page: pick a file, read the dry run's report, confirm or discard.

Only people allowed to import market data (``trading.import_market_data``) see or use it; anyone
else gets a 403. The work is in ``trading.market.uploads``; these views only read the form and
answer a refusal as every page does (``trading.refusals``).
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from trading.market import uploads
from trading.market.domain.file_formats import FORMATS
from trading.models import DataUpload
from trading.refusals import refused
from vocabulary.refusals import Refusal

PERMISSION = "trading.import_market_data"
RECENT_UPLOADS = 20


def _may_import(view: Any) -> Any:
    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.has_perm(PERMISSION):
            raise PermissionDenied("only people who may import market data can upload files")
        return view(request, *args, **kwargs)

    return guarded


def _form_options(request: HttpRequest) -> uploads.UploadOptions:
    return uploads.UploadOptions(
        kind=request.POST.get("kind", "").strip(),
        file_format=request.POST.get("format", "").strip(),
        series=request.POST.get("series", "EQ").strip() or "EQ",
        symbol=request.POST.get("symbol", "").strip()[:64],
        create_missing=request.POST.get("create_missing") == "on",
    )


@_may_import
@require_http_methods(["GET", "POST"])
def upload_page(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        options = _form_options(request)
        upload_file = request.FILES.get("file")
        try:
            upload = uploads.upload_check(
                user=request.user,
                filename=(upload_file.name or "") if upload_file else "",
                chunks=upload_file.chunks() if upload_file else iter(()),
                size=(upload_file.size or 0) if upload_file else 0,
                options=options,
            )
        except Refusal as refusal:
            return refused(request, refusal, redirect("data_upload"))
        return redirect("data_upload_detail", upload_id=upload.pk)
    return render(
        request,
        "trading/upload.html",
        {
            "uploads": DataUpload.objects.select_related("created_by")[:RECENT_UPLOADS],
            "kinds": uploads.KINDS,
            "formats": FORMATS,
        },
    )


@_may_import
def upload_detail(request: HttpRequest, upload_id: int) -> HttpResponse:
    upload = get_object_or_404(DataUpload.objects.select_related("created_by"), pk=upload_id)
    return render(
        request,
        "trading/upload_detail.html",
        {
            "upload": upload,
            "report": upload.report,
            "imported": upload.report.get("imported"),
            "can_confirm": upload.status == DataUpload.Status.CHECKED and upload.ok,
            "can_discard": upload.status == DataUpload.Status.CHECKED,
        },
    )


@_may_import
@require_POST
def upload_confirm(request: HttpRequest, upload_id: int) -> HttpResponse:
    back = redirect("data_upload_detail", upload_id=upload_id)
    try:
        upload = uploads.upload_confirm(user=request.user, upload_id=upload_id)
    except Refusal as refusal:
        return refused(request, refusal, back)
    written = (upload.report.get("imported") or {}).get("written", 0)
    messages.success(request, f"Imported {upload.filename}: {written} row(s) written.")
    return back


@_may_import
@require_POST
def upload_discard(request: HttpRequest, upload_id: int) -> HttpResponse:
    try:
        upload = uploads.upload_discard(user=request.user, upload_id=upload_id)
    except Refusal as refusal:
        return refused(request, refusal, redirect("data_upload_detail", upload_id=upload_id))
    messages.success(request, f"Discarded {upload.filename}; nothing was imported.")
    return redirect("data_upload")
