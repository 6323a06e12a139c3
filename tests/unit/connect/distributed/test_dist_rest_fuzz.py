"""The schema-driven fuzz test of ``tests/integration/connect/test_rest_fuzz.py``, against
a distributed worker: a real ``DistributedWorker`` (herder, worker, REST server) on an
``embedded:`` log in this process, over HTTP. Its answers (forwarding, 409s of a
cluster) must also be the ones ``/openapi.json`` declares, never a 500. Bounded by
``MAX_EXAMPLES`` cases per operation (about thirty operations)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from dist_herder_harness import LocalCluster
from hypothesis import HealthCheck, Phase, settings
from log_levels import restored_log_levels
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

MAX_EXAMPLES = 25
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


@pytest.fixture(scope="module")
def distributed_api(tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[schemathesis.BaseSchema]:
    with restored_log_levels():
        cluster = LocalCluster(tmp_path_factory.mktemp("dist-fuzz"), group="dist-fuzz")
        try:
            worker = cluster.add()
            schema = schemathesis.openapi.from_url(worker.url + "/openapi.json")
            schema.config.base_url = worker.url
            yield schema
        finally:
            cluster.close()


schema = schemathesis.pytest.from_fixture("distributed_api")


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_every_response_of_a_distributed_worker_is_declared(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS, timeout=30)
