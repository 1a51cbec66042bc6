"""Static files as `./desk up` serves them: after collectstatic, under hashed names with a year's
cache and compressed, so Plotly's 4.8 MB is sent once, gzipped, and kept by the browser.

Before this, plotly.min.js went out uncompressed under its plain name with a 60-second cache: every
visit past a minute fetched 4.8 MB again."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db

HASHED = {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}
A_YEAR = 365 * 24 * 3600


def _hashed_static(root: Path) -> override_settings:
    return override_settings(STATIC_ROOT=root, STORAGES={**django_settings.STORAGES, "staticfiles": HASHED})


@pytest.fixture(scope="module")
def collected_root(tmp_path_factory) -> Path:
    """collectstatic into a fresh STATIC_ROOT with the storage ./desk up uses, as it runs it (once
    for the module: compressing every file takes seconds)."""
    root = tmp_path_factory.mktemp("static") / "staticfiles"
    with _hashed_static(root):
        call_command("collectstatic", interactive=False, verbosity=0)
    return root


@pytest.fixture
def collected(collected_root) -> Iterator[Path]:
    with _hashed_static(collected_root):
        yield collected_root


def test_the_pages_name_plotly_and_the_chart_script_by_their_hashed_names(collected, viewer, instrument_with_bars):
    client = Client()
    client.force_login(viewer)

    body = client.get("/instruments/RELIANCE/").content.decode()

    assert re.search(r'src="/static/vendor/plotly\.min\.[0-9a-f]{12}\.js"', body)
    assert re.search(r'src="/static/js/chart\.[0-9a-f]{12}\.js"', body)
    assert 'src="/static/vendor/plotly.min.js"' not in body


def test_the_hashed_plotly_is_served_gzipped_with_a_years_cache(collected):
    url = static("vendor/plotly.min.js")
    assert re.fullmatch(r"/static/vendor/plotly\.min\.[0-9a-f]{12}\.js", url)
    original = (collected / "vendor" / "plotly.min.js").read_bytes()

    response = Client().get(url, HTTP_ACCEPT_ENCODING="gzip, deflate")

    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in response["Vary"]
    cache = response["Cache-Control"]
    assert "immutable" in cache and int(re.search(r"max-age=(\d+)", cache).group(1)) >= A_YEAR
    sent = b"".join(response.streaming_content)
    assert len(sent) < len(original) / 3  # 4.8 MB goes out as about 1.4 MB
    assert gzip.decompress(sent) == original


def test_a_browser_that_takes_brotli_gets_the_smaller_brotli_copy(collected):
    import brotli

    original = (collected / "vendor" / "plotly.min.js").read_bytes()

    response = Client().get(static("vendor/plotly.min.js"), HTTP_ACCEPT_ENCODING="gzip, deflate, br")

    assert response.status_code == 200 and response["Content-Encoding"] == "br"
    sent = b"".join(response.streaming_content)
    assert brotli.decompress(sent) == original
    assert len(sent) < len(gzip.compress(original))


def test_a_browser_that_takes_no_compression_gets_the_file_as_it_is(collected):
    response = Client().get(static("vendor/plotly.min.js"))

    assert response.status_code == 200 and "Content-Encoding" not in response
    assert b"".join(response.streaming_content) == (collected / "vendor" / "plotly.min.js").read_bytes()


def test_a_plain_name_is_still_served_but_only_briefly_cached(collected):
    """An old page (or a file added since the last collectstatic) asks for the plain name: it still
    answers, with a short cache, since the file behind that name changes with each release."""
    response = Client().get("/static/vendor/plotly.min.js", HTTP_ACCEPT_ENCODING="gzip")

    assert response.status_code == 200
    assert "immutable" not in response["Cache-Control"]
    assert int(re.search(r"max-age=(\d+)", response["Cache-Control"]).group(1)) <= 3600


def test_pages_keep_their_content_security_policy_with_hashed_static_files(collected, viewer, instrument_with_bars):
    client = Client()
    client.force_login(viewer)

    response = client.get("/instruments/RELIANCE/")

    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    assert "<script>" not in response.content.decode()  # every script is a file; data sits in json_script
