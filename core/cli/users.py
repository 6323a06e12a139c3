"""``ferry users``: SCRAM credentials on a broker (like ``kafka-configs --entity-type users``).

Talks to the broker named by ``--log kafka://HOST:PORT`` with DescribeUserScramCredentials
and AlterUserScramCredentials; ``--command-config`` gives the admin's own security
settings. Passwords are salted on this side: the broker never receives them.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from core.backends.errors import BackendError
from core.cli.admin_requests import retry_unreachable
from core.cli.errors import CliError
from core.cli.options import add_command, command_config, resolve_log_url

__all__ = ["register"]

T = TypeVar("T")

_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``users`` and its subcommands."""
    users = add_command(subparsers, "users", "list, set and delete SCRAM users of a broker")
    commands = users.add_subparsers(dest="users_command", metavar="COMMAND", required=True)
    listing = add_command(commands, "list", "users with SCRAM credentials, and their mechanisms")
    listing.set_defaults(func=_list)
    setting = add_command(commands, "set", "create a user or change its password")
    setting.add_argument("name", metavar="USER")
    setting.add_argument("--mechanism", choices=_MECHANISMS, action="append",
                         help="SCRAM mechanism (repeatable; default: both)")
    setting.add_argument("--iterations", type=int, default=4096, metavar="N",
                         help="PBKDF2 iterations, 4096-16384 (default 4096)")
    setting.add_argument("--password-file", metavar="FILE",
                         help="read the password from FILE (default: prompt, or stdin when "
                              "it is not a terminal)")
    setting.set_defaults(func=_set)
    delete = add_command(commands, "delete", "remove a user's SCRAM credentials")
    delete.add_argument("name", metavar="USER")
    delete.add_argument("--mechanism", choices=_MECHANISMS, action="append",
                        help="SCRAM mechanism (repeatable; default: every one it has)")
    delete.set_defaults(func=_delete)


def _admin(args: argparse.Namespace):  # -> kafka.KafkaAdminClient
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    from core.backends.kafka.config import parse_bootstrap
    from core.backends.security import ClientSecurity, ClientSecurityError

    url = resolve_log_url(args)
    try:
        servers = [str(a) for a in parse_bootstrap(url)]
        security = ClientSecurity.parse(command_config(args))
        options = security.kafka_python_options()
    except (BackendError, ClientSecurityError, ValueError) as exc:
        raise CliError(f"ferry users talks to a broker (--log kafka://HOST:PORT): {exc}"
                       ) from exc
    # kafka-python logs every retry; the one line that matters is ours
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    try:
        return KafkaAdminClient(bootstrap_servers=servers, client_id="ferry-users",
                                request_timeout_ms=20000, bootstrap_timeout_ms=10000,
                                **options)
    except KafkaError as exc:
        raise CliError(f"cannot reach the broker at {url}: {exc}") from exc


def _with_admin(args: argparse.Namespace, call: Callable[[Any], T]) -> T:
    """``call(admin)`` on a fresh admin client; a Kafka error is one CliError line."""
    from kafka.errors import KafkaError

    admin = _admin(args)
    try:
        return retry_unreachable(lambda: call(admin))
    except KafkaError as exc:
        raise CliError(f"the broker at {resolve_log_url(args)} refused: {exc}") from exc
    finally:
        admin.close()


def _list(args: argparse.Namespace) -> int:
    described = _with_admin(args, lambda admin: admin.describe_user_scram_credentials())
    for user, info in sorted(described.items()):
        mechanisms = ", ".join(f"{_scram_name(i['mechanism'])} (iterations {i['iterations']})"
                               for i in info["credential_infos"])
        sys.stdout.write(f"{user}\t{mechanisms}\n")
    return 0


def _scram_name(mechanism: object) -> str:
    return str(getattr(mechanism, "name", mechanism)).replace("_", "-")


def _password(args: argparse.Namespace) -> str:
    if args.password_file:
        try:
            with open(args.password_file, encoding="utf-8") as f:
                text = f.read().rstrip("\n")
        except OSError as exc:
            raise CliError(f"--password-file: cannot read {args.password_file}: {exc}") from exc
    elif sys.stdin.isatty():
        text = getpass.getpass(f"Password for {args.name}: ")
    else:
        text = sys.stdin.readline().rstrip("\n")
    if not text:
        raise CliError("the password is empty")
    return text


def _set(args: argparse.Namespace) -> int:
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion

    password = _password(args)
    changes = [UserScramCredentialUpsertion(args.name, ScramMechanism[m.replace("-", "_")],
                                            password, iterations=args.iterations)
               for m in args.mechanism or _MECHANISMS]
    return _alter(args, changes, "set")


def _delete(args: argparse.Namespace) -> int:
    from kafka.admin import ScramMechanism, UserScramCredentialDeletion

    mechanisms = args.mechanism
    if not mechanisms:
        info = _with_admin(args, lambda admin: admin.describe_user_scram_credentials(
            [args.name])).get(args.name, {})
        if info.get("error"):
            raise CliError(f"user {args.name}: {info['error']}")
        mechanisms = [_scram_name(i["mechanism"]) for i in info.get("credential_infos", [])]
    changes = [UserScramCredentialDeletion(args.name, ScramMechanism[m.replace("-", "_")])
               for m in mechanisms]
    return _alter(args, changes, "deleted")


def _alter(args: argparse.Namespace, changes: list, done: str) -> int:
    results = _with_admin(args, lambda admin: admin.alter_user_scram_credentials(changes))
    error = results.get(args.name)
    if error:
        raise CliError(f"user {args.name}: {error}")
    sys.stdout.write(f"SCRAM credentials of {args.name} {done}.\n")
    return 0
