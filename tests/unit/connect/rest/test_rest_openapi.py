"""``/openapi.json`` describes exactly the routes the app serves."""

from __future__ import annotations

import re

from connect.rest import create_app


def _app_operations(app) -> set[tuple[str, str]]:
    out = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            out.add((path, method.lower()))
    return out


def test_document_matches_the_url_map(client, app):
    document = client.get("/openapi.json").json
    assert document["openapi"].startswith("3.")
    documented = {(path, method) for path, ops in document["paths"].items()
                  for method in ops}
    assert documented == _app_operations(app)


def test_every_operation_documents_errors_and_refs_resolve(client):
    document = client.get("/openapi.json").json
    schemas = document["components"]["schemas"]
    text = str(document)
    for ref in re.findall(r"#/components/schemas/(\w+)", text):
        assert ref in schemas
    for ops in document["paths"].values():
        for operation in ops.values():
            assert "500" in operation["responses"]


def test_app_serves_twenty_nine_operations_kafka_has(herder):
    # Kafka Connect's public surface (without the deprecated tasks-config and the
    # internal worker-to-worker endpoints), plus /openapi.json.
    assert len(_app_operations(create_app(herder, {}))) == 29
