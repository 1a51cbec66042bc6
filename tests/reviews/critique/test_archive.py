"""The critique archive: critique_run_NNN.json per strategy, round-trips, and a crash mid-write leaves
the previous file intact and no partial file behind."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from reviews.critique import archive
from reviews.critique.archive import (
    archive_clear,
    archive_critique,
    archive_file,
    read_archive,
    strategy_folder,
    write_json_atomic,
)
from reviews.models import Critique, CritiqueAction
from trading.models import Strategy

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def archive_dir(settings, tmp_path):
    settings.CRITIQUE = {**settings.CRITIQUE, "ARCHIVE_DIR": str(tmp_path / "critiques")}
    return tmp_path / "critiques"


def critique(strategy: Strategy, sequence: int, *, is_replay: bool = False, diagnosis: str = "Fine.") -> Critique:
    row = Critique.objects.create(
        strategy=strategy,
        is_replay=is_replay,
        sequence=sequence,
        run_count=10 + sequence,
        as_of=dt.date(2026, 11, sequence),
        status=Critique.Status.DONE,
        severity="advisory",
        diagnosis=diagnosis,
        findings=[{"detector": "overconfidence", "fired": True, "score": 0.6}],
    )
    CritiqueAction.objects.create(critique=row, number=1, kind="free_form", text="Explain the plan.")
    return row


def test_each_critique_is_archived_under_its_strategy_and_reads_back(archive_dir) -> None:
    strategy = Strategy.objects.create(name="Momentum Large Caps", philosophy="trend")
    first, second = critique(strategy, 1), critique(strategy, 2, diagnosis="Worse.")

    paths = [archive_critique(first), archive_critique(second)]

    assert paths[0] == archive_dir / f"{strategy.pk}-momentum-large-caps" / "critique_run_001.json"
    assert paths[1].name == "critique_run_002.json"
    documents = read_archive(strategy)
    assert [d["sequence"] for d in documents] == [1, 2]
    assert documents[1]["diagnosis"] == "Worse."
    assert documents[0]["strategy"] == {"id": strategy.pk, "name": "Momentum Large Caps"}
    assert (documents[0]["run_count"], documents[0]["date"]) == (11, "2026-11-01")
    assert documents[0]["actions"][0]["kind"] == "free_form"
    assert documents[0]["findings"] == first.findings


def test_replays_are_archived_apart_and_cleared_apart() -> None:
    strategy = Strategy.objects.create(name="Pairs", philosophy="x")
    archive_critique(critique(strategy, 1))
    replayed = critique(strategy, 1, is_replay=True)
    archive_critique(replayed)

    assert archive_file(replayed).parent == strategy_folder(strategy, is_replay=False) / "replay"
    assert len(read_archive(strategy, is_replay=True)) == len(read_archive(strategy)) == 1
    assert archive_clear(strategy, is_replay=True) == 1
    assert read_archive(strategy, is_replay=True) == [] and len(read_archive(strategy)) == 1


def test_a_renamed_strategy_still_finds_its_earlier_files() -> None:
    strategy = Strategy.objects.create(name="Old name", philosophy="x")
    archive_critique(critique(strategy, 1))
    strategy.name = "New name"
    strategy.save()
    archive_critique(critique(strategy, 2))

    assert [d["sequence"] for d in read_archive(strategy)] == [1, 2]


def test_writing_the_same_critique_again_replaces_its_file() -> None:
    strategy = Strategy.objects.create(name="Again", philosophy="x")
    row = critique(strategy, 1)
    archive_critique(row)
    row.diagnosis = "Second write."
    archive_critique(row)

    assert [d["diagnosis"] for d in read_archive(strategy)] == ["Second write."]


def test_a_crash_mid_write_leaves_the_previous_file_intact_and_no_partial_file(monkeypatch) -> None:
    strategy = Strategy.objects.create(name="Crash", philosophy="x")
    row = critique(strategy, 1, diagnosis="The good one.")
    path = archive_critique(row)
    before = path.read_bytes()
    real_dump = json.dump

    def crash_halfway(document, stream, **kwargs):
        stream.write('{"sequence": 1, "diagnosis": "half')  # part of the file is written, then the crash
        stream.flush()
        raise OSError("disk full")

    monkeypatch.setattr(archive.json, "dump", crash_halfway)
    row.diagnosis = "The new one."
    with pytest.raises(OSError, match="disk full"):
        archive_critique(row)
    monkeypatch.setattr(archive.json, "dump", real_dump)

    assert path.read_bytes() == before
    assert json.loads(before)["diagnosis"] == "The good one."
    assert sorted(os.listdir(path.parent)) == ["critique_run_001.json"]


def test_a_crash_before_the_rename_leaves_no_file_at_all(tmp_path, monkeypatch) -> None:
    target = tmp_path / "fresh" / "critique_run_001.json"

    def no_rename(source, destination):
        raise OSError("power cut")

    monkeypatch.setattr(archive.os, "replace", no_rename)
    with pytest.raises(OSError):
        write_json_atomic(target, {"sequence": 1})

    assert not target.exists()
    assert list(target.parent.iterdir()) == []
