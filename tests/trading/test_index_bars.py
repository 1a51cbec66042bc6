"""An index has no volume of its own: its bars import with volume 0, and the desk analyses it."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from django.core.management import CommandError, call_command

from trading.market import services
from trading.market.calendar import sessions
from trading.models import DailyBar, Instrument, PipelineRun
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute

pytestmark = pytest.mark.django_db


def _index_file(tmp_path, days: list[dt.date]):
    lines = ["symbol,date,open,high,low,close,volume"]
    level = 20_000.0
    for number, day in enumerate(days):
        level *= 1 + 0.004 * math.sin(number / 7)
        lines.append(f"NIFTY50,{day},{level:.2f},{level * 1.006:.2f},{level * 0.994:.2f},{level * 1.001:.2f},0")
    path = tmp_path / "nifty.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_index_with_no_volume_imports_and_runs(tmp_path):
    index = Instrument.objects.create(symbol="NIFTY50", exchange="NSE", name="Nifty 50", sector="Index")
    days = sessions("NSE", dt.date(2025, 1, 1), dt.date(2026, 6, 30))

    call_command("import_bars", str(_index_file(tmp_path, days)))

    assert DailyBar.objects.filter(instrument=index, volume=0).count() == len(days)
    bundle = services.feature_bundle_for(instrument=index, as_of=days[-1])
    assert bundle.technical.rsi_14 is not None and bundle.technical.atr_14 is not None
    run = pipeline_run_create(instrument=index, as_of=days[-1], provider="offline")
    pipeline_run_execute(run.pk)
    assert PipelineRun.objects.get(pk=run.pk).status == PipelineRun.Status.COMPLETED


def test_a_negative_volume_is_still_refused_with_its_line(tmp_path, capsys):
    Instrument.objects.create(symbol="NIFTY50", exchange="NSE", name="Nifty 50", sector="Index")
    path = tmp_path / "bad.csv"
    path.write_text("symbol,date,open,high,low,close,volume\nNIFTY50,2025-01-02,100,101,99,100,-1\n")

    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_bars", str(path))
    assert "bad.csv:2: volume -1 is negative" in capsys.readouterr().err
    assert not DailyBar.objects.exists()
