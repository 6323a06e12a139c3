"""``docker/compose.yaml`` checked where no Docker engine runs: against the Compose
specification's JSON schema (vendored in ``tests/data``), for consistency (every reference,
file, port, volume, password and connector file it names exists or agrees), and against
``ferry demo``: each Ferry service's command and environment, put through the image's entry
point function (``core.cli.container``), is a valid ``ferry`` command line whose
properties equal the demo's topology (``demo.topology``) and parse with the service's own
config parser."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from core.cli.container import container_command
from core.cli.demo import connectors, topology
from core.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[3]
DOCKER = ROOT / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
LOG = "kafka://broker1:9092,broker2:9092,broker3:9092"
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}


def test_the_file_follows_the_compose_specification() -> None:
    schema = json.loads((ROOT / "tests" / "data" / "compose-spec.json").read_text())
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in Draft7Validator(schema).iter_errors(COMPOSE)]
    assert errors == []
    assert COMPOSE["name"] == "ferry-demo"


def test_the_schema_check_can_fail() -> None:
    schema = json.loads((ROOT / "tests" / "data" / "compose-spec.json").read_text())
    broken = {"services": {"x": {"image": "a:1", "depends_on": {"y": {"condition": "ready"}},
                                 "healthcheck": {"intervall": "1s"}}}}
    assert len(list(Draft7Validator(schema).iter_errors(broken))) >= 2


def _depends(service: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return service.get("depends_on") or {}


def test_depends_on_names_real_services_and_conditions_they_can_meet() -> None:
    for name, service in SERVICES.items():
        deps = _depends(service)
        assert isinstance(deps, dict), f"{name}: use the long form of depends_on"
        for target, spec in deps.items():
            assert target in SERVICES, f"{name} depends on unknown {target}"
            condition = spec["condition"]
            assert condition in CONDITIONS
            if condition == "service_healthy":
                assert "healthcheck" in SERVICES[target], f"{target} has no healthcheck"
            if condition == "service_completed_successfully":
                assert "restart" not in SERVICES[target], f"one-shot {target} restarts"


def test_every_long_running_service_has_a_complete_healthcheck() -> None:
    one_shots = {t for s in SERVICES.values() for t, spec in _depends(s).items()
                 if spec["condition"] == "service_completed_successfully"}
    for name, service in SERVICES.items():
        if name in one_shots or name in ("spark", "load-generator"):
            continue  # jobs, and clients nothing waits for
        check = service.get("healthcheck")
        assert check, f"{name} has no healthcheck"
        assert {"test", "interval", "timeout", "retries", "start_period"} <= set(check), name


def test_images_are_pinned_and_builds_exist() -> None:
    dockerfile_targets = set(re.findall(r"^FROM \S+ AS (\w+)$",
                                        (DOCKER / "Dockerfile").read_text(), re.M))
    for name, service in SERVICES.items():
        image = service["image"]
        tag = re.sub(r"\$\{\w+:-([^}]+)\}", r"\1", image).rpartition(":")[2]
        assert tag and "/" not in tag and tag != "latest", f"{name}: unpinned {image}"
        if "build" in service:
            build = service["build"]
            assert (DOCKER / build["context"]).resolve() == ROOT
            assert (ROOT / build["dockerfile"]).is_file()
            assert build["target"] in dockerfile_targets


def test_volumes_and_mounted_files_exist_and_host_ports_are_unique() -> None:
    declared = set(COMPOSE["volumes"])
    used: set[str] = set()
    ports: list[str] = []
    for name, service in SERVICES.items():
        for mount in service.get("volumes", []):
            source = mount.split(":")[0]
            if source.startswith("."):
                assert (DOCKER / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in declared, f"{name} uses undeclared volume {source}"
                used.add(source)
        ports += [p.split(":")[0] for p in service.get("ports", [])]
    assert used == declared
    assert len(ports) == len(set(ports)), sorted(ports)


def _container_port(service: str, port: int) -> bool:
    published = [int(p.split(":")[-1]) for p in SERVICES[service].get("ports", [])]
    command = " ".join(SERVICES[service].get("command", []))
    return port in published or f":{port}" in command


def test_the_connector_files_are_the_ones_posted_and_reach_real_services() -> None:
    script = SERVICES["register-connectors"]["command"][0]
    posted = re.search(r"for f in ([\w\s-]+?); do", script).group(1).split()
    assert tuple(f"{f}.json" for f in posted) == connectors.CONNECTOR_FILES
    assert "./connectors:/connectors:ro" in SERVICES["register-connectors"]["volumes"]
    files = {c["name"]: c["config"] for c in connectors.load(DOCKER / "connectors")}
    for address in connectors.COMPOSE_ADDRESSES.values():
        host, _, port = address.partition(":")
        assert host in SERVICES and _container_port(host, int(port)), address
    pg_env = SERVICES["postgres"]["environment"]
    assert pg_env["POSTGRES_PASSWORD"] == connectors.COMPOSE_PG_PASSWORD
    cdc, s3 = files["shop-cdc"], files["s3-raw-changes"]
    jdbc, search = files["jdbc-order-totals"], files["opensearch-orders"]
    assert cdc["database.password"] == jdbc["connection.password"] == pg_env["POSTGRES_PASSWORD"]
    assert cdc["database.dbname"] == pg_env["POSTGRES_DB"] == jdbc["connection.url"].rsplit("/")[-1]
    dsn = dict(kv.split("=") for kv in SERVICES["load-generator"]["command"][1].split())
    assert dsn == {"host": "postgres", "dbname": "shop", "user": "postgres",
                   "password": pg_env["POSTGRES_PASSWORD"]}
    minio = SERVICES["minio"]["environment"]
    assert (s3["aws.access.key.id"], s3["aws.secret.access.key"]) == (
        minio["MINIO_ROOT_USER"], minio["MINIO_ROOT_PASSWORD"])
    assert f"mb --ignore-existing demo/{s3['s3.bucket.name']}" in \
        SERVICES["minio-init"]["command"][0]
    # The CDC source's topics are the S3 sink's; the pipeline's outputs feed the others.
    tables = cdc["table.include.list"].split(",")
    assert s3["topics"].split(",") == [f"{cdc['topic.prefix']}.{t}" for t in tables]
    assert search["topics"] == topology.STATE_TOPIC and jdbc["topics"] == topology.TOTALS_TOPIC
    created = re.findall(r"topics create (\S+)", SERVICES["create-topics"]["command"][0])
    assert created == [topology.STATE_TOPIC, topology.TOTALS_TOPIC]


def test_localized_connector_files_name_only_local_addresses() -> None:
    local = {"postgres": "127.0.0.1:5", "minio": "127.0.0.1:6", "opensearch": "127.0.0.1:7"}
    for connector in connectors.load(DOCKER / "connectors"):
        config = connectors.localize(connector, local, "pw")["config"]
        text = json.dumps(config)
        for service in connectors.COMPOSE_ADDRESSES:
            assert f"{service}:" not in text.replace('"', " "), connector["name"]
        for key in ("database.password", "connection.password"):
            assert config.get(key, "pw") == "pw"
    cdc = connectors.localize(connectors.load(DOCKER / "connectors")[0], local, "pw")
    assert (cdc["config"]["database.hostname"], cdc["config"]["database.port"]) == (
        "127.0.0.1", "5")


def _ferry_services() -> dict[str, tuple[str, list[str], dict[str, str]]]:
    out = {}
    for name, service in SERVICES.items():
        command = service.get("command") or []
        if command[:1] == ["container"]:
            out[name] = (command[1], command[2:], service.get("environment") or {})
    return out


def _parses(argv: list[str]) -> None:
    assert argv[0] == "ferry"
    build_parser().parse_args(argv[1:])  # SystemExit (a usage error) fails the test


def test_every_ferry_service_runs_the_demos_settings_through_the_entry_point(
        tmp_path: Path) -> None:
    services = _ferry_services()
    assert sorted(services) == ["broker1", "broker2", "broker3", "connect1", "connect2",
                                "registry"]
    nodes = [topology.Node(i, f"broker{i}", 9092, 9093, bind="0.0.0.0") for i in (1, 2, 3)]
    assert topology.bootstrap(nodes) == LOG.removeprefix("kafka://")
    for name, (kind, args, env) in services.items():
        prefix = {"broker": "FERRY_BROKER_", "connect": "FERRY_CONNECT_",
                  "registry": "FERRY_REGISTRY_"}[kind]
        assert all(k.startswith(prefix) for k in env), f"{name}: a variable of another kind"
        argv, props, path = container_command(kind, args, env, tmp_path)
        _parses(argv)
        assert argv[argv.index("--config") + 1] == str(path)
        if kind == "broker":
            node = nodes[int(name[-1]) - 1]
            assert props == topology.broker_settings(node, nodes, "/var/lib/ferry/data")
            from core.cluster.config import ClusterConfig

            assert ClusterConfig.parse(props).node_id == node.node_id
            assert args == ["--metrics", "0.0.0.0:9404"]
        elif kind == "connect":
            assert props == topology.worker_settings(LOG)
            from connect.runtime.worker_config import DistributedConfig

            assert DistributedConfig.from_props(props).group_id == topology.CONNECT_GROUP
            assert args[args.index("--advertised-url") + 1] == f"http://{name}:8083"
        else:
            assert props == topology.registry_settings(LOG)
            from schema_registry.config import RegistryConfig

            assert RegistryConfig.from_props(props).log_url == LOG


def test_ferry_broker_runs_the_compose_brokers_as_a_three_node_cluster(tmp_path: Path
                                                                        ) -> None:
    """What ``ferry broker`` does with each broker's command and environment: the settings
    name process.roles, so they go to the cluster path (``load_broker_config`` then
    ``ClusterConfig.parse``, as ``_cluster_node`` runs them), with --metrics accepted."""
    from core.cli.broker import cluster_node_settings, load_broker_config
    from core.cli.container import write_properties
    from core.cluster.config import is_cluster_mode

    ids = set()
    for name, (kind, args, env) in _ferry_services().items():
        if kind != "broker":
            continue
        argv, props, path = container_command(kind, args, env, tmp_path)
        write_properties(path, props)
        parsed = build_parser().parse_args(argv[1:])
        config = load_broker_config(parsed)
        assert is_cluster_mode(config.raw), name
        cluster, metrics = cluster_node_settings(parsed, config)
        assert (metrics.host, metrics.port) == ("0.0.0.0", 9404)
        assert [(v.node_id, v.host, v.port) for v in cluster.voters] == [
            (1, "broker1", 9093), (2, "broker2", 9093), (3, "broker3", 9093)]
        assert cluster.is_broker and cluster.node_id == config.node_id
        assert [(e.name, e.host, e.port) for e in cluster.advertised_listeners] == [
            ("PLAINTEXT", name, 9092)]
        assert cluster.offsets_topic_replication_factor == cluster.default_replication_factor == 3
        assert cluster.min_insync_replicas == 2
        ids.add(cluster.node_id)
    assert ids == {1, 2, 3}


def test_the_spark_job_runs_the_demos_pipeline_command() -> None:
    command = SERVICES["spark"]["command"]
    assert command[:3] == ["pipeline", "run", "cdc_order_totals"]
    assert command[command.index("--log") + 1] == LOG
    rest = command[3:]
    for flag in ("--log", "--master", "--checkpoint"):
        i = rest.index(flag)
        rest = rest[:i] + rest[i + 2:]
    assert tuple(rest) == topology.PIPELINE_ARGS
    _parses(["ferry", *command[:3]])


def test_prometheus_scrapes_services_on_the_ports_they_serve() -> None:
    config = yaml.safe_load((DOCKER / "observability" / "prometheus.yml").read_text())
    for job in config["scrape_configs"]:
        for target in job["static_configs"][0]["targets"]:
            host, _, port = target.partition(":")
            assert host in SERVICES, target
            assert f"0.0.0.0:{port}" in shlex.join(SERVICES[host]["command"]), target


@pytest.mark.parametrize("service", ["broker1", "connect1", "registry"])
def test_a_typo_in_a_variable_name_is_caught(service: str, tmp_path: Path) -> None:
    kind, args, env = _ferry_services()[service]
    env = {**env, next(iter(env)) + "S": "1"}
    _, props, _ = container_command(kind, args, env, tmp_path)
    expected = {"broker": lambda: topology.broker_settings(
        topology.Node(1, "broker1", 9092, 9093, bind="0.0.0.0"),
        [topology.Node(i, f"broker{i}", 9092, 9093, bind="0.0.0.0") for i in (1, 2, 3)],
        "/var/lib/ferry/data"),
        "connect": lambda: topology.worker_settings(LOG),
        "registry": lambda: topology.registry_settings(LOG)}[kind]()
    assert props != expected


def test_docker_compose_config_accepts_the_file_where_the_cli_has_compose() -> None:
    import shutil
    import subprocess

    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True,
                                        timeout=30).returncode != 0:
        pytest.skip("no `docker compose` CLI here; the JSON schema checks above still ran")
    out = subprocess.run([docker, "compose", "-f", str(DOCKER / "compose.yaml"), "config",
                          "-q"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_the_image_is_slim_non_root_exec_form_and_health_checked() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M).group(1)
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-\w+", base), base  # pinned, slim
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    runtime = next(s for s in stages if s.startswith("${PYTHON_IMAGE} AS ferry"))
    assert re.search(r"^USER 10001$", runtime, re.M)
    assert re.search(r"^HEALTHCHECK --interval=\S+ --timeout=\S+ --start-period=\S+ "
                     r"--retries=\d+ \\\n\s+CMD \[", runtime, re.M)
    assert 'ENTRYPOINT ["ferry"]' in runtime
    assert '"ferryman[postgres,s3,jdbc,elasticsearch]"' in runtime
    spark = next(s for s in stages if s.startswith("ferry AS spark"))
    assert "openjdk-17-jre-headless" in spark and re.search(r"^USER 10001$", spark, re.M)
    # Every directory the build copies is a package of the distribution.
    copied = set(re.findall(r"^COPY (\w+) \./\1$", text, re.M))
    import tomllib

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]["find"]["include"]
    assert copied == {p.rstrip("*") for p in include}
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text()
    assert all(f"!{d}/" in ignore for d in copied)
