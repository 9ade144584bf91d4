"""One listener as configured (`Listener`), and how its settings are read and refused:
what listeners.py builds and tls.py and sasl.py fill in."""
from __future__ import annotations

from dataclasses import dataclass, field

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # served; Kafka's GSSAPI, OAUTHBEARER are not
ANONYMOUS = "User:ANONYMOUS"  # the principal of a connection no certificate or SASL login names


class SecurityConfigError(ValueError):
    """One line naming the key and the value."""


def invalid(key: str, value, reason: str) -> SecurityConfigError:
    return SecurityConfigError(f"Invalid value {value} for configuration {key}: {reason}")


def unsupported(key: str, value, supported: str) -> SecurityConfigError:
    return invalid(key, value, f"not supported by minikafka ({supported})")


@dataclass
class Listener:
    name: str          # as written in ``listeners`` (Kafka upper-cases it)
    protocol: str      # one of PROTOCOLS
    host: str          # '' means all interfaces
    port: int
    ssl_context: object = None            # ssl.SSLContext for SSL and SASL_SSL
    client_auth: str = "none"             # ssl.client.auth
    principal_rules: list = field(default_factory=lambda: [None])  # ssl.principal.mapping.rules
    sasl_mechanisms: list[str] = field(default_factory=list)
    sasl_max_receive_size: int = 524288   # sasl.server.max.receive.size: largest frame before authentication
    max_connections: int = 2**31 - 1      # listener.name.<l>.max.connections (else max.connections)
    max_connection_creation_rate: int = 2**31 - 1  # likewise max.connection.creation.rate
    plain_users: dict[str, str] = field(default_factory=dict)  # PLAIN: user -> password (JAAS)

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def listener_value(raw: dict[str, str], listener: str, key: str, default=None):
    """``listener.name.<listener>.<key>`` if set, else ``<key>``, else ``default``, with the key
    the value came from (for error messages)."""
    prefixed = f"listener.name.{listener.lower()}.{key}"
    if prefixed in raw:
        return raw[prefixed], prefixed
    if key in raw:
        return raw[key], key
    return default, key
