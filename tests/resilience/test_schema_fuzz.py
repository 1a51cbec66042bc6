"""Schemathesis against the app's own OpenAPI schema, in process: every operation gets generated
requests (valid ones, and ones that break the schema on purpose) as an authenticated approver, and
no answer may be a server error or a response the schema does not describe.

The schema is generated in process and the requests go to the WSGI application directly, inside the
test's database transaction (POSTs may change data: that is fine here). Examples are derandomized,
so a failure reproduces, and bounded per operation, so the test stays well under a minute.
"""

from __future__ import annotations

import json
from collections import Counter
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.urls import Resolver404, resolve
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from knox.models import AuthToken
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.trading.book_rows import SESSION, instrument_at, open_position, pending
from trading.book.accounts import default_account

EXAMPLES_PER_OPERATION = 40
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@contextmanager
def _same_connection():
    """Django's WSGI handler closes a connection left inside a transaction at each request's start
    and end; the test's transaction is one, so the hook is off while the fuzzer calls (as Django's
    own test client does)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _loaded_schema():
    document = SchemaGenerator().get_schema(request=None, public=True)
    return schemathesis.openapi.from_dict(json.loads(OpenApiJsonRenderer().render(document)))


def _reaches_a_view(path: str) -> bool:
    """A path the router cannot match (a negative example that puts ``abc`` where the id goes) is
    answered by Django's own 404 page before any API code runs."""
    try:
        resolve(urlsplit(path).path)
    except Resolver404:
        return False
    return True


@pytest.fixture
def desk_data(instrument_with_bars, approver):
    """Something behind the ids the fuzzer tries first: an instrument with bars, a pending thesis,
    an open position."""
    account = default_account()
    thesis = pending(account, instrument_at("ABC", day=SESSION), quantity=10)
    open_position(pending(account, instrument_at("XYZ", day=SESSION), quantity=10), account, on=SESSION)
    return thesis


def test_no_generated_request_gets_a_server_error_or_an_undocumented_answer(desk_data, approver):
    from config.wsgi import application

    token = AuthToken.objects.create(user=approver)[1]
    headers = {"Authorization": f"Token {token}"}
    failures: list[str] = []
    statuses: Counter[int] = Counter()

    def exercise(operation, mode: GenerationMode) -> None:
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def call(case) -> None:
            response = case.call(app=application, headers=headers)
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{operation.label} [{mode}] {response.status_code}: {response.text[:300]}")
            if not _reaches_a_view(response.request.url):
                return  # the router's 404, outside the API (only negative examples get here)
            try:
                case.validate_response(response, checks=CHECKS)
            except (AssertionError, FailureGroup) as failure:  # each check's own message says what differs
                failures.append(f"{operation.label} [{mode}] {response.status_code}: {failure}"[:1500])

        try:
            call()
        except Unsatisfiable:
            # Nothing in the operation can be made invalid (no parameters, no body): no negative case.
            assert mode is GenerationMode.NEGATIVE, operation.label

    with _same_connection():
        for result in _loaded_schema().get_all_operations():
            operation = result.ok()
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                exercise(operation, mode)

    print(f"responses by status: {dict(sorted(statuses.items()))}")
    assert sum(count for status, count in statuses.items() if status >= 500) == 0, failures
    assert not failures, "\n\n".join(failures)
