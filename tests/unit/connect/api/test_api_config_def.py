"""ConfigDef: parsing Kafka's string forms, validators, validate(), describe(), embed()."""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

import pytest

from connect.api.config import (
    NO_DEFAULT,
    AbstractConfig,
    CaseInsensitiveValidString,
    CompositeValidator,
    Config,
    ConfigDef,
    ConfigType,
    ConfigValue,
    Importance,
    LambdaValidator,
    NonEmptyString,
    NonNullValidator,
    Password,
    Range,
    ValidList,
    ValidString,
    Width,
    parse_value,
    to_config_string,
)
from connect.api.errors import ConfigError

T = ConfigType
HIGH = Importance.HIGH

PARSED = [
    (T.BOOLEAN, "true", True),
    (T.BOOLEAN, " FALSE ", False),
    (T.BOOLEAN, True, True),
    (T.STRING, "  padded ", "padded"),
    (T.INT, "42", 42),
    (T.INT, " -7 ", -7),
    (T.INT, "+5", 5),
    (T.INT, 2**31 - 1, 2**31 - 1),
    (T.SHORT, "-32768", -32768),
    (T.LONG, "9223372036854775807", 2**63 - 1),
    (T.DOUBLE, "1.5", 1.5),
    (T.DOUBLE, "1e-3", 0.001),
    (T.DOUBLE, "-Infinity", float("-inf")),
    (T.DOUBLE, 3, 3.0),
    (T.LIST, "a,b", ["a", "b"]),
    (T.LIST, " a , b ,c", ["a", "b", "c"]),
    (T.LIST, "a,,b", ["a", "", "b"]),
    (T.LIST, "", []),
    (T.LIST, "  ", []),
    (T.LIST, ("x", "y"), ["x", "y"]),
    (T.CLASS, "collections.OrderedDict", collections.OrderedDict),
    (T.CLASS, "collections:OrderedDict", collections.OrderedDict),
    (T.CLASS, dict, dict),
    (T.PASSWORD, "s3cret", Password("s3cret")),
    (T.INT, None, None),
]


@pytest.mark.parametrize("config_type, raw, expected", PARSED)
def test_parse_value_accepts_kafkas_string_forms(config_type, raw, expected):
    parsed = parse_value("k", config_type, raw)
    assert parsed == expected
    assert type(parsed) is type(expected)


REJECTED = [
    (T.BOOLEAN, "yes", "either true or false"),
    (T.BOOLEAN, 1, "either true or false"),
    (T.STRING, 5, "Expected value to be a string, but it was a int"),
    (T.INT, "1.5", "Not a number of type INT"),
    (T.INT, "1_000", "Not a number of type INT"),
    (T.INT, "2147483648", "range"),
    (T.INT, True, "Not a number of type INT"),
    (T.SHORT, "32768", "range"),
    (T.LONG, str(2**63), "range"),
    (T.DOUBLE, "1_0.5", "Not a number of type DOUBLE"),
    (T.DOUBLE, "abc", "Not a number of type DOUBLE"),
    (T.LIST, 5, "comma separated list"),
    (T.CLASS, "no_such_module_xyz.Thing", "could not be found"),
    (T.CLASS, "json", "could not be found"),
    (T.CLASS, "json.dumps", "could not be found"),
    (T.PASSWORD, 5, "Expected a string for a password"),
]


@pytest.mark.parametrize("config_type, raw, message", REJECTED)
def test_parse_value_errors_name_the_key(config_type, raw, message):
    with pytest.raises(ConfigError, match=message) as info:
        parse_value("my.key", config_type, raw)
    assert info.value.name == "my.key"
    assert "my.key" in str(info.value)


def _define(definition: ConfigDef, name: str, config_type: ConfigType, **kw: Any) -> ConfigDef:
    kw.setdefault("importance", HIGH)
    kw.setdefault("documentation", f"The {name}.")
    return definition.define(name, config_type, **kw)


def _connector_def() -> ConfigDef:
    definition = ConfigDef()
    _define(definition, "tasks.max", T.INT, default="1", validator=Range.at_least(1))
    _define(definition, "mode", T.STRING, default="bulk", validator=ValidString.in_("bulk", "cdc"))
    _define(definition, "hosts", T.LIST, group="Connection", order_in_group=1)
    _define(definition, "password", T.PASSWORD, default=None, group="Connection")
    return definition


def test_parse_fills_defaults_parses_defaults_and_ignores_unknown_keys():
    parsed = _connector_def().parse({"hosts": "a:1,b:2", "unknown.key": "x"})
    assert parsed == {"tasks.max": 1, "mode": "bulk", "hosts": ["a:1", "b:2"], "password": None}


def test_parse_raises_on_missing_required_key_with_kafkas_message():
    with pytest.raises(ConfigError) as info:
        _connector_def().parse({})
    assert str(info.value) == 'Missing required configuration "hosts" which has no default value.'
    assert info.value.name == "hosts"


def test_parse_runs_validators():
    with pytest.raises(
        ConfigError, match=r"Invalid value 0 for configuration tasks\.max: Value must be at least 1"
    ):
        _connector_def().parse({"hosts": "a", "tasks.max": "0"})


