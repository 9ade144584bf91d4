"""`minikafka configs`: the users, clients and ips part of Kafka's ``kafka-configs.sh`` over the
wire protocol: client quotas (AlterClientQuotas, DescribeClientQuotas) and SCRAM credentials
(AlterUserScramCredentials, DescribeUserScramCredentials).

    minikafka configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name alice \\
        --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152'
    minikafka configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-default \\
        --entity-type clients --entity-name app --add-config request_percentage=50
    minikafka configs --bootstrap-server HOST:PORT --alter --entity-type ips --entity-name 10.0.0.7 \\
        --add-config connection_creation_rate=20
    minikafka configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    minikafka configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name alice \\
        --delete-config producer_byte_rate
    minikafka configs --bootstrap-server HOST:PORT --describe --entity-type users [--entity-name alice]

As Kafka's tool: ``--entity-default`` (or ``--user-defaults``, ``--client-defaults``,
``--ip-defaults``) names a type's default entity, ``--user``/``--client``/``--ip NAME`` are
short for ``--entity-type ... --entity-name NAME``; users and clients may be given together (a
(user, client-id) entity); a describe lists the matching entities' quotas (only entities of
exactly the given types), for users without clients also their SCRAM mechanisms; deleting a
quota the entity does not have is refused before anything is sent. For SCRAM the salt and the
salted password are made here (PBKDF2, 4096 iterations unless given) and only they are sent;
the broker keeps StoredKey and ServerKey. One command changes one mechanism of a user (Kafka
refuses a user altered twice in one request with DUPLICATE_RESOURCE). ``--command-config``
holds the client properties of a secured listener (security.protocol, ssl.truststore.location,
sasl.mechanism, sasl.jaas.config).
"""
from __future__ import annotations

import argparse
import re
import secrets
import sys
from decimal import Decimal

from minikafka.protocol.errors import MESSAGES, ErrorCode

from minikafka.broker.config import ConfigError
from minikafka.broker.quotas import IP_KEYS, USER_AND_CLIENT_KEYS, ip_literal, normalized_address
from minikafka.broker.security.sasl import SCRAM_HASHES, SCRAM_MIN_ITERATIONS, salted_password
from .wire import connect, read_command_config

API_DESCRIBE_QUOTAS, API_ALTER_QUOTAS = 48, 49
API_DESCRIBE_SCRAM, API_ALTER_SCRAM = 50, 51
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {v: k for k, v in MECHANISM_TYPES.items()}
# kafka-configs' entity types and the ClientQuotaEntity type each stands for
QUOTA_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
WORDS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}


class CommandError(Exception):
    pass


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's --add-config syntax: k=v pairs, a value in [] may hold its own k=v pairs."""
    out: dict[str, str] = {}
    for m in re.finditer(r"\s*([^=,\s]+)=(\[[^\]]*\]|[^,]*)\s*(,|$)", text):
        out[m.group(1)] = m.group(2)
    if not out:
        raise CommandError(f"Invalid --add-config {text!r}")
    return out


def parse_scram(key: str, value: str) -> dict[str, str]:
    if not value.startswith("["):
        raise CommandError(f"Invalid value {value} for {key}: expected [password=...]")
    opts = dict(kv.split("=", 1) for kv in value[1:-1].split(",") if "=" in kv)
    if "password" not in opts:
        raise CommandError(f"Invalid value {value} for {key}: a password is required")
    return opts


def error_text(code: int, message: str | None) -> str:
    try:
        ec = ErrorCode(code)
    except ValueError:
        return message or f"error code {code}"
    return f"{message or MESSAGES.get(ec, ec.name)} ({ec.name})"


