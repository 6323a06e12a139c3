"""``ferry acls``: add, list and remove ACLs on a broker, in the style of ``kafka-acls``.

    ferry acls add --bootstrap-server B --allow-principal User:alice --operation Read \\
        --topic acme. --resource-pattern-type prefixed
    ferry acls add --bootstrap-server B --allow-principal User:alice --consumer \\
        --topic acme. --group acme. --resource-pattern-type prefixed
    ferry acls list --bootstrap-server B [--topic T] [--principal P]
    ferry acls remove --bootstrap-server B --topic acme. --resource-pattern-type prefixed

``--producer`` is WRITE, DESCRIBE and CREATE on the topics; ``--consumer`` is READ and
DESCRIBE on the topics and READ on the groups, as kafka-acls expands them.
"""

from __future__ import annotations

import argparse
import sys
from itertools import product

from kafka.protocol.admin import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)

from core.broker.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from core.cli.admin_requests import add_bootstrap_option, check_error, send_admin_request
from core.cli.errors import CliError
from core.cli.options import add_command

__all__ = ["register"]

_O = AclOperation


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``acls`` and its subcommands."""
    acls = add_command(subparsers, "acls", "add, list and remove ACLs (like kafka-acls)")
    commands = acls.add_subparsers(dest="acls_command", metavar="COMMAND", required=True)
    add = add_command(commands, "add", "add ACLs")
    _resource_options(add)
    _binding_options(add)
    add.add_argument("--producer", action="store_true",
                     help="WRITE, DESCRIBE and CREATE on the topics")
    add.add_argument("--consumer", action="store_true",
                     help="READ and DESCRIBE on the topics, READ on the groups")
    add.set_defaults(func=_add)
    listing = add_command(commands, "list", "list ACLs")
    _resource_options(listing)
    listing.add_argument("--principal", help="only ACLs of this principal")
    listing.set_defaults(func=_list)
    remove = add_command(commands, "remove", "remove ACLs")
    _resource_options(remove)
    _binding_options(remove)
    remove.set_defaults(func=_remove)


def _resource_options(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_option(parser)
    parser.add_argument("--topic", action="append", default=[], metavar="NAME")
    parser.add_argument("--group", action="append", default=[], metavar="NAME")
    parser.add_argument("--transactional-id", action="append", default=[], metavar="NAME")
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument("--resource-pattern-type", default=None,
                        choices=["literal", "prefixed", "match", "any"],
                        help="how names match (add: literal by default)")


def _binding_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-principal", action="append", default=[], metavar="P")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="P")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--operation", action="append", default=[], metavar="OP",
                        help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                             "DescribeConfigs, AlterConfigs, IdempotentWrite or All")


def _operation(text: str) -> AclOperation:
    key = text.replace("-", "").replace("_", "").upper()
    for op in AclOperation:
        if op.name.replace("_", "") == key and op not in (_O.UNKNOWN, _O.ANY):
            return op
    raise CliError(f"unknown operation {text!r}: use Read, Write, Create, Delete, Alter, "
                   "Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                   "IdempotentWrite or All")


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    found = [(ResourceType.TOPIC, t) for t in args.topic]
    found += [(ResourceType.GROUP, g) for g in args.group]
    found += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def _pattern_type(args: argparse.Namespace, default: PatternType) -> PatternType:
    return PatternType[args.resource_pattern_type.upper()] if args.resource_pattern_type \
        else default


def _bindings(args: argparse.Namespace) -> list[AclBinding]:
    resources = _resources(args)
    if not resources:
        raise CliError("name a resource: --topic, --group, --transactional-id or --cluster")
    pattern_type = _pattern_type(args, PatternType.LITERAL)
    if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise CliError("ACLs are added with --resource-pattern-type literal or prefixed")
    wanted: list[tuple[ResourceType, str, AclOperation]] = [
        (rt, name, _operation(op)) for (rt, name), op in product(resources, args.operation)]
    if getattr(args, "producer", False):
        wanted += [(ResourceType.TOPIC, t, op) for t in args.topic
                   for op in (_O.WRITE, _O.DESCRIBE, _O.CREATE)]
    if getattr(args, "consumer", False):
        if not args.group:
            raise CliError("--consumer needs --group as well")
        wanted += [(ResourceType.TOPIC, t, op) for t in args.topic
                   for op in (_O.READ, _O.DESCRIBE)]
        wanted += [(ResourceType.GROUP, g, _O.READ) for g in args.group]
    if not wanted:
        raise CliError("name the operations: --operation, --producer or --consumer")
    people = [(p, AclPermissionType.ALLOW, args.allow_host or ["*"])
              for p in args.allow_principal]
    people += [(p, AclPermissionType.DENY, args.deny_host or ["*"])
               for p in args.deny_principal]
    if not people:
        raise CliError("name a principal: --allow-principal or --deny-principal "
                       "(e.g. User:alice)")
    bindings = []
    for (rt, name, op), (principal, permission, hosts) in product(wanted, people):
        for host in hosts:
            binding = AclBinding(ResourcePattern(rt, name, pattern_type), principal, host,
                                 op, permission)
            try:
                binding.validate()
            except InvalidAclError as exc:
                raise CliError(str(exc)) from None
            bindings.append(binding)
    return list(dict.fromkeys(bindings))


def _add(args: argparse.Namespace) -> int:
    bindings = _bindings(args)
    request = CreateAclsRequest(creations=[
        CreateAclsRequest.AclCreation(
            resource_type=b.pattern.resource_type, resource_name=b.pattern.name,
            resource_pattern_type=b.pattern.pattern_type, principal=b.principal,
            host=b.host, operation=b.operation, permission_type=b.permission)
        for b in bindings])
    response = send_admin_request(args, request)
    for result in response.results:
        check_error(result.error_code, result.error_message)
    for b in bindings:
        sys.stdout.write(f"added {_text(b)}\n")
    return 0


def _filters(args: argparse.Namespace) -> list[tuple[ResourceType, str | None, PatternType]]:
    resources = _resources(args)
    pattern_type = _pattern_type(args, PatternType.LITERAL if resources else PatternType.ANY)
    if not resources:
        return [(ResourceType.ANY, None, pattern_type)]
    return [(rt, name, pattern_type) for rt, name in resources]


def _list(args: argparse.Namespace) -> int:
    for rt, name, pattern_type in _filters(args):
        if args.resource_pattern_type is None and name is not None:
            pattern_type = PatternType.ANY  # kafka-acls --list: every pattern of the name
        request = DescribeAclsRequest(
            resource_type_filter=rt, resource_name_filter=name,
            pattern_type_filter=pattern_type, principal_filter=args.principal,
            host_filter=None, operation=_O.ANY, permission_type=AclPermissionType.ANY)
        response = send_admin_request(args, request)
        check_error(response.error_code, response.error_message)
        for resource in response.resources:
            sys.stdout.write(
                f"Current ACLs for resource `{ResourceType(resource.resource_type).name}:"
                f"{PatternType(resource.pattern_type).name}:{resource.resource_name}`:\n")
            for a in resource.acls:
                sys.stdout.write(
                    f"\t(principal={a.principal}, host={a.host}, "
                    f"operation={AclOperation(a.operation).name}, "
                    f"permissionType={AclPermissionType(a.permission_type).name})\n")
    return 0


def _remove(args: argparse.Namespace) -> int:
    filters = []
    principals = [(p, AclPermissionType.ALLOW) for p in args.allow_principal]
    principals += [(p, AclPermissionType.DENY) for p in args.deny_principal]
    operations = [_operation(op) for op in args.operation] or [_O.ANY]
    hosts = (args.allow_host + args.deny_host) or [None]
    for (rt, name, pattern_type), op, host in product(_filters(args), operations, hosts):
        for principal, permission in principals or [(None, AclPermissionType.ANY)]:
            filters.append(DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=rt, resource_name_filter=name,
                pattern_type_filter=pattern_type, principal_filter=principal,
                host_filter=host, operation=op, permission_type=permission))
    response = send_admin_request(args, DeleteAclsRequest(filters=filters))
    removed = 0
    for result in response.filter_results:
        check_error(result.error_code, result.error_message)
        for a in result.matching_acls:
            removed += 1
            sys.stdout.write(
                f"removed {ResourceType(a.resource_type).name}:"
                f"{PatternType(a.pattern_type).name}:{a.resource_name} {a.principal} "
                f"{AclPermissionType(a.permission_type).name} "
                f"{AclOperation(a.operation).name} from host {a.host}\n")
    if not removed:
        sys.stdout.write("no ACL matched\n")
    return 0


def _text(b: AclBinding) -> str:
    p = b.pattern
    return (f"{p.resource_type.name}:{p.pattern_type.name}:{p.name} {b.principal} "
            f"{b.permission.name} {b.operation.name} from host {b.host}")
