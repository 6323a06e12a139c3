"""Passwords never show their value: not in str, repr, formatting, logs, errors or docs."""

from __future__ import annotations

import copy
import json
import logging
import pickle

import pytest

from connect.api.config import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Password,
    parse_value,
    to_config_string,
)
from connect.api.errors import ConfigError

SECRET = "hunter2-s3cret"


def test_value_is_the_only_way_to_the_secret():
    password = Password(SECRET)
    assert password.value == SECRET
    shown = [
        str(password),
        repr(password),
        f"{password}",
        f"{password!r}",
        f"{password:>30}",
        "%s" % password,  # noqa: UP031
        "%r" % password,  # noqa: UP031
        "{}".format(password),  # noqa: UP032
        format(password, ""),
        repr([password]),
        repr({"pw": password}),
        str((password,)),
    ]
    assert all(SECRET not in text for text in shown)
    assert str(password) == repr(password) == "[hidden]"
    assert f"{password:>10}" == "  [hidden]"


def test_logging_never_shows_the_secret(caplog):
    log = logging.getLogger("ferry.test.password")
    with caplog.at_level(logging.DEBUG, logger="ferry.test.password"):
        password = Password(SECRET)
        log.info("password is %s", password)
        log.info("password is %r", password)
        log.info(password)
        log.info("config %s", {"db.password": password})
    assert SECRET not in caplog.text
    assert caplog.text.count("[hidden]") == 4


def test_json_refuses_rather_than_leaks():
    with pytest.raises(TypeError) as info:
        json.dumps({"pw": Password(SECRET)})
    assert SECRET not in str(info.value)


def test_equality_hash_copy_and_pickle_keep_the_value():
    assert Password(SECRET) == Password(SECRET)
    assert Password(SECRET) != Password("other")
    assert Password(SECRET) != SECRET
    assert hash(Password(SECRET)) == hash(Password(SECRET))
    assert pickle.loads(pickle.dumps(Password(SECRET))).value == SECRET
    assert copy.deepcopy(Password(SECRET)).value == SECRET


def test_passwords_are_immutable():
    password = Password(SECRET)
    with pytest.raises(AttributeError):
        password._value = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Password(b"bytes")  # type: ignore[arg-type]


def _long_enough(name: str, value: Password) -> None:
    # Validators of PASSWORD keys receive the Password object, never the bare string.
    if len(value.value) < 20:
        raise ConfigError(name, "must have at least 20 characters", value=value)


def _definition() -> ConfigDef:
    return (
        ConfigDef()
        .define(
            "db.password",
            ConfigType.PASSWORD,
            default=SECRET,
            importance=Importance.HIGH,
            documentation="The database password.",
        )
        .define(
            "api.key",
            ConfigType.PASSWORD,
            validator=LambdaValidator.with_(_long_enough, "20+ characters"),
            importance=Importance.HIGH,
            documentation="An API key.",
        )
    )


def test_parsed_values_are_passwords_and_repr_is_masked():
    parsed = _definition().parse({"api.key": "a-long-enough-api-key"})
    assert isinstance(parsed["db.password"], Password)
    assert parse_value("k", ConfigType.PASSWORD, f"  {SECRET} ").value == SECRET  # trimmed
    assert SECRET not in repr(parsed)


def test_describe_masks_password_defaults():
    described = _definition().describe()[0]
    assert described["default_value"] == "[hidden]"
    assert SECRET not in json.dumps(_definition().describe())
    assert to_config_string(Password(SECRET), ConfigType.PASSWORD) == "[hidden]"


def test_validation_errors_and_config_values_do_not_show_the_secret():
    values = _definition().validate({"api.key": SECRET})
    text = repr(values) + " ".join(e for v in values for e in v.errors)
    assert SECRET not in text
    assert values[1].errors == [
        "Invalid value [hidden] for configuration api.key: must have at least 20 characters"
    ]
    with pytest.raises(ConfigError) as info:
        _definition().parse({"api.key": SECRET})
    assert SECRET not in str(info.value)


def test_a_validator_given_a_password_reports_it_masked():
    with pytest.raises(ConfigError) as info:
        NonEmptyString().ensure_valid("pw", Password(SECRET))
    assert SECRET not in str(info.value) and "[hidden]" in str(info.value)


def test_abstract_config_repr_masks_passwords():
    config = AbstractConfig(_definition(), {"api.key": "a-long-enough-api-key"})
    assert "a-long-enough-api-key" not in repr(config) and SECRET not in repr(config)
    assert config.get_password("db.password").value == SECRET
