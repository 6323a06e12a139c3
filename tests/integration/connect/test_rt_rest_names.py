"""Names from requests over HTTP to a real standalone worker: a plugin name never reaches
``importlib`` (404, not 500), a logger or connector name with a line break is a 400, and
no request text writes a raw control character into the log."""

from __future__ import annotations

import logging
import unicodedata

import pytest
import requests
from rt_test_connectors import Harness

pytestmark = pytest.mark.integration


@pytest.fixture
def rest(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="connect")
    h = Harness(tmp_path / "log")
    yield h, h.rest()
    h.close()


def _error(response: requests.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error_code"] == status
    return body["message"]


def _no_control_characters_logged(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        text = record.getMessage()
        assert not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text), text


@pytest.mark.parametrize("plugin", ["..x", ".x", "...", "os.path", "os:getcwd",
                                    "connect.runtime.plugins:Plugins", "a b", "x%0Ay",
                                    "%2e%2e", "nope.Missing"])
def test_a_plugin_name_that_names_no_installed_plugin_is_a_404(rest, caplog, plugin) -> None:
    _, base = rest
    message = _error(requests.get(f"{base}/connector-plugins/{plugin}/config", timeout=30),
                     404)
    assert message.startswith("Unknown plugin")
    _no_control_characters_logged(caplog)


def test_module_paths_in_configs_are_config_errors_not_500(rest) -> None:
    _, base = rest
    for config in ({"connector.class": "..x"},
                   {"connector.class": "ScriptedSource", "transforms": "t",
                    "transforms.t.type": "..x"}):
        response = requests.put(f"{base}/connector-plugins/ScriptedSource/config/validate",
                                json={"name": "n", **config}, timeout=30)
        if "connector.class" in config and config["connector.class"] == "..x":
            _error(response, 400)  # the body names another plugin than the URL
            response = requests.put(f"{base}/connector-plugins/..x/config/validate",
                                    json={"name": "n", **config}, timeout=30)
        assert response.status_code == 200, response.text
        assert response.json()["error_count"] >= 1
        _error(requests.post(f"{base}/connectors", json={"name": "n", "config": config},
                             timeout=30), 400)


def test_a_logger_name_with_a_line_break_is_a_400_and_forges_nothing(rest, caplog) -> None:
    _, base = rest
    forged = "a%0AFORGED%20ERROR%20root:%20pwned"
    message = _error(requests.put(f"{base}/admin/loggers/{forged}", json={"level": "INFO"},
                                  timeout=30), 400)
    assert "Invalid logger name" in message and "\n" not in message
    _error(requests.get(f"{base}/admin/loggers/{forged}", timeout=30), 400)
    for bad in ("a%20b", "a..b", ".a", "a.", "x%1B%5B31m"):
        _error(requests.put(f"{base}/admin/loggers/{bad}", json={"level": "INFO"},
                            timeout=30), 400)
    assert not any("FORGED" in name for name in logging.Logger.manager.loggerDict)
    # A valid name with a hostile scope: applied, and the warning is one escaped line.
    response = requests.put(f"{base}/admin/loggers/ferry.test.names",
                            params={"scope": "x\nFORGED ERROR"}, json={"level": "WARN"},
                            timeout=30)
    assert response.status_code == 200, response.text
    warned = [r.getMessage() for r in caplog.records if "invalid scope" in r.getMessage()]
    assert len(warned) == 1 and "\\nforged" in warned[0]
    _no_control_characters_logged(caplog)
    logging.getLogger("ferry.test.names").setLevel(logging.NOTSET)


def test_a_connector_name_with_control_characters_is_a_400(rest, caplog) -> None:
    h, base = rest
    for name in ("a\nFORGED", "tab\there", "esc\x1b[31m"):
        message = _error(requests.post(f"{base}/connectors", timeout=30, json={
            "name": name, "config": {"connector.class": "ScriptedSource"}}), 400)
        assert "control characters" in message
        _error(requests.put(f"{base}/connectors/{requests.utils.quote(name, safe='')}/config",
                            json={"connector.class": "ScriptedSource"}, timeout=30), 400)
    assert h.herder.connectors() == []
    _no_control_characters_logged(caplog)
