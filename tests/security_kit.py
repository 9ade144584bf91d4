"""Test certificates and secured broker settings, made at test time in a temporary directory
with the openssl command line (no key is ever committed)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CLIENT_DN = "CN=client,OU=test,O=minikafka"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass
class Certs:
    dir: Path
    ca: Path             # the CA certificate (PEM): clients' ssl.ca.location, the broker's trust store
    server: Path         # server key + certificate chain in one PEM (ssl.keystore.location)
    server_cert: Path
    server_key: Path
    client_cert: Path    # client certificate signed by the CA (subject CLIENT_DN)
    client_key: Path
    other_ca: Path       # a CA nobody trusts


def make_certs(d: Path) -> Certs:
    if shutil.which("openssl") is None:
        import pytest
        pytest.skip("openssl command not found")
    d.mkdir(parents=True, exist_ok=True)
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
                 "-days", "2", "-subj", f"/CN=minikafka test {ca}", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subj, ext in (("server", "/CN=localhost", ["-extfile", "san.ext"]),
                            ("client", "/O=minikafka/OU=test/CN=client", [])):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subj, cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", *ext, cwd=d)
    (d / "server-keystore.pem").write_text((d / "server.key").read_text() + (d / "server.pem").read_text())
    return Certs(d, d / "ca.pem", d / "server-keystore.pem", d / "server.pem", d / "server.key",
                 d / "client.pem", d / "client.key", d / "other-ca.pem")


def plain_jaas(users: dict[str, str]) -> str:
    opts = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {opts};"


SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
