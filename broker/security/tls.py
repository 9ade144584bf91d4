"""TLS for SSL and SASL_SSL listeners with Python's ssl module, configured by Kafka's ``ssl.*``
keys (each also as ``listener.name.<l>.ssl.*``), and the client certificate's principal.

Key and trust stores are PEM, as files (``ssl.keystore.location``, ``ssl.truststore.location``)
or inline (``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``,
``ssl.truststore.certificates``), or PKCS12 files with their ``ssl.*store.password`` (read with
the ``cryptography`` package). JKS is refused at start. TLS 1.2 and 1.3 only.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile

from .listener import ANONYMOUS, Listener, invalid, listener_value, unsupported

CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}

# Set to anything but these and the listener is refused: minikafka cannot honour them.
_ONLY = {
    "ssl.protocol": ("TLSv1.3", "TLSv1.2", "TLS"),
    "ssl.keymanager.algorithm": ("SunX509", "PKIX"),
    "ssl.trustmanager.algorithm": ("PKIX", "SunX509"),
    "ssl.engine.factory.class": ("",),
    "ssl.provider": ("",),
    "ssl.cipher.suites": ("",),
    "ssl.secure.random.implementation": ("",),
}


def configure(raw: dict[str, str], lst: Listener) -> None:
    """Build ``lst.ssl_context`` from the broker properties; SecurityConfigError if not servable."""
    def get(key, default=None):
        return listener_value(raw, lst.name, key, default)

    for key, allowed in _ONLY.items():
        value, where = get(key)
        if value is not None and value.strip() not in allowed:
            raise unsupported(where, value, f"supported: {', '.join(a for a in allowed if a) or 'unset'}")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols, where = get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3")
    versions = [p.strip() for p in protocols.split(",") if p.strip()]
    bad = [p for p in versions if p not in TLS_VERSIONS]
    if bad or not versions:
        raise unsupported(where, protocols, "TLSv1.2 and TLSv1.3 only")
    ctx.minimum_version = min(TLS_VERSIONS[p] for p in versions)
    ctx.maximum_version = max(TLS_VERSIONS[p] for p in versions)
    rules, where = get("ssl.principal.mapping.rules", "DEFAULT")
    try:
        lst.principal_rules = parse_mapping_rules(rules)
    except ValueError as e:
        raise invalid(where, rules, str(e)) from None
    _load_keystore(ctx, get)
    client_auth, where = get("ssl.client.auth", "none")
    if lst.protocol == "SASL_SSL" and where == "ssl.client.auth":
        # Kafka (KIP-684): on SASL_SSL listeners only the listener-prefixed setting applies
        client_auth, where = "none", where
    if client_auth.strip().lower() not in CLIENT_AUTH:
        raise invalid(where, client_auth, "String must be one of: required, requested, none")
    lst.client_auth = client_auth.strip().lower()
    ctx.verify_mode = CLIENT_AUTH[lst.client_auth]
    if lst.client_auth != "none":
        _load_truststore(ctx, get)
    lst.ssl_context = ctx


def _store_type(get, key: str) -> str:
    value, where = get(key, "JKS")  # Kafka's default store type
    kind = value.strip().upper()
    if kind not in ("PEM", "PKCS12"):
        raise unsupported(where, value, "PEM and PKCS12 key and trust stores only")
    return kind


def _read_pkcs12(location: str, loc_key: str, password: str | None, pw_key: str):
    """(private key, certificate, other certificates) of a PKCS12 file, via ``cryptography``."""
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise invalid(loc_key, location, "PKCS12 stores need the 'cryptography' package "
                                         "(pip install 'minikafka[pkcs12]'), or use PEM") from None
    if password is None:
        raise invalid(pw_key, None, "a PKCS12 store needs its password")
    try:
        with open(location, "rb") as f:
            data = f.read()
    except OSError as e:
        raise invalid(loc_key, location, e.strerror or str(e)) from None
    try:
        return pkcs12.load_key_and_certificates(data, password.encode())
    except ValueError as e:
        raise invalid(loc_key, location, f"cannot read the PKCS12 store (wrong password?): {e}") from None


def _pem(certs) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs if c is not None)


def _load_keystore(ctx: ssl.SSLContext, get) -> None:
    location, loc_key = get("ssl.keystore.location")
    chain, chain_key = get("ssl.keystore.certificate.chain")
    key, key_key = get("ssl.keystore.key")
    key_password, _ = get("ssl.key.password")
    if location is None and chain is None:
        raise invalid(loc_key, None, "an SSL listener needs a key store "
                                     "(ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key)")
    password, pw_key = get("ssl.keystore.password")
    if _store_type(get, "ssl.keystore.type") == "PKCS12":
        if location is None:
            raise invalid(loc_key, None, "a PKCS12 key store is a file: set ssl.keystore.location")
        key_obj, cert, extra = _read_pkcs12(location, loc_key, password, pw_key)
        if key_obj is None or cert is None:
            raise invalid(loc_key, location, "the PKCS12 store holds no private key with its certificate")
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
        key_pem = key_obj.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
        with _private_file(_pem([cert, *(extra or [])])) as chain_path, _private_file(key_pem) as key_path:
            _load_chain(ctx, chain_path, key_path, None, loc_key)
        return
    if password:
        raise invalid(pw_key, "[hidden]", "SSL key store password cannot be specified with PEM format, "
                                          "only key password may be specified")
    if location is not None:
        if chain is not None or key is not None:
            raise invalid(chain_key if chain is not None else key_key, "[hidden]",
                          "ssl.keystore.location and an inline key store cannot both be set")
        _load_chain(ctx, location, None, key_password, loc_key)
        return
    if key is None:
        raise invalid(key_key, None, "ssl.keystore.certificate.chain needs ssl.keystore.key")
    # ssl loads certificates and keys from files only: write them to private temporary files,
    # removed as soon as they are loaded
    with _private_file(chain) as chain_path, _private_file(key) as key_path:
        _load_chain(ctx, chain_path, key_path, key_password, chain_key)


def _load_chain(ctx, certfile, keyfile, password, key_name) -> None:
    try:
        ctx.load_cert_chain(certfile, keyfile, password=password)
    except FileNotFoundError:
        raise invalid(key_name, certfile, "no such file") from None
    except (ssl.SSLError, OSError, ValueError) as e:
        raise invalid(key_name, certfile if keyfile is None else "[hidden]",
                      f"cannot load the PEM certificate chain and private key: {e}") from None


def _load_truststore(ctx: ssl.SSLContext, get) -> None:
    location, loc_key = get("ssl.truststore.location")
    certs, certs_key = get("ssl.truststore.certificates")
    if location is None and certs is None:
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)  # Java's default trust store, here the system's
        return
    password, pw_key = get("ssl.truststore.password")
    if _store_type(get, "ssl.truststore.type") == "PKCS12":
        if location is None:
            raise invalid(loc_key, None, "a PKCS12 trust store is a file: set ssl.truststore.location")
        _, cert, extra = _read_pkcs12(location, loc_key, password, pw_key)
        pem = _pem([cert, *(extra or [])])
        if not pem:
            raise invalid(loc_key, location, "the PKCS12 trust store holds no certificate")
        ctx.load_verify_locations(cadata=pem)
        return
    if password:
        raise invalid(pw_key, "[hidden]", "SSL trust store password cannot be specified for PEM format.")
    try:
        if location is not None:
            ctx.load_verify_locations(cafile=location)
        else:
            ctx.load_verify_locations(cadata=certs)
    except FileNotFoundError:
        raise invalid(loc_key, location, "no such file") from None
    except (ssl.SSLError, OSError, ValueError) as e:
        where, value = (loc_key, location) if location is not None else (certs_key, "[hidden]")
        raise invalid(where, value, f"cannot load the PEM trust store: {e}") from None


class _private_file:
    def __init__(self, text: str):
        self.text = text.replace("\\n", "\n")  # a properties file keeps an inline PEM on one line

    def __enter__(self) -> str:
        fd, self.path = tempfile.mkstemp(prefix="minikafka-", suffix=".pem")  # mode 0600
        with os.fdopen(fd, "w") as f:
            f.write(self.text)
        return self.path

    def __exit__(self, *exc):
        os.unlink(self.path)


# --------------------------------------------------------------------------- principal
# Java's X500Principal.getName(RFC2253) keywords; other attributes are written as OID=#hex
_RFC2253 = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
            "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
            "domainComponent": "DC", "userId": "UID"}
_OIDS = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16), "serialNumber": ("2.5.4.5", 0x13),
         "title": ("2.5.4.12", 0x0C), "surname": ("2.5.4.4", 0x0C), "givenName": ("2.5.4.42", 0x0C)}


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_hex(tag: int, value: str) -> str:
    data = value.encode()
    if len(data) < 128:
        length = bytes([len(data)])
    else:
        n = len(data).to_bytes((len(data).bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(n)]) + n
    return "#" + (bytes([tag]) + length + data).hex()


# Kafka's SslPrincipalMapper rule syntax: DEFAULT, or RULE:pattern/replacement/ with L or U
_RULE = re.compile(r"\s*((DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?))\s*(,\s*|$)")


class NoMatchingRule(Exception):
    """No ssl.principal.mapping.rules rule applies to a certificate's DN: authentication fails."""


