"""Plugin alias resolution and config-provider placeholders."""

from __future__ import annotations

import pytest

from connect.api import ConfigError, SourceConnector
from connect.runtime.config_providers import (
    ConfigTransformer,
    EnvVarConfigProvider,
    FileConfigProvider,
)
from connect.runtime.plugins import Plugins


class FileStreamSourceConnector(SourceConnector):
    pass


def test_connector_aliases() -> None:
    plugins = Plugins({"FileStreamSource": FileStreamSourceConnector})
    for name in ("FileStreamSource", "FileStreamSourceConnector",
                 "org.apache.kafka.connect.file.FileStreamSourceConnector"):
        assert plugins.connector_class(name) is FileStreamSourceConnector
    with pytest.raises(ConfigError, match=r"connector\.class"):
        plugins.connector_class("NoSuchConnector")


def test_placeholders_resolve(tmp_path, monkeypatch) -> None:
    secrets = tmp_path / "db.properties"
    secrets.write_text("password=s3cret\n")
    monkeypatch.setenv("RT_TEST_USER", "alice")
    t = ConfigTransformer({"file": FileConfigProvider(), "env": EnvVarConfigProvider()})
    out = t.transform({"p": f"${{file:{secrets}:password}}", "u": "${env:RT_TEST_USER}",
                       "u2": "${env::RT_TEST_USER}", "x": "${vault:a:b}"})
    assert out == {"p": "s3cret", "u": "alice", "u2": "alice", "x": "${vault:a:b}"}
