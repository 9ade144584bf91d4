"""`minikafka acls`: Kafka's ``kafka-acls.sh`` over the wire protocol (CreateAcls,
DescribeAcls, DeleteAcls).

    minikafka acls --bootstrap-server HOST:PORT [--command-config admin.properties] \\
        --add --allow-principal User:alice --operation Read --operation Describe --topic orders
    minikafka acls ... --add --allow-principal User:alice --producer --topic orders --transactional-id app
    minikafka acls ... --add --allow-principal User:bob --consumer --topic orders --group billing
    minikafka acls ... --add --deny-principal User:mallory --operation All --topic pay- --resource-pattern-type prefixed
    minikafka acls ... --list [--topic orders] [--principal User:alice]
    minikafka acls ... --remove --allow-principal User:alice --operation Read --topic orders

``--command-config`` holds the client properties of a secured listener (security.protocol,
ssl.truststore.location, sasl.mechanism, sasl.jaas.config). Output as kafka-acls.sh's.
"""
from __future__ import annotations

import argparse
import sys

from minikafka.protocol.errors import MESSAGES, ErrorCode

from minikafka.broker.config import ConfigError
from minikafka.broker.security.authorizer import CLUSTER_NAME, OP, PATTERN, PERMISSION, RESOURCE
from .wire import connect, read_command_config

NAMES = {kind: {v: k for k, v in table.items()} for kind, table in
         (("op", OP), ("resource", RESOURCE), ("pattern", PATTERN), ("permission", PERMISSION))}


class CommandError(Exception):
    pass


def _op(text: str) -> int:
    key = "".join("_" + c if c.isupper() and i else c for i, c in enumerate(text)).upper()  # DescribeConfigs
    key = {"IDEMPOTENTWRITE": "IDEMPOTENT_WRITE", "CLUSTERACTION": "CLUSTER_ACTION"}.get(key.replace("_", ""), key)
    if key not in OP or OP[key] in (0, 1):
        raise CommandError(f"Invalid operation: {text}")
    return OP[key]


def resources(args) -> list[tuple[int, str]]:
    out = [(RESOURCE["TOPIC"], t) for t in args.topic or []]
    out += [(RESOURCE["GROUP"], g) for g in args.group or []]
    out += [(RESOURCE["TRANSACTIONAL_ID"], t) for t in args.transactional_id or []]
    if args.cluster or args.idempotent:
        out.append((RESOURCE["CLUSTER"], CLUSTER_NAME))
    return out


def operations_for(args, resource_type: int) -> list[int]:
    """Kafka's AclCommand: --producer and --consumer expand to the operations they need."""
    if args.producer or args.consumer:
        ops = []
        if resource_type == RESOURCE["TOPIC"]:
            ops += [OP["WRITE"], OP["DESCRIBE"], OP["CREATE"]] if args.producer else []
            ops += [OP["READ"], OP["DESCRIBE"]] if args.consumer else []
        elif resource_type == RESOURCE["GROUP"] and args.consumer:
            ops.append(OP["READ"])
        elif resource_type == RESOURCE["TRANSACTIONAL_ID"] and args.producer:
            ops += [OP["WRITE"], OP["DESCRIBE"]]
        elif resource_type == RESOURCE["CLUSTER"] and args.producer and args.idempotent:
            ops.append(OP["IDEMPOTENT_WRITE"])
        return list(dict.fromkeys(ops))
    return [_op(o) for o in args.operation or ["All"]]


def bindings(args) -> list[dict]:
    pattern = PATTERN[args.resource_pattern_type.upper()]
    out = []
    for perm, principals, hosts in ((PERMISSION["ALLOW"], args.allow_principal, args.allow_host),
                                    (PERMISSION["DENY"], args.deny_principal, args.deny_host)):
        for principal in principals or []:
            for rtype, name in resources(args):
                for op in operations_for(args, rtype):
                    for host in hosts or ["*"]:
                        out.append({"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
                                    "principal": principal, "host": host, "operation": op, "permission_type": perm})
    if not out:
        raise CommandError("You must specify one of: --allow-principal, --deny-principal with a resource "
                           "(--topic, --group, --transactional-id, --cluster)")
    return out


