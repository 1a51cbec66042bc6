"""Browser uploads: check (dry run, report kept), confirm exactly once, discard; who may."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from trading.market import uploads
from trading.models import AuditEvent, DailyBar, DataUpload, Instrument
from vocabulary.refusals import InputRefused, StateConflict

BARS = (
    b"symbol,date,open,high,low,close,volume\n"
    b"RELIANCE,2025-01-02,100,105,99,104,1000\n"
    b"RELIANCE,2025-01-03,104,106,101,102.5,1200\n"
)


@pytest.fixture(autouse=True)
def _uploads_in_tmp(settings, tmp_path):
    settings.MARKET_DATA = {**settings.MARKET_DATA, "UPLOAD_DIR": tmp_path / "uploads"}


def post_file(client, content: bytes, name: str = "bars.csv", **fields):
    data = {"file": SimpleUploadedFile(name, content, content_type="text/csv"), "kind": "bars", **fields}
    return client.post(reverse("data_upload"), data)


def check(user, content: bytes = BARS, name: str = "bars.csv", **options) -> DataUpload:
    return uploads.upload_check(
        user=user,
        filename=name,
        chunks=[content],
        size=len(content),
        options=uploads.UploadOptions(kind=options.pop("kind", "bars"), **options),
    )


def test_a_viewer_cannot_see_or_use_the_upload_page(client, viewer, desk_admin, instrument):
    upload = check(desk_admin)
    client.force_login(viewer)

    assert client.get(reverse("data_upload")).status_code == 403
    assert post_file(client, BARS).status_code == 403
    assert client.get(reverse("data_upload_detail", args=[upload.pk])).status_code == 403
    assert client.post(reverse("data_upload_confirm", args=[upload.pk])).status_code == 403
    assert not DailyBar.objects.exists()
    assert DataUpload.objects.count() == 1


def test_an_approver_uploads_and_confirms_a_file(client, approver, instrument):
    client.force_login(approver)

    response = post_file(client, BARS)
    upload = DataUpload.objects.get()
    confirmed = client.post(reverse("data_upload_confirm", args=[upload.pk]))

    assert response.status_code == 302 and confirmed.status_code == 302
    assert DailyBar.objects.count() == 2
    assert AuditEvent.objects.filter(action="upload_imported", actor=approver).exists()


def test_uploading_checks_the_file_and_writes_nothing_until_confirmed(client, desk_admin, instrument):
    client.force_login(desk_admin)

    response = post_file(client, BARS)

    upload = DataUpload.objects.get()
    assert response.status_code == 302 and response.url == reverse("data_upload_detail", args=[upload.pk])
    assert upload.ok and upload.status == "checked" and upload.file_format == "desk"
    assert upload.report["rows_read"] == 2 and upload.report["instruments"] == ["NSE:RELIANCE"]
    assert Path(upload.stored_path).read_bytes() == BARS
    assert not DailyBar.objects.exists()
    page = client.get(response.url).content.decode()
    assert "Confirm: import 2 row(s)" in page and "NSE:RELIANCE" in page

    confirmed = client.post(reverse("data_upload_confirm", args=[upload.pk]))

    assert confirmed.status_code == 302
    assert DailyBar.objects.count() == 2
    upload.refresh_from_db()
    assert upload.status == "imported" and upload.imported_at is not None
    assert upload.report["imported"]["written"] == 2
    actions = list(AuditEvent.objects.order_by("id").values_list("action", "actor"))
    assert actions == [
        ("upload_checked", desk_admin.pk),
        ("import_bar", desk_admin.pk),
        ("upload_imported", desk_admin.pk),
    ]


def test_a_file_with_problems_shows_them_with_their_lines_and_cannot_be_confirmed(client, desk_admin, instrument):
    client.force_login(desk_admin)
    bad = BARS + b"RELIANCE,2025-01-04,100,105,99,104,1000\nWIPRO,2025-01-06,1,1,1,1,1\n"

    response = post_file(client, bad, name="mixed.csv")

    upload = DataUpload.objects.get()
    assert not upload.ok
    page = client.get(response.url).content.decode()
    assert "line 4" in page and "2025-01-04 (Saturday) is not a session of NSE" in page
    assert "line 5" in page and "unknown symbol WIPRO" in page
    assert "Confirm" not in page
    with pytest.raises(StateConflict, match="has problems"):
        uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)
    assert not DailyBar.objects.exists()


def test_confirm_imports_exactly_once(desk_admin, instrument):
    upload = check(desk_admin)

    uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)
    with pytest.raises(StateConflict, match="already imported"):
        uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)

    assert DailyBar.objects.count() == 2
    assert AuditEvent.objects.filter(action="upload_imported").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_people_confirming_at_once_import_the_file_once(desk_admin, instrument):
    upload = check(desk_admin)
    outcomes: list[str] = []

    def confirm() -> None:
        try:
            uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)
            outcomes.append("imported")
        except StateConflict:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=confirm) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["imported", "refused", "refused", "refused"]
    assert DailyBar.objects.count() == 2


def test_a_file_changed_since_the_check_is_refused(desk_admin, instrument):
    upload = check(desk_admin)
    Path(upload.stored_path).write_bytes(BARS.replace(b"104,1000", b"104,9999"))

    with pytest.raises(StateConflict, match="missing or changed since it was checked"):
        uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)

    upload.refresh_from_db()
    assert upload.status == "checked" and not DailyBar.objects.exists()


def test_bars_stored_since_the_check_undo_the_confirm_and_keep_the_new_report(desk_admin, instrument, tmp_path):
    upload = check(desk_admin)
    check_again = check(desk_admin, name="same.csv")
    uploads.upload_confirm(user=desk_admin, upload_id=check_again.pk)

    with pytest.raises(StateConflict, match="no longer imports cleanly"):
        uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)

    upload.refresh_from_db()
    assert upload.status == "checked" and not upload.ok
    assert "already stored" in upload.report["problems"][0]["reason"]
    assert DailyBar.objects.count() == 2


def test_discard_drops_the_file_and_imports_nothing(client, desk_admin, instrument):
    upload = check(desk_admin)
    client.force_login(desk_admin)

    response = client.post(reverse("data_upload_discard", args=[upload.pk]))

    assert response.status_code == 302
    upload.refresh_from_db()
    assert upload.status == "discarded" and not Path(upload.stored_path).exists()
    with pytest.raises(StateConflict, match="already discarded"):
        uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)
    assert not DailyBar.objects.exists()


def test_each_kind_goes_to_its_importer(desk_admin, db):
    instruments = check(
        desk_admin,
        b"symbol,exchange,name,sector,tick_size,lot_size,currency\nAAPL,NASDAQ,Apple,Tech,0.01,1,USD\n",
        name="universe.csv",
        kind="instruments",
    )
    uploads.upload_confirm(user=desk_admin, upload_id=instruments.pk)
    assert Instrument.objects.get().currency == "USD"

    yahoo = check(
        desk_admin,
        b"Date,Open,High,Low,Close,Adj Close,Volume\n2025-01-02,248.93,249.10,241.82,243.85,243.26,55740700\n",
        name="anything.csv",
        symbol="NASDAQ:AAPL",
    )
    assert yahoo.file_format == "yahoo" and yahoo.ok
    uploads.upload_confirm(user=desk_admin, upload_id=yahoo.pk)
    assert DailyBar.objects.get().close == Decimal("243.85")


def test_create_missing_is_an_upload_option_reported_before_confirming(desk_admin, db):
    upload = check(
        desk_admin, b"symbol,date,open,high,low,close,volume\nINFY,2025-01-02,10,11,9,10,5\n", create_missing=True
    )

    assert upload.ok and upload.report["notes"] == [
        "would create NSE:INFY (line 2): currency INR, tick 0.05, lot 1, name 'INFY'"
    ]
    assert not Instrument.objects.exists()
    uploads.upload_confirm(user=desk_admin, upload_id=upload.pk)
    assert Instrument.objects.get().symbol == "INFY"


def test_an_unreadable_file_is_a_checked_upload_with_its_problem(desk_admin, db):
    upload = check(desk_admin, BARS + b"RELIANCE,2025-01-06,1,1,1,1,1 caf\xe9\n", name="latin.csv")

    assert not upload.ok
    assert upload.report["problems"][0]["text"].startswith("latin.csv:4: not UTF-8 text")


def test_a_bad_kind_or_no_file_is_refused_and_nothing_is_stored(desk_admin, db):
    with pytest.raises(InputRefused, match="is not a kind of data"):
        check(desk_admin, kind="trades")
    with pytest.raises(InputRefused, match="choose a file"):
        check(desk_admin, name="")

    assert not DataUpload.objects.exists()


def test_an_oversized_upload_is_refused_before_it_is_read(desk_admin, db, settings):
    settings.MARKET_DATA = {**settings.MARKET_DATA, "UPLOAD_MAX_MB": 1}

    with pytest.raises(InputRefused, match="limited to 1 MB"):
        uploads.upload_check(
            user=desk_admin,
            filename="big.csv",
            chunks=iter(()),
            size=2 * 1024 * 1024,
            options=uploads.UploadOptions(kind="bars"),
        )


def test_the_page_escapes_what_a_file_holds(client, desk_admin, instrument):
    client.force_login(desk_admin)
    post_file(client, b"symbol,date,open,high,low,close,volume\n<script>x</script>,2025-01-02,1,1,1,1,1\n")

    page = client.get(reverse("data_upload_detail", args=[DataUpload.objects.get().pk])).content.decode()

    assert "<script>x</script>" not in page.upper().replace("<SCRIPT>X</SCRIPT>", "<script>x</script>")
    assert "&lt;SCRIPT&gt;X&lt;/SCRIPT&gt;" in page


def test_the_list_shows_recent_uploads(client, desk_admin, instrument):
    check(desk_admin, name="first.csv")
    client.force_login(desk_admin)

    page = client.get(reverse("data_upload")).content.decode()

    assert "first.csv" in page and "clean" in page