def java_double(v: float) -> str:
    """A double as Java's Double.toString prints it (what kafka-configs shows): 1024.0, 10.5, 1.0E19."""
    if v != v or v in (float("inf"), float("-inf")):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if v == 0:
        return "0.0"
    sign, digits, exp = Decimal(repr(v)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + exp  # digits before the decimal point
    if 1e-3 <= abs(v) < 1e7:
        if point <= 0:
            body = "0." + "0" * -point + text
        elif point >= len(text):
            body = text + "0" * (point - len(text)) + ".0"
        else:
            body = text[:point] + "." + text[point:]
    else:
        body = text[0] + "." + (text[1:] or "0") + f"E{point - 1}"
    return ("-" if sign else "") + body


# ------------------------------------------------------------------------- SCRAM
def alter_scram(client, user: str, add: dict[str, str], delete: list[str]) -> None:
    upserts, deletes = [], []
    for mech, value in add.items():
        opts = parse_scram(mech, value)
        iterations = int(opts.get("iterations", SCRAM_MIN_ITERATIONS))
        salt = secrets.token_bytes(32)
        upserts.append({"name": user, "mechanism": MECHANISM_TYPES[mech], "iterations": iterations, "salt": salt,
                        "salted_password": salted_password(mech, opts["password"], salt, iterations)})
    for mech in delete:
        deletes.append({"name": user, "mechanism": MECHANISM_TYPES[mech]})
    resp = client.request(API_ALTER_SCRAM, 0, {"deletions": deletes, "upsertions": upserts})
    for r in resp.results:
        if r.error_code:
            raise CommandError(f"Error while executing config command with args: {error_text(r.error_code, r.error_message)}")


def describe_scram(client, user: str | None) -> list[str]:
    resp = client.request(API_DESCRIBE_SCRAM, 0, {"users": None if user is None else [{"name": user}]})
    lines = []
    for r in resp.results:
        if r.error_code == ErrorCode.RESOURCE_NOT_FOUND:
            continue  # as kafka-configs.sh: nothing to show for a user without credentials
        if r.error_code:
            raise CommandError(error_text(r.error_code, r.error_message))
        creds = ", ".join(f"{MECHANISM_NAMES.get(c.mechanism, c.mechanism)}=iterations={c.iterations}"
                          for c in r.credential_infos)
        lines.append(f"SCRAM credential configs for user-principal '{r.user}' are {creds}")
    return lines


# ------------------------------------------------------------------------- quotas
def describe_quotas(client, types: list[str], names: list[str]) -> list[tuple[dict, dict]]:
    """The quotas of the entities of exactly these types (ClientQuotaFilter.containsOnly): a
    name "" is the type's default, a type without a name matches every name."""
    components = []
    for i, t in enumerate(types):
        kind = QUOTA_TYPES[t]
        if i >= len(names):
            components.append({"entity_type": kind, "match_type": 2, "match": None})
        elif names[i] == "":
            components.append({"entity_type": kind, "match_type": 1, "match": None})
        else:
            components.append({"entity_type": kind, "match_type": 0, "match": names[i]})
    resp = client.request(API_DESCRIBE_QUOTAS, 1, {"components": components, "strict": True})
    if resp.error_code:
        raise CommandError(error_text(resp.error_code, resp.error_message))
    return [({e.entity_type: e.entity_name for e in entry.entity}, {v.key: v.value for v in entry["values"]})
            for entry in resp.entries]


def quota_lines(found: list[tuple[dict, dict]]) -> list[str]:
    lines = []
    for entity, quotas in found:
        parts = [(f"{WORDS[k]} '{entity[k]}'" if entity[k] is not None else f"the default {WORDS[k]}")
                 for k in ("user", "client-id", "ip") if k in entity]
        values = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(quotas.items()))
        lines.append(f"Quota configs for {', '.join(parts)} are {values}")
    return lines


def alter_quotas(client, types: list[str], names: list[str], add: dict[str, str], delete: list[str]) -> None:
    current = describe_quotas(client, types, names)
    old = current[0][1] if current else {}
    missing = [k for k in delete if k not in old]
    if missing:
        raise CommandError(f"Invalid config(s): {','.join(missing)}")
    ops = []
    for key, value in add.items():
        try:
            ops.append({"key": key, "value": float(value), "remove": False})
        except ValueError:
            raise CommandError(f"Cannot parse quota configuration value for {key}: {value}") from None
    ops += [{"key": key, "value": 0.0, "remove": True} for key in delete]
    entity = [{"entity_type": QUOTA_TYPES[t], "entity_name": n or None} for t, n in zip(types, names)]
    resp = client.request(API_ALTER_QUOTAS, 1, {"entries": [{"entity": entity, "ops": ops}], "validate_only": False})
    for e in resp.entries:
        if e.error_code:
            raise CommandError(f"Error while executing config command with args: {error_text(e.error_code, e.error_message)}")


# ------------------------------------------------------------------------- command line
class _Entity(argparse.Action):
    """--entity-name / --entity-default in command-line order (Kafka pairs them with the types)."""

    def __call__(self, parser, namespace, values, option_string=None):
        getattr(namespace, "entity_names").append("" if option_string == "--entity-default" else values)


