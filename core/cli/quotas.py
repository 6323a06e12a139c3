"""``ferry quotas``: client quotas on a broker, in the style of ``kafka-configs``.

    ferry quotas alter --bootstrap-server B --user alice \\
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    ferry quotas alter --bootstrap-server B --user-default --add-config request_percentage=50
    ferry quotas alter --bootstrap-server B --client-id app --delete-config producer_byte_rate
    ferry quotas describe --bootstrap-server B [--user alice] [--client-id app]

``--user-default`` and ``--client-default`` name the default entities (``<default>``).
"""

from __future__ import annotations

import argparse
import sys

from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from core.broker.security.quotas import CLIENT_ID, QUOTA_KEYS, USER
from core.cli.admin_requests import add_bootstrap_option, check_error, send_admin_request
from core.cli.errors import CliError
from core.cli.options import add_command

__all__ = ["register"]

_EXACT, _DEFAULT, _ANY = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``quotas`` and its subcommands."""
    quotas = add_command(subparsers, "quotas",
                         "alter and describe client quotas (like kafka-configs)")
    commands = quotas.add_subparsers(dest="quotas_command", metavar="COMMAND", required=True)
    alter = add_command(commands, "alter", "set or remove quotas of a user and/or client id")
    _entity_options(alter)
    alter.add_argument("--add-config", default="", metavar="K=V,...",
                       help=f"quotas to set: {', '.join(QUOTA_KEYS)}")
    alter.add_argument("--delete-config", default="", metavar="K,...", help="quotas to remove")
    alter.set_defaults(func=_alter)
    describe = add_command(commands, "describe", "list quotas")
    _entity_options(describe)
    describe.set_defaults(func=_describe)


def _entity_options(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_option(parser)
    user = parser.add_mutually_exclusive_group()
    user.add_argument("--user", metavar="NAME")
    user.add_argument("--user-default", action="store_true", help="the default user")
    client = parser.add_mutually_exclusive_group()
    client.add_argument("--client-id", metavar="ID")
    client.add_argument("--client-default", action="store_true", help="the default client id")


def _entity(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    entity: list[tuple[str, str | None]] = []
    if args.user is not None or args.user_default:
        entity.append((USER, None if args.user_default else args.user))
    if args.client_id is not None or args.client_default:
        entity.append((CLIENT_ID, None if args.client_default else args.client_id))
    return entity


def _alter(args: argparse.Namespace) -> int:
    entity = _entity(args)
    if not entity:
        raise CliError("name the entity: --user, --user-default, --client-id or "
                       "--client-default")
    ops = []
    for item in filter(None, (i.strip() for i in args.add_config.split(","))):
        key, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = None
        if not sep or number is None:
            raise CliError(f"--add-config {item!r}: expected KEY=NUMBER, e.g. "
                           "producer_byte_rate=1048576")
        ops.append(AlterClientQuotasRequest.EntryData.OpData(key=key.strip(), value=number,
                                                             remove=False))
    for key in filter(None, (k.strip() for k in args.delete_config.split(","))):
        ops.append(AlterClientQuotasRequest.EntryData.OpData(key=key, value=0.0, remove=True))
    if not ops:
        raise CliError("nothing to change: give --add-config and/or --delete-config")
    request = AlterClientQuotasRequest(validate_only=False, entries=[
        AlterClientQuotasRequest.EntryData(
            entity=[AlterClientQuotasRequest.EntryData.EntityData(entity_type=t, entity_name=n)
                    for t, n in entity],
            ops=ops)])
    response = send_admin_request(args, request)
    for entry in response.entries:
        check_error(entry.error_code, entry.error_message)
    sys.stdout.write(f"altered quotas of {_entity_text(entity)}\n")
    return 0


def _describe(args: argparse.Namespace) -> int:
    components = [DescribeClientQuotasRequest.ComponentData(
        entity_type=t, match_type=_DEFAULT if n is None else _EXACT, match=n)
        for t, n in _entity(args)]
    request = DescribeClientQuotasRequest(components=components, strict=False)
    response = send_admin_request(args, request)
    check_error(response.error_code, response.error_message)
    for entry in response.entries or ():
        entity = [(e.entity_type, e.entity_name) for e in entry.entity]
        values = ",".join(f"{v.key}={_number(v.value)}" for v in entry.values)
        sys.stdout.write(f"Quota configs for {_entity_text(entity)} are {values}\n")
    return 0


def _entity_text(entity: list[tuple[str, str | None]]) -> str:
    names = {USER: "user-principal", CLIENT_ID: "client-id"}
    ordered = sorted(entity, key=lambda e: e[0] != USER)  # the user first, as Kafka
    return ", ".join(f"{names.get(t, t)} '{'<default>' if n is None else n}'"
                     for t, n in ordered)


def _number(value: float) -> str:
    """1048576.0 -> 1048576, 12.5 -> 12.5: whole rates without a trailing .0."""
    return str(int(value)) if float(value).is_integer() else repr(value)