def test_define_checks_the_default_and_duplicates():
    with pytest.raises(ConfigError, match="Value must be at least 1"):
        _define(ConfigDef(), "n", T.INT, default=0, validator=Range.at_least(1))
    with pytest.raises(ConfigError, match="Not a number of type INT"):
        _define(ConfigDef(), "n", T.INT, default="many")
    with pytest.raises(ConfigError, match="defined twice"):
        _define(_define(ConfigDef(), "n", T.INT), "n", T.STRING)


def test_validate_reports_every_bad_key():
    values = _connector_def().validate({"tasks.max": "zero", "mode": "stream"})
    by_name = {v.name: v for v in values}
    assert [v.name for v in values] == ["tasks.max", "mode", "hosts", "password"]
    assert by_name["tasks.max"].errors == [
        "Invalid value zero for configuration tasks.max: Not a number of type INT"
    ]
    assert by_name["tasks.max"].value is None
    assert by_name["mode"].errors == [
        "Invalid value stream for configuration mode: String must be one of: bulk, cdc"
    ]
    assert by_name["mode"].value == "stream"
    assert by_name["hosts"].errors == [
        'Missing required configuration "hosts" which has no default value.'
    ]
    assert by_name["password"].errors == []
    assert Config(values).error_count == 3


def test_config_add_error_lands_on_the_named_key_else_the_fallback_else_the_first():
    config = Config(_connector_def().validate({"hosts": "h"}))
    config.add_error("mode", "a cross-key rule")
    config.add_error(None, "no key named", "hosts")
    config.add_error("no.such.key", "an undeclared key", "hosts")
    config.add_error("no.such.key", "nothing else to go on")
    by_name = {v.name: v.errors for v in config.config_values}
    assert by_name["mode"] == ["a cross-key rule"]
    assert by_name["hosts"] == ["no key named", "an undeclared key"]
    assert by_name["tasks.max"] == ["nothing else to go on"]
    assert config.error_count == 4
    with pytest.raises(KeyError):
        Config([]).add_error("hosts", "nowhere to go")


def test_validate_of_a_good_config_has_no_errors():
    values = _connector_def().validate({"hosts": "h", "tasks.max": "3"})
    assert all(v.errors == [] for v in values)
    assert {v.name: v.value for v in values}["tasks.max"] == 3


class _TableRecommender:
    def valid_values(self, name: str, parsed_config: Mapping[str, Any]) -> list[Any]:
        if parsed_config.get("db") == "broken":
            raise ConfigError(name, "cannot list tables of database broken")
        return [f"{parsed_config['db']}.t1", f"{parsed_config['db']}.t2"]

    def visible(self, name: str, parsed_config: Mapping[str, Any]) -> bool:
        return parsed_config.get("db") != "none"


def _recommended_def() -> ConfigDef:
    definition = _define(ConfigDef(), "db", T.STRING, dependents=["table"])
    return _define(definition, "table", T.STRING, default="", recommender=_TableRecommender())


def test_validate_applies_recommenders():
    table = _recommended_def().validate({"db": "shop"})[1]
    assert (table.recommended_values, table.visible) == (["shop.t1", "shop.t2"], True)
    assert _recommended_def().validate({"db": "none"})[1].visible is False
    broken = _recommended_def().validate({"db": "broken"})[1]
    assert broken.errors == ["cannot list tables of database broken"]


def test_validate_reports_undefined_dependents():
    definition = _define(ConfigDef(), "a", T.STRING, default="", dependents=["ghost"])
    ghost = definition.validate({})[-1]
    assert ghost == ConfigValue(
        "ghost", errors=["ghost is referred in the dependents, but not defined."], visible=False
    )


def test_describe_matches_kafkas_config_key_info():
    described = _connector_def().describe()
    assert described[0] == {
        "name": "tasks.max",
        "type": "INT",
        "required": False,
        "default_value": "1",
        "importance": "HIGH",
        "documentation": "The tasks.max.",
        "group": None,
        "width": "NONE",
        "display_name": "tasks.max",
        "dependents": [],
        "order": -1,
    }
    hosts = described[2]
    assert (hosts["required"], hosts["default_value"], hosts["group"], hosts["order"]) == (
        True,
        None,
        "Connection",
        1,
    )


def test_groups_in_order_of_first_use_and_names_in_definition_order():
    definition = _connector_def()
    assert definition.groups() == ["Connection"]
    assert definition.names() == ["tasks.max", "mode", "hosts", "password"]
    assert definition.default_values() == {"tasks.max": 1, "mode": "bulk", "password": None}
    assert "hosts" in definition.config_keys
    with pytest.raises(TypeError):
        definition.config_keys["x"] = definition.config_keys["hosts"]  # type: ignore[index]


def test_copy_constructor_extends_without_changing_the_base():
    base = _connector_def()
    extended = _define(ConfigDef(base), "extra", T.BOOLEAN, default=False)
    assert "extra" in extended.names() and "extra" not in base.names()


