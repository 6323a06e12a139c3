"""Server logging: per-logger levels, OpenTelemetry-shaped JSON with context fields, one
redaction filter, and request logs with request ids on a real HTTP server."""

from __future__ import annotations

import argparse
import json
import logging
import urllib.request
from collections.abc import Iterator

import pytest

from core.cli import logging_setup
from core.cli.errors import CliError
from core.http.access_log import AccessLog
from core.http.server import HttpServer
from core.telemetry import log_context, redact


class _Captured:
    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys

    def getvalue(self) -> str:
        return self._capsys.readouterr().err


@pytest.fixture
def stderr(capsys: pytest.CaptureFixture[str]) -> Iterator[_Captured]:
    """What the installed handler writes; the logging setup is restored afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    saved_loggers = {n: logging.getLogger(n).level for n in ("core.broker", "connect")}
    yield _Captured(capsys)
    root.handlers[:], _ = saved
    root.setLevel(saved[1])
    for name, level in saved_loggers.items():
        logging.getLogger(name).setLevel(level)
    logging_setup.apply_logging_options(argparse.Namespace())


def _configure(level: str | None, fmt: str) -> None:
    logging_setup.apply_logging_options(argparse.Namespace(log_level=level, log_format=fmt))
    logging_setup.configure_server_logging()


def test_levels_per_logger_and_json_fields(stderr):
    _configure("warning,core.broker=debug", "json")
    logging.getLogger("core.broker.connection").debug("shown")
    logging.getLogger("connect.worker").info("hidden")
    with log_context(connector="orders", task=2):
        logging.getLogger("connect.worker").warning("task %s failed", "orders-2")
    lines = [json.loads(line) for line in stderr.getvalue().splitlines()]
    assert [e["message"] for e in lines] == ["shown", "task orders-2 failed"]
    assert lines[0]["severity_number"] == 5 and lines[0]["level"] == "DEBUG"
    assert lines[1]["severity_number"] == 13 and lines[1]["logger"] == "connect.worker"
    assert (lines[1]["connector"], lines[1]["task"]) == ("orders", 2)
    assert "connector" not in lines[0]
    assert lines[0]["time"].endswith("Z")


def test_text_lines_end_with_the_context(stderr):
    _configure("info", "text")
    with log_context(connector="c1", task=0, request_id="r9"):
        logging.getLogger("x").info("hello")
    assert stderr.getvalue().rstrip().endswith("x: hello [connector=c1 task=0 request_id=r9]")


def test_one_filter_redacts_messages_and_tracebacks(stderr):
    _configure("info", "json")
    log = logging.getLogger("connect.rest")
    log.info("config %s", {"connection.password": "hunter2", "topic": "t"})
    try:
        raise ValueError("cannot log in with password=hunter2")
    except ValueError:
        log.exception("login failed for postgres://app:hunter2@db/x")
    text = stderr.getvalue()
    assert "hunter2" not in text
    entries = [json.loads(line) for line in text.splitlines()]
    assert "'connection.password': '[hidden]'" in entries[0]["message"]
    assert "'topic': 't'" in entries[0]["message"]
    assert "password=[hidden]" in entries[1]["exception"]
    assert "postgres://app:[hidden]@db/x" in entries[1]["message"]


@pytest.mark.parametrize("text", [
    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="u" password="s3cr3t";',
    "basic.auth.user.info=user:s3cr3t", '{"ssl.key.password": "s3cr3t"}', "token: s3cr3t",
])
def test_secret_shapes_are_hidden(text):
    assert "s3cr3t" not in redact(text)


def test_bad_levels_are_one_clear_error(monkeypatch):
    with pytest.raises(ValueError, match="'loud'"):
        logging_setup.parse_levels("info,core.broker=loud")
    with pytest.raises(ValueError, match="names no logger"):
        logging_setup.parse_levels("=debug")
    monkeypatch.setenv("FERRY_LOG_LEVEL", "core.broker=verbose")
    with pytest.raises(CliError, match="FERRY_LOG_LEVEL"):
        logging_setup.apply_logging_options(argparse.Namespace())


def test_access_log_binds_and_returns_the_request_id(caplog):
    inner = logging.getLogger("test.app")

    def app(environ, start_response):
        inner.info("inside")
        start_response("204 No Content", [])
        return [b""]

    server = HttpServer(AccessLog(app, logging.getLogger("test.access")), name="t", ident="t")
    server.start()
    try:
        captured = []
        handler = logging.Handler()
        handler.emit = lambda record: captured.append(  # type: ignore[method-assign]
            (record.name, record.getMessage(), dict(getattr(record, "ferry_context", {}))))
        from core.telemetry import ContextFilter
        handler.addFilter(ContextFilter())
        logging.getLogger().addHandler(handler)
        caplog.set_level(logging.INFO)
        try:
            request = urllib.request.Request(server.url + "/things",
                                             headers={"X-Request-Id": "abc-123"})
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.headers["X-Request-Id"] == "abc-123"
            with urllib.request.urlopen(server.url + "/other", timeout=10) as response:
                made = response.headers["X-Request-Id"]
        finally:
            logging.getLogger().removeHandler(handler)
    finally:
        server.stop()
    inside = [c for c in captured if c[0] == "test.app"]
    assert inside[0][2]["request_id"] == "abc-123" and inside[0][2]["path"] == "/things"
    assert inside[1][2]["request_id"] == made and len(made) == 16
    access = [c[1] for c in captured if c[0] == "test.access"]
    assert access[0].startswith("GET /things 204 ") and "from 127.0.0.1" in access[0]
