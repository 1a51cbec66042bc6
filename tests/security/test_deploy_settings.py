"""HTTPS deployments are one switch away, ``check --deploy`` passes with production variables, and
every response carries a Content-Security-Policy without inline scripts."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": secrets.token_urlsafe(64),
    "ALLOWED_HOSTS": "desk.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://desk.example.com",
}
HTTPS_SETTINGS = [
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_PROXY_SSL_HEADER",
]


def _run(tmp_path: Path, args: list[str], **variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DESK_DATA_DIR": str(tmp_path / "var")}
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment never has it.
    unset = ("DATABASE_URL", "REDIS_URL", "REQUIRE_SERVICES", "DESK_HTTPS", "DESK_BEHIND_PROXY", "DEBUG")
    for name in (*unset, "DJANGO_ALLOW_ASYNC_UNSAFE"):
        env.pop(name, None)
    env.update(variables)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _settings(tmp_path: Path, **variables: str) -> dict:
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {HTTPS_SETTINGS!r}}}))"
    )
    result = _run(tmp_path, ["-c", code], **variables)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_check_deploy_passes_at_warning_level_with_the_production_variables(tmp_path):
    result = _run(
        tmp_path, ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **PRODUCTION, DESK_HTTPS="1"
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_without_the_https_switch_check_deploy_names_what_is_missing(tmp_path):
    result = _run(tmp_path, ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **PRODUCTION)

    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stdout + result.stderr


def test_a_laptop_over_plain_http_keeps_working_by_default(tmp_path):
    values = _settings(tmp_path)

    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SESSION_COOKIE_SECURE"] is False and values["CSRF_COOKIE_SECURE"] is False
    assert values["SECURE_HSTS_SECONDS"] == 0
    assert values["SECURE_PROXY_SSL_HEADER"] is None


def test_the_https_switch_turns_on_redirects_secure_cookies_and_hsts(tmp_path):
    values = _settings(tmp_path, DESK_HTTPS="1", DESK_HSTS_SECONDS="3600")

    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["SESSION_COOKIE_SECURE"] is True and values["CSRF_COOKIE_SECURE"] is True
    assert values["SECURE_HSTS_SECONDS"] == 3600
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert values["SECURE_PROXY_SSL_HEADER"] is None  # trusting the header needs a proxy that sets it


def test_behind_a_proxy_the_forwarded_scheme_is_trusted(tmp_path):
    values = _settings(tmp_path, DESK_HTTPS="1", DESK_BEHIND_PROXY="1")

    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def _directives(header: str) -> dict[str, list[str]]:
    parts = (part.strip().split() for part in header.split(";") if part.strip())
    return {words[0]: words[1:] for words in parts}


@pytest.mark.parametrize("path", ["/login/", "/", "/runs/", "/api/docs/"])
def test_every_page_carries_a_policy_that_allows_no_inline_script(path, client, viewer):
    client.force_login(viewer)

    policy = _directives(client.get(path)["Content-Security-Policy"])

    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    # Plotly writes its chart styles into <style> rules at run time; styles only, never scripts.
    assert "'unsafe-inline'" in policy["style-src"]


def test_no_template_carries_an_inline_script_or_event_handler():
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag:
                offenders.append(f"{template.name}: {tag}")
        offenders += [f"{template.name}: {m}" for m in re.findall(r"\son[a-z]+\s*=", text)]
        offenders += [f"{template.name}: javascript: URL" for _ in re.findall(r"javascript:", text)]

    assert offenders == []