def _fmt_acl(principal, host, op, perm) -> str:
    return (f"\t(principal={principal}, host={host}, operation={NAMES['op'][op]}, "
            f"permissionType={NAMES['permission'][perm]})")


def _pattern(rtype, name, pattern) -> str:
    return (f"ResourcePattern(resourceType={NAMES['resource'][rtype]}, name={name}, "
            f"patternType={NAMES['pattern'][pattern]})")


def _check(code: int, message: str | None) -> None:
    if code:
        ec = ErrorCode(code)
        raise CommandError(f"Error while executing ACL command: {message or MESSAGES.get(ec, ec.name)} ({ec.name})")


def list_acls(client, args) -> list[str]:
    filters = resources(args) or [(RESOURCE["ANY"], None)]
    lines = []
    for rtype, name in filters:
        r = client.request(29, 3, {"resource_type_filter": rtype, "resource_name_filter": name,
                                   "pattern_type_filter": PATTERN["ANY"] if name is None else PATTERN[
                                       "MATCH" if args.resource_pattern_type.upper() == "MATCH" else args.resource_pattern_type.upper()],
                                   "principal_filter": args.principal, "host_filter": None,
                                   "operation": OP["ANY"], "permission_type": PERMISSION["ANY"]})
        _check(r.error_code, r.error_message)
        for res in r.resources:
            lines.append(f"Current ACLs for resource `{_pattern(res.resource_type, res.resource_name, res.pattern_type)}`: ")
            lines += [" " + _fmt_acl(a.principal, a.host, a.operation, a.permission_type) for a in res.acls]
            lines.append("")
    return lines


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="minikafka acls", description="Manage ACLs (kafka-acls.sh)")
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--command-config", help="client properties of a secured listener")
    action = p.add_mutually_exclusive_group(required=True)
    for a in ("--add", "--remove", "--list"):
        action.add_argument(a, action="store_true")
    for a in ("--topic", "--group", "--transactional-id", "--allow-principal", "--deny-principal",
              "--allow-host", "--deny-host", "--operation"):
        p.add_argument(a, action="append")
    p.add_argument("--principal", help="--list: only this principal's ACLs")
    p.add_argument("--cluster", action="store_true")
    p.add_argument("--producer", action="store_true")
    p.add_argument("--consumer", action="store_true")
    p.add_argument("--idempotent", action="store_true")
    p.add_argument("--resource-pattern-type", default="literal",
                   choices=["literal", "prefixed", "match", "any", "LITERAL", "PREFIXED", "MATCH", "ANY"])
    p.add_argument("--force", action="store_true", help="accepted: --remove never prompts")
    args = p.parse_args(argv)
    try:
        props = read_command_config(args.command_config)
        with connect(args.bootstrap_server, props, client_id="minikafka-acls") as client:
            if args.list:
                print("\n".join(list_acls(client, args)))
            elif args.add:
                acls = bindings(args)
                r = client.request(30, 3, {"creations": acls})
                for res in r.results:
                    _check(res.error_code, res.error_message)
                print("Adding ACLs for resource(s):")
                for a in acls:
                    print(f"  {_pattern(a['resource_type'], a['resource_name'], a['resource_pattern_type'])}: "
                          + _fmt_acl(a["principal"], a["host"], a["operation"], a["permission_type"]).strip())
            else:
                filters = [{"resource_type_filter": a["resource_type"], "resource_name_filter": a["resource_name"],
                            "pattern_type_filter": a["resource_pattern_type"], "principal_filter": a["principal"],
                            "host_filter": a["host"], "operation": a["operation"], "permission_type": a["permission_type"]}
                           for a in bindings(args)]
                r = client.request(31, 3, {"filters": filters})
                removed = 0
                for res in r.filter_results:
                    _check(res.error_code, res.error_message)
                    removed += len(res.matching_acls)
                print(f"Removed {removed} ACL(s).")
    except (CommandError, ConfigError) as e:
        print(e, file=sys.stderr)
        return 1
    except (OSError, ConnectionError) as e:
        print(f"cannot use {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    return 0
