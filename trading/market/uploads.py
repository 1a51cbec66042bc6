"""Files uploaded in the browser: checked first, imported only when a person confirms, exactly once.

``upload_check`` keeps the file under the desk's data directory (``MARKET_DATA["UPLOAD_DIR"]``),
runs the importer's dry run over it and stores the report on a ``DataUpload``. ``upload_confirm``
claims the checked upload (a conditional update: a double click or two people confirming import it
once), re-checks the stored file's SHA-256 against the one checked, and imports it for real in the
same transaction: all of the file or nothing, and if the import now finds a problem (a bar stored
since the check) the claim is undone with it and the new report kept. ``upload_discard`` drops a
checked upload and its file. Every step is audited.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from trading.audit import audit_record
from trading.market.domain.file_formats import FORMATS
from trading.market.imports import (
    BarOptions,
    ImportFileError,
    ImportReport,
    import_bars,
    import_fundamentals,
    import_instruments,
    import_news,
    market_data_settings,
)
from trading.models import DataUpload
from vocabulary.refusals import InputRefused, StateConflict

KINDS = ("instruments", "bars", "news", "fundamentals")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class UploadOptions:
    """What the person chose next to the file (bars only: format, series, symbol, create missing)."""

    kind: str
    file_format: str = ""  # "" = told from the header
    series: str = "EQ"
    symbol: str = ""
    create_missing: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.file_format,
            "series": self.series,
            "symbol": self.symbol,
            "create_missing": self.create_missing,
        }

    @classmethod
    def from_dict(cls, kind: str, data: dict[str, Any]) -> UploadOptions:
        return cls(
            kind=kind,
            file_format=str(data.get("format", "")),
            series=str(data.get("series", "EQ")),
            symbol=str(data.get("symbol", "")),
            create_missing=bool(data.get("create_missing", False)),
        )


def upload_dir() -> Path:
    directory = market_data_settings().upload_dir
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory


def _importer(options: UploadOptions) -> Callable[..., ImportReport]:
    if options.kind == "bars":
        series = frozenset(part.strip().upper() for part in options.series.split(",") if part.strip())
        bar_options = BarOptions(
            file_format=options.file_format or None,
            series=series or frozenset({"EQ"}),
            symbol=options.symbol.strip(),
            create_missing=options.create_missing,
        )
        return lambda path, **kw: import_bars(path, options=bar_options, **kw)
    return {"instruments": import_instruments, "news": import_news, "fundamentals": import_fundamentals}[options.kind]


def _check_options(options: UploadOptions, filename: str) -> None:
    if options.kind not in KINDS:
        raise InputRefused(f"{options.kind!r} is not a kind of data the desk imports ({', '.join(KINDS)})")
    if options.file_format and options.file_format not in FORMATS:
        raise InputRefused(f"{options.file_format!r} is not a file format ({', '.join(FORMATS)})")
    if not filename:
        raise InputRefused("choose a file to upload")


def _digest(chunks: Iterable[bytes], target: Path) -> str:
    sha = hashlib.sha256()
    with target.open("wb") as handle:
        for chunk in chunks:
            sha.update(chunk)
            handle.write(chunk)
    return sha.hexdigest()


def _file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


def _run(options: UploadOptions, path: Path, *, dry_run: bool, filename: str, actor: Any) -> ImportReport:
    try:
        report = _importer(options)(path, dry_run=dry_run, actor_label=f"upload {filename}", actor=actor)
    except ImportFileError as error:
        # The stored path means nothing to the person: name the file they uploaded.
        report = ImportReport(path=filename, kind=options.kind, dry_run=dry_run)
        message = str(error).replace(f"{path}:", "", 1).replace(str(path), filename)
        line, _, reason = message.partition(": ")
        if line.isdigit():
            report.add_problem(int(line), reason)
        else:
            report.add_problem(0, message.strip())
    report.path = filename
    return report


def _report_json(report: ImportReport) -> dict[str, Any]:
    data = report.as_dict()
    data["problems"] = [
        {"line": p["line"], "reason": p["reason"], "text": f"{report.path}:{p['line']}: {p['reason']}"}
        for p in data["problems"]
    ]
    return data


def upload_check(*, user: Any, filename: str, chunks: Iterable[bytes], size: int, options: UploadOptions) -> DataUpload:
    """Keep the file, dry-run it, store the report. Nothing of the file reaches the desk's data."""
    _check_options(options, filename)
    limit_mb = market_data_settings().upload_max_mb
    if size > limit_mb * 1024 * 1024:
        raise InputRefused(f"the file is {size / 1024 / 1024:.1f} MB; uploads are limited to {limit_mb} MB")
    shown = Path(filename).name[:255] or "upload.csv"
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S%f")
    target = upload_dir() / f"{stamp}-{_SAFE_NAME.sub('_', shown)[:120]}"
    sha256 = _digest(chunks, target)
    report = _run(options, target, dry_run=True, filename=shown, actor=user)
    upload = DataUpload.objects.create(
        kind=options.kind,
        file_format=report.file_format if options.kind == "bars" else "desk",
        filename=shown,
        stored_path=str(target),
        sha256=sha256,
        report={**_report_json(report), "options": options.as_dict(), "size": size},
        ok=report.ok,
        created_by=user,
    )
    audit_record(
        actor=user,
        action="upload_checked",
        target=f"upload {upload.pk}: {shown}",
        details={"kind": options.kind, "ok": report.ok, "rows": report.rows_read, "sha256": sha256},
    )
    return upload


