"""The container entry point's environment convention (``core.cli.container``): the names
map as Confluent's images map theirs, and bad names are refused with the variable named."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli.container import (
    container_command,
    env_to_properties,
    properties_to_env,
    write_properties,
)
from core.cli.errors import CliError


def test_single_double_and_triple_underscores_map_to_dot_underscore_and_dash() -> None:
    env = {"FERRY_BROKER_NODE_ID": "1",
           "FERRY_BROKER_CONTROLLER_QUORUM_VOTERS": "1@broker1:9093",
           "FERRY_BROKER_CONFLUENT_SUPPORT___METRICS__ENABLE": "false",
           "FERRY_BROKER_A___B__C_D": "x",
           "FERRY_CONNECT_GROUP_ID": "not mine", "PATH": "/bin"}
    assert env_to_properties(env, "FERRY_BROKER_") == {
        "a-b_c.d": "x", "confluent.support-metrics_enable": "false",
        "controller.quorum.voters": "1@broker1:9093", "node.id": "1"}


def test_values_are_kept_verbatim_and_other_prefixes_ignored() -> None:
    env = {"FERRY_REGISTRY_LISTENERS": "http://0.0.0.0:8081",
           "FERRY_REGISTRYX": "ignored", "FERRY_BROKER_NODE_ID": "1"}
    assert env_to_properties(env, "FERRY_REGISTRY_") == {"listeners": "http://0.0.0.0:8081"}


@pytest.mark.parametrize("name", ["FERRY_BROKER_", "FERRY_BROKER__NODE", "FERRY_BROKER_NODE_",
                                  "FERRY_BROKER_A____B"])
def test_a_name_that_maps_to_no_property_is_refused_naming_the_variable(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        env_to_properties({name: "1"}, "FERRY_BROKER_")


def test_container_command_runs_the_services_own_command_with_the_file(tmp_path: Path) -> None:
    env = {"FERRY_CONNECT_BOOTSTRAP_SERVERS": "broker1:29092",
           "FERRY_CONNECT_GROUP_ID": "ferry-demo"}
    argv, props, path = container_command("connect", ["--rest", "0.0.0.0:8083"], env,
                                           tmp_path)
    assert argv == ["ferry", "connect", "distributed", "--config", str(path),
                    "--rest", "0.0.0.0:8083"]
    assert props == {"bootstrap.servers": "broker1:29092", "group.id": "ferry-demo"}
    with pytest.raises(CliError, match="unknown service"):
        container_command("ksql", [], env, tmp_path)


def test_the_properties_file_reads_back_as_java_properties(tmp_path: Path) -> None:
    from core.broker.config import load_config_file

    path = tmp_path / "x.properties"
    write_properties(path, {"a.b": "c:d=e", "path": "C:\\data", "empty": ""})
    assert load_config_file(str(path)) == {"a.b": "c:d=e", "path": "C:\\data", "empty": ""}


@given(st.dictionaries(
    st.from_regex(r"[a-z0-9]{1,6}(?:[._-][a-z0-9]{1,6}){0,4}", fullmatch=True),
    st.text(max_size=10), max_size=8))
def test_properties_to_env_is_the_inverse_of_env_to_properties(props: dict[str, str]) -> None:
    assert env_to_properties(properties_to_env(props, "FERRY_CONNECT_"),
                             "FERRY_CONNECT_") == props


@pytest.mark.parametrize("key", ["a..b", "a._b", "Upper", "a:b", "", "a.", "_a"])
def test_a_property_the_convention_cannot_spell_is_refused(key: str) -> None:
    with pytest.raises(ValueError, match="variable name"):
        properties_to_env({key: "1"}, "FERRY_BROKER_")
