"""Which connector keys are secrets, and masking that keeps configs usable."""

from __future__ import annotations

import pytest

from connect.api import ConfigDef, ConfigType, Importance, SourceConnector
from connect.runtime.plugins import Plugins
from connect.runtime.secrets import (
    MASK,
    is_secret_name,
    mask_config,
    mask_task_config,
    restore_masked,
    secret_keys,
)


class TokenSource(SourceConnector):
    def version(self) -> str:
        return "1"

    def config(self) -> ConfigDef:
        return ConfigDef().define("api.token", ConfigType.PASSWORD, default=None,
                                  importance=Importance.HIGH, documentation="A token.")

    def start(self, props: object) -> None:
        """Nothing to start."""

    def task_class(self) -> type:
        return object

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None:
        """Nothing to stop."""


@pytest.mark.parametrize(("key", "secret"), [
    ("password", True), ("database.password", True), ("connection.password", True),
    ("ssl.key.password", True), ("ssl.truststore.password", True),
    ("sasl.jaas.config", True), ("producer.override.sasl.jaas.config", True),
    ("value.converter.basic.auth.user.info", True), ("aws.secret.access.key", True),
    ("Database.PASSWORD", True),
    ("password.encoder.iterations", False), ("passwordless", False), ("user", False),
    ("connection.user", False), ("topic", False), ("jaas.config.path.note", False),
])
def test_secret_names(key: str, secret: bool) -> None:
    assert is_secret_name(key) is secret


def test_password_typed_keys_of_the_connector_are_secrets() -> None:
    plugins = Plugins({"TokenSource": TokenSource})
    config = {"connector.class": "TokenSource", "api.token": "t0k", "db.password": "p",
              "topic": "x"}
    assert secret_keys(plugins, config) == {"api.token", "db.password"}
    # An unknown class still masks by name.
    assert secret_keys(plugins, {"connector.class": "Nope", "db.password": "p"}) == {
        "db.password"}


def test_masking_shows_references_and_empty_values_as_written() -> None:
    config = {"a.password": "s3cret", "b.password": "${env:B}", "c.password": "",
              "topic": "t"}
    assert mask_config(config, {"a.password", "b.password", "c.password"}) == {
        "a.password": MASK, "b.password": "${env:B}", "c.password": "", "topic": "t"}


def test_task_configs_hide_secret_values_under_other_keys() -> None:
    connector = {"db.password": "s3cret", "topic": "t"}
    task = {"pw": "s3cret", "topic": "t", "ssl.key.password": "k"}
    assert mask_task_config(task, connector, {"db.password"}) == {
        "pw": MASK, "topic": "t", "ssl.key.password": MASK}


def test_restore_puts_back_stored_secrets_sent_as_hidden() -> None:
    plugins = Plugins({"TokenSource": TokenSource})
    stored = {"connector.class": "TokenSource", "api.token": "t0k", "db.password": "old"}
    sent = {"connector.class": "TokenSource", "api.token": MASK, "db.password": "new",
            "note": MASK}
    assert restore_masked(plugins, sent, stored) == {
        "connector.class": "TokenSource", "api.token": "t0k", "db.password": "new",
        "note": MASK}
    assert restore_masked(plugins, sent, None) == sent