def upload_confirm(*, user: Any, upload_id: int) -> DataUpload:
    """Import a checked upload, once. Refused (nothing changed) when it was already imported or
    discarded, when its check found problems, or when the stored file is not the one checked."""
    with transaction.atomic():
        upload = DataUpload.objects.select_for_update().filter(pk=upload_id).first()
        if upload is None:
            raise InputRefused(f"there is no upload {upload_id}")
        if upload.status != DataUpload.Status.CHECKED:
            raise StateConflict(f"upload {upload_id} was already {upload.status}")
        if not upload.ok:
            raise StateConflict(f"upload {upload_id} has problems; fix the file and upload it again")
        claimed = DataUpload.objects.filter(pk=upload.pk, status=DataUpload.Status.CHECKED).update(
            status=DataUpload.Status.IMPORTED, imported_at=timezone.now()
        )
        if claimed != 1:
            raise StateConflict(f"upload {upload_id} was already imported or discarded")
        path = Path(upload.stored_path)
        if not path.is_file() or _file_digest(path) != upload.sha256:
            raise StateConflict(f"the stored file of upload {upload_id} is missing or changed since it was checked")
        options = UploadOptions.from_dict(upload.kind, upload.report.get("options", {}))
        report = _run(options, path, dry_run=False, filename=upload.filename, actor=user)
        if not report.ok:
            transaction.set_rollback(True)
    if not report.ok:
        # The claim was rolled back with the import; keep what the import found this time.
        DataUpload.objects.filter(pk=upload.pk).update(
            ok=False, report={**_report_json(report), "options": options.as_dict()}
        )
        raise StateConflict(
            f"upload {upload_id} no longer imports cleanly ({report.summary()}); nothing was written",
            {"problems": report.problem_lines()[:20]},
        )
    DataUpload.objects.filter(pk=upload.pk).update(report={**upload.report, "imported": _report_json(report)})
    audit_record(
        actor=user,
        action="upload_imported",
        target=f"upload {upload.pk}: {upload.filename}",
        details={"kind": upload.kind, "written": report.written, "sha256": upload.sha256},
    )
    upload.refresh_from_db()
    return upload


def upload_discard(*, user: Any, upload_id: int) -> DataUpload:
    """Drop a checked upload and its stored file; an imported one stays (it is the record)."""
    discarded = DataUpload.objects.filter(pk=upload_id, status=DataUpload.Status.CHECKED).update(
        status=DataUpload.Status.DISCARDED
    )
    upload = DataUpload.objects.filter(pk=upload_id).first()
    if upload is None:
        raise InputRefused(f"there is no upload {upload_id}")
    if discarded != 1:
        raise StateConflict(f"upload {upload_id} was already {upload.status}")
    Path(upload.stored_path).unlink(missing_ok=True)
    audit_record(actor=user, action="upload_discarded", target=f"upload {upload.pk}: {upload.filename}")
    return upload