def parse_mapping_rules(text: str) -> list:
    """[(compiled pattern, python replacement, case) or None for DEFAULT], as Kafka parses them."""
    rules, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _RULE.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"Invalid rule: {text[pos:]}")
        if m.group(8):
            raise ValueError(f"Invalid rule: {m.group(8)}")
        if m.group(2):
            rules.append(None)
        else:
            try:
                pattern = re.compile(m.group(3))
            except re.error as e:
                raise ValueError(f"Invalid rule pattern {m.group(3)}: {e}") from None
            # Java's $1 group references become Python's \g<1>
            replacement = re.sub(r"\$(\d+)", r"\\g<\1>", m.group(5).replace("\\", "\\\\"))
            rules.append((pattern, replacement, m.group(7)))
        pos = m.end()
    return rules or [None]


def apply_mapping_rules(rules: list, dn: str) -> str:
    for rule in rules:
        if rule is None:
            return dn
        pattern, replacement, case = rule
        if pattern.fullmatch(dn):
            name = pattern.sub(replacement, dn)
            return name.lower() if case == "L" else name.upper() if case == "U" else name
    raise NoMatchingRule(f"No rules apply to {dn}")


def principal_from_cert(cert: dict | None, rules: list | None = None) -> str:
    """Kafka's principal for a TLS client: the certificate subject's distinguished name as Java
    writes it (RFC 2253: last RDN first) through ssl.principal.mapping.rules (DEFAULT keeps it),
    ``User:ANONYMOUS`` without a client certificate. NoMatchingRule when no rule applies."""
    if not cert or not cert.get("subject"):
        return ANONYMOUS
    rdns = []
    for rdn in reversed(cert["subject"]):
        parts = []
        for name, value in rdn:
            if name in _RFC2253:
                parts.append(f"{_RFC2253[name]}={_escape(value)}")
            elif name in _OIDS:
                oid, tag = _OIDS[name]
                parts.append(f"{oid}={_der_hex(tag, value)}")
            else:
                parts.append(f"{name}={_escape(value)}")
        rdns.append("+".join(parts))
    return "User:" + apply_mapping_rules(rules or [None], ",".join(rdns))


__all__ = ["configure", "principal_from_cert", "parse_mapping_rules", "ANONYMOUS", "NoMatchingRule"]
