"""Schema-driven fuzzing of Connect's REST API with schemathesis: requests generated from
the worker's own ``/openapi.json`` (valid and invalid parameters and bodies) go over HTTP
to a real standalone worker (``StandaloneHerder`` over a real ``Worker`` on
``embedded:``, the real REST server). Every response must be one the document declares
for that operation, with the declared content type and body schema, and never a 500.

Bounded: at most ``MAX_EXAMPLES`` generated cases per operation (about thirty
operations), no shrinking deadline, and the whole run is capped by hypothesis's phases
(no shrinking past the first failure); it takes well under a minute here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from log_levels import restored_log_levels
from rt_test_connectors import Harness
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.integration

MAX_EXAMPLES = 60
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


@pytest.fixture(scope="module")
def connect_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[schemathesis.BaseSchema]:
    # PUT /admin/loggers/... may change levels of this process: put them back.
    with restored_log_levels():
        harness = Harness(tmp_path_factory.mktemp("fuzz") / "log")
        base = harness.rest()
        try:
            schema = schemathesis.openapi.from_url(base + "/openapi.json")
            schema.config.base_url = base
            yield schema
        finally:
            harness.close()


schema = schemathesis.pytest.from_fixture("connect_api")


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_every_response_is_declared_and_no_500(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS, timeout=30)
