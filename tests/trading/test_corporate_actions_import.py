"""``manage.py import_corporate_actions``: all or nothing, with every problem named by its line."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from trading.models import AuditEvent, CorporateAction, Instrument

pytestmark = pytest.mark.django_db

HEADER = "symbol,exchange,kind,ex_date,ratio_old,ratio_new,amount\n"


@pytest.fixture
def listed(db) -> Instrument:
    Instrument.objects.create(symbol="INFY", exchange="NSE", name="Infosys", tick_size=Decimal("0.05"))
    return Instrument.objects.create(symbol="RELIANCE", exchange="NSE", name="Reliance", tick_size=Decimal("0.05"))


def _file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "actions.csv"
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_it_imports_splits_bonuses_and_dividends(listed, tmp_path, capsys):
    path = _file(
        tmp_path,
        "RELIANCE,NSE,split,2024-10-28,1,2,\n"  # a Monday and a session
        "INFY,,bonus,2024-06-03,1,2,\n"
        "RELIANCE,NSE,dividend,2024-08-19,,,10.50\n",
    )
    call_command("import_corporate_actions", str(path))
    assert "wrote 3 corporate_action row(s)" in capsys.readouterr().out
    split = CorporateAction.objects.get(instrument=listed, kind="split")
    assert (split.ex_date, split.ratio_old, split.ratio_new, split.source) == (
        dt.date(2024, 10, 28),
        1,
        2,
        "actions.csv",
    )
    assert CorporateAction.objects.get(kind="dividend").amount == Decimal("10.50")
    assert AuditEvent.objects.filter(action="import_corporate_action").count() == 1


def test_every_problem_is_reported_by_its_line_and_nothing_is_written(listed, tmp_path, capsys):
    path = _file(
        tmp_path,
        "RELIANCE,NSE,split,2024-10-28,1,2,\n"
        "RELIANCE,NSE,merger,2024-10-29,1,2,\n"  # 3: unknown kind
        "RELIANCE,NSE,split,2024-11-01,1,2,\n"  # 4: Diwali, no session
        "RELIANCE,NSE,dividend,2024-08-19,,,0\n"  # 5: no amount
        "RELIANCE,NSE,bonus,2024-08-20,2,1,\n"  # 6: a bonus that removes shares
        "NOSUCH,NSE,split,2024-10-28,1,2,\n"  # 7: unknown symbol
        "RELIANCE,NSE,split,2024-10-28,1,5,\n"  # 8: the same split as line 2
        "RELIANCE,NSE,dividend,2024-08-21,1,2,5\n",  # 9: a dividend with ratios
    )
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_corporate_actions", str(path))
    err = capsys.readouterr().err
    assert f"{path}:3: kind 'merger' is not one of split, bonus, dividend" in err
    assert f"{path}:4: ex_date 2024-11-01 (Friday) is not a session of NSE" in err
    assert f"{path}:5: amount 0 must be more than 0" in err
    assert f"{path}:6: a bonus adds shares" in err
    assert f"{path}:7: unknown symbol NSE:NOSUCH" in err
    assert f"{path}:8: the same split of NSE:RELIANCE ex 2024-10-28 as line 2" in err
    assert f"{path}:9: a dividend has no ratios" in err
    assert not CorporateAction.objects.exists()


def test_a_dry_run_writes_nothing(listed, tmp_path, capsys):
    path = _file(tmp_path, "RELIANCE,NSE,split,2024-10-28,1,2,\n")
    call_command("import_corporate_actions", str(path), "--dry-run")
    assert "1 corporate_action row(s) valid; dry run" in capsys.readouterr().out
    assert not CorporateAction.objects.exists()


def test_importing_the_same_file_twice_changes_nothing_and_a_changed_figure_is_refused(listed, tmp_path, capsys):
    path = _file(tmp_path, "RELIANCE,NSE,dividend,2024-08-19,,,10.5\n")
    call_command("import_corporate_actions", str(path))
    call_command("import_corporate_actions", str(path))
    assert CorporateAction.objects.count() == 1
    changed = _file(tmp_path, "RELIANCE,NSE,dividend,2024-08-19,,,11\n")
    with pytest.raises(CommandError):
        call_command("import_corporate_actions", str(changed))
    assert "already stored with amount 10.5000, not amount 11: correct it in the admin" in capsys.readouterr().err
    assert CorporateAction.objects.get().amount == Decimal("10.5")