def test_embed_prefixes_names_groups_orders_and_dependents():
    child = _define(ConfigDef(), "regex", T.STRING, validator=NonEmptyString())
    _define(child, "replacement", T.STRING, default="", dependents=["regex"], group="Rename")
    parent = ConfigDef().embed("transforms.route.", "Transforms: route", 0, child)
    keys = parent.config_keys
    assert list(keys) == ["transforms.route.regex", "transforms.route.replacement"]
    assert keys["transforms.route.regex"].group == "Transforms: route"
    assert keys["transforms.route.replacement"].group == "Transforms: route: Rename"
    assert [k.order_in_group for k in keys.values()] == [0, 1]
    assert keys["transforms.route.replacement"].dependents == ("transforms.route.regex",)
    [regex, _] = parent.validate({"transforms.route.regex": ""})
    assert regex.errors == [
        "Invalid value  for configuration transforms.route.regex: String must be non-empty"
    ]


def test_embedded_recommenders_see_unprefixed_names():
    parent = ConfigDef().embed("src.", "Source", 0, _recommended_def())
    table = parent.validate({"src.db": "shop"})[1]
    assert table.recommended_values == ["shop.t1", "shop.t2"]


@pytest.mark.parametrize(
    "validator, good, bad, message, described",
    [
        (Range.at_least(1), [1, 10**9], [0, None], "at least 1|non-null", "[1,...]"),
        (Range.between(1, 3), [1, 3], [0, 4], "at least 1|no more than 3", "[1,...,3]"),
        (ValidString.in_("a", "b"), ["a"], ["A", None], "one of: a, b", "[a, b]"),
        (CaseInsensitiveValidString.in_("All", "None"), ["all", "NONE"], ["some"], "case", None),
        (
            ValidList.in_("x", "y"),
            [[], ["x", "y"]],
            [["z"], None],
            "Invalid value z|non-null",
            "[x, y]",
        ),
        (ValidList.in_("x", allow_empty=False), [["x"]], [[]], "must not be empty", None),
        (NonEmptyString(), ["a", None], [""], "non-empty", "non-empty string"),
        (NonNullValidator(), [0, ""], [None], "non null", None),
        (
            CompositeValidator.of(NonNullValidator(), Range.at_least(0)),
            [0],
            [None, -1],
            "non null|at least 0",
            None,
        ),
    ],
)
def test_validators(validator, good, bad, message, described):
    for value in good:
        validator.ensure_valid("k", value)
    for value in bad:
        with pytest.raises(ConfigError, match=message) as info:
            validator.ensure_valid("k", value)
        assert info.value.name == "k"
    if described is not None:
        assert str(validator) == described


def test_lambda_validator_uses_the_function_and_description():
    def even(name: str, value: Any) -> None:
        if value % 2:
            raise ConfigError(name, "must be even", value=value)

    validator = LambdaValidator.with_(even, "an even number")
    validator.ensure_valid("n", 4)
    with pytest.raises(ConfigError, match="Invalid value 3 for configuration n: must be even"):
        validator.ensure_valid("n", 3)
    assert str(validator) == "an even number"


class _SourceConfig(AbstractConfig):
    CONFIG_DEF = _connector_def()

    def __init__(self, props: Mapping[str, Any]) -> None:
        super().__init__(self.CONFIG_DEF, props)


def test_abstract_config_typed_getters():
    config = _SourceConfig({"hosts": "a,b", "password": "pw", "key.converter.x": "1"})
    assert config.get_int("tasks.max") == 1
    assert config.get_string("mode") == "bulk"
    assert config.get_list("hosts") == ["a", "b"]
    assert config.get_password("password") == Password("pw")
    assert config.values()["hosts"] == ["a", "b"]
    assert config.originals_with_prefix("key.converter.") == {"x": "1"}
    assert config.originals_with_prefix("key.", strip=False) == {"key.converter.x": "1"}
    assert config == _SourceConfig({"hosts": "a,b", "password": "pw", "key.converter.x": "1"})


def test_abstract_config_refuses_unknown_keys_and_wrong_getters():
    config = _SourceConfig({"hosts": "a"})
    with pytest.raises(ConfigError, match="Unknown configuration 'nope'"):
        config.get("nope")
    with pytest.raises(
        ConfigError, match=r"declared STRING; get_int\(\) reads INT or SHORT or LONG"
    ):
        config.get_int("mode")
    with pytest.raises(ConfigError, match="Missing required"):
        _SourceConfig({})


def test_to_config_string():
    assert to_config_string(True, T.BOOLEAN) == "true"
    assert to_config_string(["a", "b"], T.LIST) == "a,b"
    assert to_config_string(collections.OrderedDict, T.CLASS) == "collections.OrderedDict"
    assert to_config_string(None, T.STRING) is None
    assert to_config_string(2.5, T.DOUBLE) == "2.5"


def test_config_key_display_name_and_width():
    definition = _define(
        ConfigDef(), "k", T.STRING, default="", width=Width.LONG, display_name="Key"
    )
    key = definition.config_keys["k"]
    assert (key.display_name, key.width, key.has_default) == ("Key", Width.LONG, True)
    assert _define(ConfigDef(), "r", T.STRING).config_keys["r"].default is NO_DEFAULT
