"""Request bodies the JSON parser must not meet: too deep (RecursionError) or too big."""

from __future__ import annotations


def test_a_deeply_nested_or_huge_body_is_a_client_error(client) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    response = client.put("/connectors/x/config", data=nested,
                          content_type="application/json")
    assert response.status_code == 400
    assert response.json == {"error_code": 400, "message": "Malformed JSON in request "
                                                           "body: nested too deeply"}
    huge = b'{"k": "' + b"x" * (17 * 1024 * 1024) + b'"}'
    response = client.put("/connectors/x/config", data=huge, content_type="application/json")
    assert response.status_code == 413 and response.json["error_code"] == 413
