"""TLS material for the SSL listener of secured scenarios (dsl.SECURED), made by the openssl
command line once per process in a temp dir (removed at exit; no key is ever committed): a CA,
a server certificate for 127.0.0.1 and a client certificate with subject CN=alice."""
from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Material:
    ca: Path              # the CA certificate: the broker's trust store, the clients' CA file
    server: Path          # server key + certificate (a PEM key store)
    alice: Path           # client key + certificate (CN=alice)


_made: Material | None = None


def unavailable_reason() -> str | None:
    return None if shutil.which("openssl") else "no openssl command (apt-get install openssl)"


def material() -> Material:
    global _made
    if _made is None:
        d = Path(tempfile.mkdtemp(prefix="minikafka-conformance-tls-"))
        atexit.register(shutil.rmtree, d, True)

        def openssl(*args):
            subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
                "-subj", "/CN=minikafka-conformance-ca", "-keyout", "ca.key", "-out", "ca.crt")
        (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        for name, subj, ext in (("server", "/CN=localhost", ["-extfile", "san.ext"]), ("alice", "/CN=alice", [])):
            openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subj, "-keyout", f"{name}.key",
                    "-out", f"{name}.csr")
            openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                    "-sha256", "-days", "2", "-out", f"{name}.crt", *ext)
            (d / f"{name}.pem").write_text((d / f"{name}.key").read_text() + (d / f"{name}.crt").read_text())
        _made = Material(d / "ca.crt", d / "server.pem", d / "alice.pem")
    return _made
