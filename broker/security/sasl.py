"""SASL on SASL_PLAINTEXT and SASL_SSL listeners: the configuration (``sasl.enabled.mechanisms``,
the JAAS config of each mechanism) and the server side of PLAIN (RFC 4616) and SCRAM-SHA-256/512
(RFC 5802, RFC 7677). Pure: the connection state machine is in broker/server.py.

Failures raise `AuthenticationFailed` with the message Kafka sends the client: Kafka's wording
(PlainSaslServer, ScramSaslServer, SaslServerAuthenticator), which never says whether the user
exists.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from .listener import Listener, SASL_MECHANISMS, invalid, listener_value, unsupported

JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
SCRAM_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
SCRAM_MIN_ITERATIONS = 4096    # Kafka's ScramMechanism.minIterations
SCRAM_MAX_ITERATIONS = 16384   # Kafka's AlterUserScramCredentials limit


class AuthenticationFailed(Exception):
    """The exchange failed; ``str(e)`` is the message the client gets."""


class MalformedToken(Exception):
    """A token Kafka's server cannot even evaluate (it closes the connection without an answer)."""


# --------------------------------------------------------------------------- configuration
_JAAS = re.compile(r'\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;\s*$', re.S)
_OPTION = re.compile(r'\s*([^\s=]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s"]+)')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """Kafka's ``sasl.jaas.config`` (one login module): (module class, options). ValueError if broken."""
    m = _JAAS.fullmatch(text.strip())
    if not m:
        raise ValueError("Expected '<LoginModuleClass> <flag> key=\"value\" ...;'")
    options, rest = {}, m.group(3)
    pos = 0
    while pos < len(rest):
        o = _OPTION.match(rest, pos)
        if not o:
            if rest[pos:].strip():
                raise ValueError(f"cannot parse option at '{rest[pos:pos + 20]}'")
            break
        value = o.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[o.group(1)] = value
        pos = o.end()
    return m.group(1), options


def configure(raw: dict[str, str], lst: Listener) -> None:
    mechs, where = listener_value(raw, lst.name, "sasl.enabled.mechanisms", "GSSAPI")
    names = [x.strip().upper() for x in mechs.split(",") if x.strip()]
    bad = [x for x in names if x not in SASL_MECHANISMS]
    if bad or not names:
        raise unsupported(where, mechs, f"supported: {', '.join(SASL_MECHANISMS)}")
    lst.sasl_mechanisms = names
    text, where = listener_value(raw, lst.name, "sasl.server.max.receive.size", "524288")
    try:
        lst.sasl_max_receive_size = int(text)
    except ValueError:
        raise invalid(where, text, "Not a number of type INT") from None
    for mech in names:
        key = f"listener.name.{lst.name.lower()}.{mech.lower()}.sasl.jaas.config"
        text = raw.get(key, raw.get(f"{mech.lower()}.sasl.jaas.config"))
        if text is None:
            # Kafka's JaasContext.loadServerContext, with no static JAAS file
            raise invalid(key, None, f"Could not find a '{lst.name.lower()}.KafkaServer' entry in the JAAS "
                                     f"configuration for mechanism {mech}; set {key}")
        try:
            module, options = parse_jaas(text)
        except ValueError as e:
            raise invalid(key, "[hidden]", str(e)) from None
        if module != JAAS_MODULES[mech]:
            raise unsupported(key, module, f"{mech} needs {JAAS_MODULES[mech]}")
        if mech == "PLAIN":
            lst.plain_users = {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}


# --------------------------------------------------------------------------- PLAIN
class PlainServer:
    """RFC 4616: one message ``authzid NUL authcid NUL passwd``, checked against the JAAS users."""

    def __init__(self, users: dict[str, str]):
        self.users = users
        self.complete = False
        self.username = None

    def evaluate(self, token: bytes) -> bytes:
        # Kafka's PlainSaslServer.evaluateResponse, messages included
        parts = token.decode("utf-8", "replace").split("\x00")
        if len(parts) != 3:
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self.users.get(username)
        # compare in constant time whether or not the user exists
        ok = hmac.compare_digest((expected if expected is not None else "\x00" + password).encode(),
                                 password.encode())
        if expected is None or not ok:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id "
                                       "that is different from username")
        self.username = username
        self.complete = True
        return b""


