"""chain_config_def: declaring a connector's transform and predicate keys for validation."""

from __future__ import annotations

from connect.api import ConfigDef, ConfigType, Importance
from connect.transforms import chain_config_def

PROPS = {
    "transforms": "route,drop,bad",
    "transforms.route.type": "RegexRouter",
    "transforms.route.regex": "(",
    "transforms.drop.type": "Filter",
    "transforms.drop.predicate": "missing",
    "transforms.bad.type": "Nope",
    "predicates": "topic",
    "predicates.topic.type": "TopicNameMatches",
}


def errors(definition: ConfigDef, props: dict[str, str]) -> dict[str, list[str]]:
    return {value.name: value.errors for value in definition.validate(props) if value.errors}


def test_declares_stage_keys_and_embeds_plugin_keys():
    definition = chain_config_def(PROPS)
    assert definition.names() == [
        "transforms",
        "predicates",
        "transforms.route.type",
        "transforms.route.regex",
        "transforms.route.replacement",
        "transforms.route.predicate",
        "transforms.route.negate",
        "transforms.drop.type",
        "transforms.drop.predicate",
        "transforms.drop.negate",
        "transforms.bad.type",
        "transforms.bad.predicate",
        "transforms.bad.negate",
        "predicates.topic.type",
        "predicates.topic.pattern",
    ]
    assert definition.config_keys["transforms.route.regex"].group == "Transforms: route"
    assert definition.config_keys["predicates.topic.pattern"].group == "Predicates: topic"


def test_validate_reports_every_problem_on_the_key_written():
    found = errors(chain_config_def(PROPS), PROPS)
    assert set(found) == {
        "transforms.route.regex",
        "transforms.route.replacement",
        "transforms.drop.predicate",
        "transforms.bad.type",
        "predicates.topic.pattern",
    }
    assert "Invalid regex" in found["transforms.route.regex"][0]
    assert "there is no predicate with alias missing" in found["transforms.drop.predicate"][0]
    assert "Unknown transformation type 'Nope'" in found["transforms.bad.type"][0]


def test_a_valid_config_has_no_errors_and_base_keys_are_kept():
    base = ConfigDef().define(
        "name", ConfigType.STRING, importance=Importance.HIGH, documentation="n"
    )
    props = {
        "name": "c",
        "transforms": "f",
        "transforms.f.type": "connect.transforms.filter:Filter",
        "transforms.f.predicate": "t",
        "transforms.f.negate": "true",
        "predicates": "t",
        "predicates.t.type": "RecordIsTombstone",
    }
    definition = chain_config_def(props, base)
    assert definition.names()[0] == "name"
    assert errors(definition, props) == {}


def test_duplicate_aliases_are_reported_once():
    props = {"transforms": "a,a", "transforms.a.type": "Filter"}
    found = errors(chain_config_def(props), props)
    assert found == {
        "transforms": ["Invalid value a,a for configuration transforms: Duplicate alias provided."]
    }
