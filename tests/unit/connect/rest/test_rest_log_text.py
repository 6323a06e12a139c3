"""Request text reaches the log escaped: one request, one log line, whatever its bytes."""

from __future__ import annotations

import logging

import pytest

from connect.rest.log_text import printable


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain.name", "plain.name"),
    ("a\nFORGED ERROR x", "a\\nFORGED ERROR x"),
    ("cr\rlf\n", "cr\\rlf\\n"),
    ("\x1b[31mred", "\\x1b[31mred"),
    ("line\u2028sep\u2029par", "line\\u2028sep\\u2029par"),
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("back\\slash", "back\\\\slash"),
    ("unicode é ü", "unicode é ü"),
])
def test_printable_escapes_what_could_break_or_disguise_a_line(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_printable_bounds_the_length() -> None:
    text = printable("x" * 10_000, limit=100)
    assert text == "x" * 100 + "...[truncated]"


def test_an_unexpected_error_logs_the_path_escaped(client, herder, caplog, monkeypatch) -> None:
    def broken(name: str) -> None:
        raise RuntimeError("the herder broke")

    monkeypatch.setattr(herder, "connector_info", broken)
    caplog.set_level(logging.ERROR, logger="connect.rest")
    response = client.get("/connectors/a%0AFORGED%20ERROR%20line")
    assert response.status_code == 500
    [record] = [r for r in caplog.records if r.name.startswith("connect.rest")]
    assert record.getMessage() == ("Uncaught exception in REST call to GET "
                                   "/connectors/a\\nFORGED ERROR line")