# --------------------------------------------------------------------------- SCRAM
def scram_keys(mechanism: str, salted_password: bytes) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) of RFC 5802 from a salted password: what the store keeps."""
    h = SCRAM_HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", h).digest()
    return h(client_key).digest(), hmac.new(salted_password, b"Server Key", h).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism]().name, password.encode(), salt, iterations)


class ScramServer:
    """RFC 5802 server: client-first -> server-first, client-final -> server-final.
    ``lookup(user)`` -> (salt, stored_key, server_key, iterations) or None. With the extension
    ``tokenauth=true`` the user name is a delegation token's id (``tokens``, a
    DelegationTokenManager): its credential is the token's, the session its owner's
    (``token_id`` set), as Kafka's ScramSaslServer."""

    def __init__(self, mechanism: str, lookup, tokens=None):
        self.mechanism = mechanism
        self.hash = SCRAM_HASHES[mechanism]
        self.lookup = lookup
        self.tokens = tokens
        self.state = "first"
        self.complete = False
        self.username = None
        self.token_id = None

    def _fail(self):
        # ScramSaslServer throws a plain SaslException; SaslServerAuthenticator sends this instead
        raise AuthenticationFailed("Authentication failed during authentication due to invalid credentials "
                                   f"with SASL mechanism {self.mechanism}")

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            self._fail()
        if self.state == "first":
            return self._client_first(text)
        if self.state == "final":
            return self._client_final(text)
        self._fail()

    def _client_first(self, text: str) -> bytes:
        m = re.fullmatch(r"(n|y),(a=[^,]*)?,(n=([^,]*),r=([\x21-\x2b\x2d-\x7e]+)(,.*)?)", text, re.S)
        if not m:
            self._fail()
        username = m.group(4).replace("=2C", ",").replace("=3D", "=")
        extensions = dict(kv.partition("=")[::2] for kv in (m.group(6) or "").split(",")[1:])
        if extensions.get("tokenauth", "").lower() == "true":
            owner = self.tokens.owner(username) if self.tokens is not None else None
            if owner is None:
                self._fail()  # Kafka: "Token Authentication failed: Invalid tokenId", sent as this
            cred = self.tokens.scram_credential(username, self.mechanism)
            self.token_expiry = self.tokens.tokens[username]["expiry"]
            self.token_id, username = username, owner
        else:
            cred = self.lookup(username)
        if cred is None:
            self._fail()
        self.username = username
        self.salt, self.stored_key, self.server_key, iterations = cred
        self.client_first_bare = m.group(3)
        self.gs2_header = text[:len(text) - len(m.group(3))]
        self.nonce = m.group(5) + base64.b64encode(secrets.token_bytes(18)).decode()
        self.server_first = f"r={self.nonce},s={base64.b64encode(self.salt).decode()},i={iterations}"
        self.state = "final"
        return self.server_first.encode()

    def _client_final(self, text: str) -> bytes:
        self.state = "done"
        m = re.fullmatch(r"(c=([^,]*),r=([^,]*)(?:,[^,]*)*?),p=([A-Za-z0-9+/=]+)", text)
        if not m or m.group(3) != self.nonce:
            self._fail()
        try:
            channel = base64.b64decode(m.group(2), validate=True).decode()
            proof = base64.b64decode(m.group(4), validate=True)
        except (ValueError, UnicodeDecodeError):
            self._fail()
        if channel != self.gs2_header:
            self._fail()
        auth_message = f"{self.client_first_bare},{self.server_first},{m.group(1)}".encode()
        signature = hmac.new(self.stored_key, auth_message, self.hash).digest()
        if len(proof) != len(signature):
            raise MalformedToken("SCRAM client proof of the wrong length")  # Kafka: an IllegalArgumentException
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(self.hash(client_key).digest(), self.stored_key):
            self._fail()
        self.complete = True
        server_signature = hmac.new(self.server_key, auth_message, self.hash).digest()
        return b"v=" + base64.b64encode(server_signature)


def new_server(mechanism: str, listener: Listener, scram_lookup, tokens=None):
    if mechanism == "PLAIN":
        return PlainServer(listener.plain_users)
    return ScramServer(mechanism, lambda user: scram_lookup(user, mechanism), tokens)
