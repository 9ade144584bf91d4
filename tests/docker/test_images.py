"""The images, run as containers on the host's network (loopback listeners only).

* the broker image is slim (no Java, no compiler, non-root) and its own layers
  weigh little next to its base;
* a broker container configured by KAFKA_* on a free port serves real clients
  and its HEALTHCHECK (the image's own command, timings shortened) turns
  healthy;
* when another broker already holds the configured port, the container's
  broker exits naming the address, and the image's healthcheck reports
  unhealthy although *a* broker answers there (with host networking the old
  fixed ``127.0.0.1:9092`` probe said healthy).
"""
from __future__ import annotations

import json
import time

from dockerkit import docker, fact, image_mb
from harness import free_port, unique_name, wait_until


def broker_env(port: int) -> list[str]:
    listener = f"PLAINTEXT://127.0.0.1:{port}"
    return ["-e", f"KAFKA_LISTENERS={listener}", "-e", f"KAFKA_ADVERTISED_LISTENERS={listener}"]


def health(name: str) -> str:
    return docker("inspect", "--format", "{{.State.Health.Status}}", name).stdout.strip()


def test_broker_image_is_slim(images, docker_env):
    ref = images["minikafka"]
    config = json.loads(docker("image", "inspect", "--format", "{{json .Config}}", ref).stdout)
    assert config["User"] == "minikafka"
    assert config["Healthcheck"]["Test"][:4] == ["CMD", "python", "/opt/minikafka/docker/entrypoint.py",
                                                 "healthcheck"]
    found = docker("run", "--rm", "--network", "none", "--entrypoint", "sh", ref, "-c",
                   "id -u; for t in java gcc cc pyspark; do command -v $t || true; done").stdout.split()
    assert found == ["1000"], f"uid and tools found in the broker image: {found}"
    own = image_mb(ref) - image_mb(docker_env["base"])
    fact(f"minikafka:latest adds {own:.1f} MB to its base image")
    # ~47 MB since the codecs are the broker's own dependencies (issue 32: every batch is read):
    # zstandard's wheel alone is 24 MB (a C and a cffi backend), lz4 6, cramjam 4
    assert own < 55, f"the broker's layers weigh {own:.0f} MB"


def test_broker_container_on_a_free_port_is_healthy_and_serves(images):
    from kafka import KafkaConsumer, KafkaProducer
    port = free_port()
    name = unique_name("mk-broker")
    t0 = time.monotonic()
    docker("run", "-d", "--name", name, "--network", "host", *broker_env(port),
           "--tmpfs", "/var/lib/minikafka/data:uid=1000,gid=1000",
           "--health-interval", "1s", "--health-start-period", "20s", images["minikafka"])
    try:
        wait_until(lambda: health(name) == "healthy", timeout=60, interval=0.2,
                   message=lambda: docker("logs", name, check=False).stderr[-2000:])
        fact(f"broker container: docker run -> healthy in {time.monotonic() - t0:.1f} s"
             " (health interval 1 s)")
        p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all")
        p.send("docker-roundtrip", b"hello").get(timeout=30)
        p.close()
        c = KafkaConsumer("docker-roundtrip", bootstrap_servers=f"127.0.0.1:{port}",
                          auto_offset_reset="earliest", consumer_timeout_ms=10_000)
        assert [m.value for m in c] == [b"hello"]
        c.close()
        hc = docker("exec", name, "python", "/opt/minikafka/docker/entrypoint.py", "healthcheck",
                    check=False)
        assert hc.returncode == 0, hc.stderr
        assert f"PLAINTEXT 127.0.0.1:{port} serve" in hc.stdout
    finally:
        docker("rm", "-f", "-v", name, check=False)


def test_port_held_by_another_broker(images, broker, tmp_path):
    """``broker`` (a host process) holds the port the container is configured with."""
    port = broker.port
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    run = ["run", "--rm", "--network", "host", *broker_env(port),
           "-v", f"{data}:/var/lib/minikafka/data", images["minikafka"]]
    started = docker(*run, check=False, timeout=60)
    assert started.returncode == 1, started.stdout + started.stderr
    assert f"Socket server failed to bind to 127.0.0.1:{port}: Address already in use" \
        in started.stderr, started.stderr
    # Its data dir now names its cluster; the broker answering on the port is another one.
    hc = docker(*run, "healthcheck", "--timeout", "3", check=False, timeout=60)
    assert hc.returncode == 1, hc.stdout + hc.stderr
    assert f"PLAINTEXT 127.0.0.1:{port} is served by another broker" in hc.stderr, hc.stderr
    # ... while a plain ApiVersions probe of that address (the old check) says healthy
    old = docker("run", "--rm", "--network", "host", images["minikafka"], "minikafka",
                 "healthcheck", "--bootstrap-server", f"127.0.0.1:{port}", check=False)
    assert old.returncode == 0, old.stderr
