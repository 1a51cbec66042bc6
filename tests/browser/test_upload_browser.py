"""The upload page in a real browser: an admin picks a bhavcopy, reads the dry run's report,
confirms once; a file with problems shows them with their lines and offers no confirm."""

from __future__ import annotations

import pytest

from trading.models import DailyBar, DataUpload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BHAV_HEADER = (
    "TradDt,BizDt,Sgmt,Src,FinInstrmTp,FinInstrmId,ISIN,TckrSymb,SctySrs,XpryDt,FininstrmActlXpryDt,StrkPric,"
    "OptnTp,FinInstrmNm,OpnPric,HghPric,LwPric,ClsPric,LastPric,PrvsClsgPric,UndrlygPric,SttlmPric,OpnIntrst,"
    "ChngInOpnIntrst,TtlTradgVol,TtlTrfVal,TtlNbOfTxsExctd,SsnId,NewBrdLotQty,Rmks,Rsvd1,Rsvd2,Rsvd3,Rsvd4\n"
)


def bhav_row(symbol: str, series: str, isin: str, name: str, day: str = "2025-07-04") -> str:
    return (
        f"{day},{day},CM,NSE,STK,1,{isin},{symbol},{series},,,,,{name},100.00,104.50,99.10,103.20,"
        f"103.20,99.80,,103.20,,,120000,12398765.10,2103,F1,1,,,,,\n"
    )


@pytest.fixture(autouse=True)
def _uploads_in_tmp(settings, tmp_path):
    settings.MARKET_DATA = {**settings.MARKET_DATA, "UPLOAD_DIR": tmp_path / "uploads"}


def test_an_admin_uploads_a_bhavcopy_reads_the_report_and_confirms_it_once(
    log_in, live_server, page, screenshot, desk_admin, instrument, tmp_path
):
    path = tmp_path / "BhavCopy_NSE_CM_0_0_0_20250704_F_0000.csv"
    path.write_text(
        BHAV_HEADER
        + bhav_row("RELIANCE", "EQ", "INE002A01018", "RELIANCE INDUSTRIES LTD")
        + bhav_row("NEWCO", "EQ", "INE000N01011", "NEW COMPANY LTD")
        + bhav_row("RELIANCE", "BE", "INE002A01018", "RELIANCE INDUSTRIES LTD"),
        encoding="utf-8",
    )
    log_in(desk_admin.username)

    page.goto(f"{live_server.url}/data/upload/")
    page.set_input_files("#upload-file", str(path))
    page.check("#upload-create-missing")
    page.click("#upload-check")

    page.wait_for_selector("#upload-report")
    assert page.locator("#upload-status").inner_text() == "checked"
    assert page.locator("#upload-rows").inner_text() == "3"
    assert page.locator("#upload-accepted").inner_text() == "2"
    assert "would create NSE:NEWCO (line 3): currency INR, tick 0.05, lot 1, name 'NEW COMPANY LTD'" in (
        page.locator("#upload-notes").inner_text()
    )
    assert "1 row(s): series BE" in page.locator("#upload-skipped").inner_text()
    assert not DailyBar.objects.exists()
    screenshot("upload-checked")

    page.click("#upload-confirm")

    page.wait_for_selector("#upload-status:text('imported')")
    assert page.locator("#upload-written").inner_text() == "2"
    assert page.locator("#upload-confirm").count() == 0
    assert DailyBar.objects.count() == 2
    assert DataUpload.objects.get().status == "imported"
    screenshot("upload-imported")


def test_a_file_with_problems_shows_each_line_and_can_only_be_discarded(
    log_in, live_server, page, desk_admin, instrument, tmp_path
):
    path = tmp_path / "bars.csv"
    path.write_text(
        "symbol,date,open,high,low,close,volume\n"
        "RELIANCE,2025-01-03,100,105,99,104,1000\n"
        "RELIANCE,2025-01-04,100,105,99,104,1000\n"
        "RELIANCE,2025-01-06,100,98,99,99,1000\n",
        encoding="utf-8",
    )
    log_in(desk_admin.username)

    page.goto(f"{live_server.url}/data/upload/")
    page.set_input_files("#upload-file", str(path))
    page.click("#upload-check")

    problems = page.locator("#upload-problems").inner_text()
    assert "line 3 2025-01-04 (Saturday) is not a session of NSE" in problems
    assert "line 4 high 98.0000 is below low 99.0000" in problems
    assert page.locator("#upload-confirm").count() == 0

    page.click("#upload-discard")

    page.wait_for_selector("#uploads")
    assert "discarded" in page.locator("#uploads").inner_text()
    assert not DailyBar.objects.exists()


def test_a_viewer_is_refused_the_upload_page(log_in, live_server, page, viewer):
    log_in(viewer.username)

    response = page.goto(f"{live_server.url}/data/upload/")

    assert response is not None and response.status == 403
