"""`minikafka configs`: the SCRAM part of Kafka's ``kafka-configs.sh`` over the wire protocol.

    minikafka configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    minikafka configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name alice \\
        --delete-config SCRAM-SHA-512
    minikafka configs --bootstrap-server HOST:PORT --describe --entity-type users [--entity-name alice]

As Kafka's tool, the salt and the salted password are made here (PBKDF2, 4096 iterations unless
given) and only they are sent (AlterUserScramCredentials); the broker keeps StoredKey and
ServerKey. One command changes one mechanism of a user: the changes of one command go in one
request, and Kafka (KRaft) refuses a user altered twice in one request with DUPLICATE_RESOURCE,
whatever the mechanisms (recorded: tests/conformance, sec/scram/alter_and_describe), as
minikafka does. ``--command-config`` holds the client properties of a secured listener
(security.protocol, ssl.truststore.location, sasl.mechanism, sasl.jaas.config).
"""
from __future__ import annotations

import argparse
import re
import secrets
import sys

from minikafka.protocol.errors import MESSAGES, ErrorCode

from ..config import ConfigError
from ..security.sasl import SCRAM_HASHES, SCRAM_MIN_ITERATIONS, salted_password
from .wire import connect, read_command_config

API_DESCRIBE_SCRAM, API_ALTER_SCRAM = 50, 51
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {v: k for k, v in MECHANISM_TYPES.items()}


class CommandError(Exception):
    pass


def parse_add_config(text: str) -> dict[str, dict[str, str]]:
    """Kafka's --add-config syntax: k=v pairs, a value in [] may hold its own k=v pairs."""
    out: dict[str, dict[str, str]] = {}
    for m in re.finditer(r"\s*([^=,\s]+)=(\[[^\]]*\]|[^,]*)\s*(,|$)", text):
        key, value = m.group(1), m.group(2)
        if key not in SCRAM_HASHES:
            raise CommandError(f"Invalid config(s): {key} (only SCRAM-SHA-256 and SCRAM-SHA-512 for users)")
        if not value.startswith("["):
            raise CommandError(f"Invalid value {value} for {key}: expected [password=...]")
        out[key] = dict(kv.split("=", 1) for kv in value[1:-1].split(",") if "=" in kv)
        if "password" not in out[key]:
            raise CommandError(f"Invalid value {value} for {key}: a password is required")
    if not out:
        raise CommandError(f"Invalid --add-config {text!r}")
    return out


def error_text(code: int, message: str | None) -> str:
    try:
        ec = ErrorCode(code)
    except ValueError:
        return message or f"error code {code}"
    return f"{message or MESSAGES.get(ec, ec.name)} ({ec.name})"


def alter(client: WireClient, user: str, add: str | None, delete: str | None) -> str:
    upserts, deletes = [], []
    for mech, opts in (parse_add_config(add) if add else {}).items():
        iterations = int(opts.get("iterations", SCRAM_MIN_ITERATIONS))
        salt = secrets.token_bytes(32)
        upserts.append({"name": user, "mechanism": MECHANISM_TYPES[mech], "iterations": iterations, "salt": salt,
                        "salted_password": salted_password(mech, opts["password"], salt, iterations)})
    for mech in (x.strip() for x in (delete or "").split(",") if x.strip()):
        if mech not in MECHANISM_TYPES:
            raise CommandError(f"Invalid config(s): {mech}")
        deletes.append({"name": user, "mechanism": MECHANISM_TYPES[mech]})
    resp = client.request(API_ALTER_SCRAM, 0, {"deletions": deletes, "upsertions": upserts})
    for r in resp.results:
        if r.error_code:
            raise CommandError(f"Error while executing config command with args: {error_text(r.error_code, r.error_message)}")
    return f"Completed updating config for user {user}."


def describe(client: WireClient, user: str | None) -> list[str]:
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


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="minikafka configs", description="SCRAM credentials of users (kafka-configs.sh)")
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--command-config", help="client properties of a secured listener")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true")
    action.add_argument("--describe", action="store_true")
    p.add_argument("--entity-type", required=True, choices=["users"])
    p.add_argument("--entity-name")
    p.add_argument("--add-config")
    p.add_argument("--delete-config")
    args = p.parse_args(argv)
    try:
        with connect(args.bootstrap_server, read_command_config(args.command_config)) as client:
            if args.alter:
                if not args.entity_name:
                    raise CommandError("--entity-name must be specified with --alter of users")
                if not args.add_config and not args.delete_config:
                    raise CommandError("At least one of --add-config or --delete-config must be specified with --alter")
                print(alter(client, args.entity_name, args.add_config, args.delete_config))
            else:
                for line in describe(client, args.entity_name):
                    print(line)
    except CommandError as e:
        print(e, file=sys.stderr)
        return 1
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    except (OSError, ConnectionError) as e:
        print(f"cannot reach {args.bootstrap_server}: {e}", file=sys.stderr)
        return 1
    return 0