def parse_args(argv: list[str]):
    p = argparse.ArgumentParser(prog="minikafka configs",
                                description="Client quotas and SCRAM credentials of users, clients and ips (kafka-configs.sh)")
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--command-config", help="client properties of a secured listener")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true")
    action.add_argument("--describe", action="store_true")
    p.add_argument("--entity-type", action="append", default=[], choices=list(QUOTA_TYPES))
    p.set_defaults(entity_names=[])
    p.add_argument("--entity-name", action=_Entity)
    p.add_argument("--entity-default", action=_Entity, nargs=0)
    for flag in ("user", "client", "ip"):
        p.add_argument(f"--{flag}", metavar="NAME")
        p.add_argument(f"--{flag}-defaults", action="store_true")
    p.add_argument("--add-config")
    p.add_argument("--delete-config")
    args = p.parse_args(argv)
    types, names = list(args.entity_type), list(args.entity_names)
    flags = [("client", "clients"), ("user", "users"), ("ip", "ips")]
    short = [(t, getattr(args, f)) for f, t in flags if getattr(args, f) is not None]
    defaults = [(t, "") for f, t in flags if getattr(args, f"{f}_defaults")]
    if (types or names) and (short or defaults):
        raise CommandError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    types += [t for t, _ in short + defaults]
    names += [n for _, n in short + defaults]
    if not types:
        raise CommandError("At least one entity type must be specified")
    if len(types) != len(set(types)):
        raise CommandError(f"Duplicate entity type(s) specified: {','.join(sorted({t for t in types if types.count(t) > 1}))}")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        raise CommandError("Only 'users' and 'clients' entity types may be specified together")
    if len(names) > len(types):
        raise CommandError("More entity names specified than entity types")
    if "ips" in types:
        for n in names:
            if n and ip_literal(n) is None and normalized_address(n) is None:
                raise CommandError(f"The entity name for ips must be a valid IP or resolvable host, but it is: {n}")
    args.types, args.names = types, names
    return args


def run(args) -> list[str]:
    with connect(args.bootstrap_server, read_command_config(args.command_config)) as client:
        types, names = args.types, args.names
        if args.describe:
            if args.add_config or args.delete_config:
                raise CommandError("Option \"[describe]\" can't be used with option \"[add-config, delete-config]\"")
            lines = quota_lines(describe_quotas(client, types, names))
            if types == ["users"] and "" not in names:
                lines += describe_scram(client, names[0] if names else None)
            return lines
        if len(names) != len(types):
            raise CommandError("--entity-name or --entity-default must be specified with each --entity-type for --alter")
        if not args.add_config and not args.delete_config:
            raise CommandError("At least one of --add-config or --delete-config must be specified with --alter")
        add = parse_add_config(args.add_config) if args.add_config else {}
        delete = [x.strip() for x in (args.delete_config or "").split(",") if x.strip()]
        keys = list(add) + delete
        if types == ["ips"]:
            unknown = [k for k in keys if k not in IP_KEYS]
            if unknown:
                raise CommandError(f"Only connection quota configs can be added for 'ips' using --bootstrap-server. "
                                   f"Unexpected config names: {','.join(unknown)}")
            alter_quotas(client, types, names, add, delete)
        else:
            scram = [k for k in keys if k in SCRAM_HASHES]
            unknown = [k for k in keys if k not in SCRAM_HASHES and k not in USER_AND_CLIENT_KEYS]
            if types != ["users"] and (scram or unknown):
                raise CommandError(f"Only quota configs can be added for 'clients' using --bootstrap-server. "
                                   f"Unexpected config names: {','.join(unknown + scram)}")
            if unknown:
                raise CommandError(f"Only quota and SCRAM credential configs can be added for 'users' using "
                                   f"--bootstrap-server. Unexpected config names: {','.join(unknown)}")
            if scram and "" in names:
                raise CommandError("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                                   "Credentials using --bootstrap-server.")
            if scram and len(scram) != len(keys):
                raise CommandError("Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
                                   "using --bootstrap-server.")
            if scram:
                alter_scram(client, names[0], {k: v for k, v in add.items()}, delete)
            else:
                alter_quotas(client, types, names, add, delete)
        if names[0]:
            return [f"Completed updating config for {types[0][:-1]} {names[0]}."]
        return [f"Completed updating default config for {types[0]} in the cluster."]


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
        for line in run(args):
            print(line)
    except (CommandError, ConfigError) as e:
        print(e, file=sys.stderr)
        return 1
    except (OSError, ConnectionError) as e:
        print(f"cannot reach the broker: {e}", file=sys.stderr)
        return 1
    return 0

