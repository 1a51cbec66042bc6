"""The critique archive on disk: one ``critique_run_NNN.json`` per critique, one folder per strategy.

The database holds every critique; the archive is the same record as files a person (or another
tool) can read without the desk: under ``CRITIQUE["ARCHIVE_DIR"]``, a folder per strategy named by
its id and a slug of its name (``7-momentum-large-caps``; a replay's critiques in its ``replay``
subfolder, numbered apart), a file per critique named by its sequence number. Each file carries
its metadata (the strategy's id and name, the sequence number, the strategy's run count and the
as-of date) with the critique itself: severity, diagnosis, the directive, actions, findings,
escalations, trajectory, grounding and the evidence pack.

A file is written atomically: into a temporary file in the same folder, flushed and fsynced, then
renamed over the final name (``os.replace``, atomic on one filesystem). A crash mid-write leaves
the previous file intact and no partial one under the final name; the temporary file is removed
when the write fails in-process. Writing the same critique again replaces its file, so a retried
critique archives once.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.text import slugify

from reviews.models import Critique
from trading.models import Strategy

__all__ = [
    "ARCHIVE_FORMAT",
    "archive_clear",
    "archive_critique",
    "archive_document",
    "archive_file",
    "read_archive",
    "strategy_folder",
    "write_json_atomic",
]

ARCHIVE_FORMAT = 1
REPLAY_FOLDER = "replay"
FILE_PATTERN = "critique_run_*.json"


def _root() -> Path:
    return Path(str(settings.CRITIQUE["ARCHIVE_DIR"]))


def strategy_folder(strategy: Strategy, *, is_replay: bool) -> Path:
    """``<ARCHIVE_DIR>/<id>-<slug>[/replay]``: the id keeps it unique, the slug readable."""
    slug = slugify(strategy.name)[:60]
    folder = _root() / (f"{strategy.pk}-{slug}" if slug else str(strategy.pk))
    return folder / REPLAY_FOLDER if is_replay else folder


def archive_file(critique: Critique) -> Path:
    return (
        strategy_folder(critique.strategy, is_replay=critique.is_replay) / f"critique_run_{critique.sequence:03d}.json"
    )


def _actions(critique: Critique) -> list[dict[str, Any]]:
    return [
        {
            "id": action.pk,
            "number": action.number,
            "kind": action.kind,
            "text": action.text,
            "params": action.params,
            "status": action.status,
        }
        for action in critique.actions.order_by("number")
    ]


def archive_document(critique: Critique) -> dict[str, Any]:
    """The archived record of ``critique``: metadata first, then the critique as stored."""
    strategy = critique.strategy
    return {
        "format": ARCHIVE_FORMAT,
        "strategy": {"id": strategy.pk, "name": strategy.name},
        "sequence": critique.sequence,
        "run_count": critique.run_count,
        "date": critique.as_of.isoformat(),
        "is_replay": critique.is_replay,
        "critique_id": critique.pk,
        "strategy_run_id": critique.strategy_run_id,
        "archived_at": timezone.now().isoformat(),
        "status": critique.status,
        "severity": critique.severity,
        "diagnosis": critique.diagnosis,
        "directive": critique.directive,
        "actions": _actions(critique),
        "findings": critique.findings,
        "escalations": critique.escalations,
        "trajectory": critique.trajectory,
        "grounding": critique.grounding,
        "model_used": critique.model_used,
        "trigger": critique.trigger,
        "evidence": critique.evidence,
    }


def write_json_atomic(path: Path, document: Any) -> Path:
    """Write ``document`` as JSON to ``path`` atomically (see the module)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(document, stream, indent=2, sort_keys=True, ensure_ascii=False, default=str)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_folder(path.parent)
    return path


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the platform lets a folder be fsynced)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def archive_critique(critique: Critique) -> Path:
    """Write ``critique``'s file (replacing an earlier write of the same critique); its path."""
    return write_json_atomic(archive_file(critique), archive_document(critique))


def read_archive(strategy: Strategy, *, is_replay: bool = False) -> list[dict[str, Any]]:
    """Every archived critique of ``strategy`` (live or replay), by sequence number. Also finds the
    folder of a strategy renamed since (``<id>-<old slug>``)."""
    documents: dict[int, dict[str, Any]] = {}
    for folder in _folders(strategy, is_replay=is_replay):
        for file in sorted(folder.glob(FILE_PATTERN)):
            document = json.loads(file.read_text(encoding="utf-8"))
            documents.setdefault(int(document["sequence"]), document)
    return [documents[sequence] for sequence in sorted(documents)]


def _folders(strategy: Strategy, *, is_replay: bool) -> list[Path]:
    current = strategy_folder(strategy, is_replay=is_replay)
    root = _root()
    others = [*sorted(root.glob(f"{strategy.pk}-*")), root / str(strategy.pk)] if root.is_dir() else []
    candidates = [current, *(folder / REPLAY_FOLDER if is_replay else folder for folder in others)]
    return [folder for folder in dict.fromkeys(candidates) if folder.is_dir()]


def archive_clear(strategy: Strategy, *, is_replay: bool) -> int:
    """Remove the strategy's archived critique files (a replay starting again numbers its critiques
    from 1, and a stale file of the last replay must not read as one of the new). Returns how many."""
    removed = 0
    for folder in _folders(strategy, is_replay=is_replay):
        for file in folder.glob(FILE_PATTERN):
            file.unlink(missing_ok=True)
            removed += 1
    return removed
