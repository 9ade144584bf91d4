"""Listeners as Kafka configures them: ``listeners``, ``advertised.listeners``,
``listener.security.protocol.map`` and the per-listener overrides ``listener.name.<name>.<key>``.

Everything is checked at start and turned into one `Listener` per entry of ``listeners``:
its security protocol, its TLS context (SSL, SASL_SSL) and its SASL mechanisms (SASL_*).
A setting minikafka does not implement is refused with one line naming the key and the value,
never served some other way (an SSL listener that served plaintext would be a silent downgrade).
"""
from __future__ import annotations

import re

from .listener import PROTOCOLS, Listener, invalid, listener_value, unsupported

# Kafka's default listener.security.protocol.map: each protocol is also a listener name
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")  # Kafka's EndPoint regex


def parse_endpoint(text: str, key: str = "listeners") -> tuple[str, str, int]:
    """'NAME://host:port' -> (NAME, host, port); host '' means all interfaces."""
    m = _ENDPOINT.match(text.strip())
    if not m or not re.fullmatch(r"[A-Za-z0-9_]+", m.group(1)):
        raise invalid(key, text, f"Unable to parse {text.strip()} to a broker endpoint")
    name, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
    if not 0 <= port <= 65535:
        raise invalid(key, text, "Port must be between 0 and 65535")
    return name, host, port


def parse_protocol_map(text: str, key: str = "listener.security.protocol.map") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        name, colon, proto = item.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not colon or not name:
            raise invalid(key, text, f"Map entry '{item}' is not of the form NAME:PROTOCOL")
        if proto not in PROTOCOLS:
            raise invalid(key, text, f"No enum constant org.apache.kafka.common.security.auth.SecurityProtocol.{proto}")
        out[name] = proto
    return out


def _count(key: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise invalid(key, text, "Not a number of type INT") from None
    if value < 0:
        raise invalid(key, text, "Value must be at least 0")
    return value


def _list(text) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def build_listeners(raw: dict[str, str]) -> tuple[list[Listener], dict[str, tuple[str, int]]]:
    """(listeners, advertised NAME -> (host, port)) from the broker properties as written."""
    proto_map = parse_protocol_map(raw.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP))
    texts = _list(raw.get("listeners", "PLAINTEXT://127.0.0.1:9092"))
    if not texts:
        raise invalid("listeners", raw.get("listeners", ""), "At least one listener is required")
    listeners: list[Listener] = []
    for text in texts:
        name, host, port = parse_endpoint(text)
        proto = proto_map.get(name)
        if proto is None:
            raise invalid("listeners", raw.get("listeners"), f"No security protocol defined for listener {name}")
        if any(lst.name == name for lst in listeners):
            raise invalid("listeners", raw.get("listeners"), "Each listener must have a different name")
        if port and any(lst.port == port for lst in listeners):
            raise invalid("listeners", raw.get("listeners"), "Each listener must have a different port")
        listeners.append(Listener(name, proto, host, port))
    names = {lst.name for lst in listeners}
    advertised: dict[str, tuple[str, int]] = {}
    for text in _list(raw.get("advertised.listeners")):
        name, host, port = parse_endpoint(text, "advertised.listeners")
        if name not in names:
            raise invalid("advertised.listeners", raw["advertised.listeners"],
                          "advertised.listeners listener names must be equal to or a subset of the ones "
                          f"defined in listeners. Found {name}. The valid options based on currently "
                          f"configured listeners are {','.join(sorted(names))}")
        advertised[name] = (host, port)
    for lst in listeners:
        # Kafka's ListenerConnectionQuota: the listener's own value, else the broker-wide one
        for key in LISTENER_QUOTA_KEYS:
            text, where = listener_value(raw, lst.name, key, str(2**31 - 1))
            setattr(lst, key.replace(".", "_"), _count(where, text))
    # tls.py and sasl.py are imported only when a listener is SSL or SASL_*: a PLAINTEXT-only
    # start does not need them (nor their own imports). They import
    # listener.py, not this module.
    for lst in listeners:
        if lst.tls:
            from . import tls
            tls.configure(raw, lst)
        if lst.sasl:
            from . import sasl
            sasl.configure(raw, lst)
    _refuse_unused_keys(raw, listeners)
    return listeners, advertised


# Settings that change how a connection is secured: keys minikafka reads (in tls.py, sasl.py)
# or refuses when set; never silently ignored.
REFUSED_WHEN_SET = {
    "connections.max.reauth.ms": "KIP-368 re-authentication is not implemented; leave it unset or 0",
    "principal.builder.class": "the default principal builder only",
    "sasl.server.callback.handler.class": "credentials come from the JAAS config (PLAIN) and the SCRAM store",
}
# Connection limits Kafka reads per listener (ListenerConnectionQuota)
LISTENER_QUOTA_KEYS = ("max.connections", "max.connection.creation.rate")
# Keys read per listener, so their listener.name.<l>. forms are known
PER_LISTENER_KEYS = ("ssl.", "sasl.", "plain.sasl.jaas.config", "scram-sha-256.sasl.jaas.config",
                     "scram-sha-512.sasl.jaas.config", "connections.max.reauth.ms", "principal.builder.class")


def _refuse_unused_keys(raw: dict[str, str], listeners: list[Listener]) -> None:
    names = {lst.name.lower() for lst in listeners}
    for key, value in raw.items():
        base = key
        if key.startswith("listener.name."):
            lname, _, base = key[len("listener.name."):].partition(".")
            if lname not in names:
                raise invalid(key, value, f"no listener named {lname.upper()} in listeners")
        if base in REFUSED_WHEN_SET:
            if base == "connections.max.reauth.ms" and value.strip() == "0":
                continue
            raise unsupported(key, value, REFUSED_WHEN_SET[base])
        if key.startswith("listener.name.") and not base.startswith(PER_LISTENER_KEYS) \
                and base not in LISTENER_QUOTA_KEYS:
            raise unsupported(key, value, "per-listener overrides of ssl.*, sasl.*, <mechanism>.sasl.jaas.config, "
                                          "max.connections and max.connection.creation.rate only")
