from __future__ import annotations

from django.contrib.auth import authenticate
from django.core.management import call_command

from trading.access import create_demo_users


def test_only_approvers_and_admins_may_approve(viewer, approver, desk_admin, outsider):
    assert not viewer.has_perm("trading.approve_thesis")
    assert approver.has_perm("trading.approve_thesis")
    assert desk_admin.has_perm("trading.approve_thesis")
    assert not outsider.has_perm("trading.approve_thesis")


def test_viewers_can_read_market_data_but_not_import_it(viewer, approver, desk_admin):
    assert viewer.has_perm("trading.view_instrument") and viewer.has_perm("trading.view_dailybar")
    assert not viewer.has_perm("trading.import_market_data")
    assert approver.has_perm("trading.import_market_data")  # the browser upload is an approver's
    assert desk_admin.has_perm("trading.import_market_data")


def test_demo_users_get_a_password_printed_once(db, capsys):
    call_command("create_demo_users")
    first = capsys.readouterr().out
    call_command("create_demo_users")
    second = capsys.readouterr().out

    password = first.split("'approver'")[1].split("password")[1].split()[0]
    assert authenticate(username="approver", password=password) is not None
    assert password not in second and "password unchanged" in second


def test_resetting_demo_passwords_replaces_the_old_ones(db):
    old = {login.username: login.password for login in create_demo_users()}
    new = {login.username: login.password for login in create_demo_users(reset_passwords=True)}

    assert authenticate(username="viewer", password=old["viewer"]) is None
    assert authenticate(username="viewer", password=new["viewer"]) is not None
