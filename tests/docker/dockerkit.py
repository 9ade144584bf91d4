"""Helpers for the docker tests: the docker CLI, compose stacks, facts for the summary."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness import REPO_ROOT

FACTS: list[str] = []          # printed in the terminal summary (conftest)


def fact(line: str) -> None:
    FACTS.append(line)


def docker(*args: str, timeout: float = 120, check: bool = True,
           **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])}... exited {proc.returncode}:\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def image_mb(ref: str) -> float:
    return int(docker("image", "inspect", "--format", "{{.Size}}", ref).stdout) / 1e6



class Compose:
    """``docker compose`` on some files with a project name and variables."""

    def __init__(self, cmd: list[str], files: list[Path], project: str, env: dict[str, str]):
        self.cmd = [*cmd, "-p", project]
        for f in files:
            self.cmd += ["-f", str(f)]
        self.env = dict(os.environ, **env)

    def __call__(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([*self.cmd, *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env, cwd=REPO_ROOT)
        if check and proc.returncode != 0:
            raise AssertionError(f"compose {' '.join(args)} exited {proc.returncode}:\n"
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n{self.logs()}")
        return proc

    def config(self) -> dict:
        return json.loads(self("config", "--format", "json").stdout)

    def logs(self, tail: int = 40) -> str:
        try:
            p = subprocess.run([*self.cmd, "logs", "--no-color", "--tail", str(tail)],
                               capture_output=True, text=True, timeout=60, env=self.env)
            return p.stdout[-12000:]
        except subprocess.TimeoutExpired:
            return "(compose logs timed out)"

    def container(self, service: str) -> str:
        return self("ps", "-a", "-q", service).stdout.strip()

    def state(self, service: str) -> dict:
        return json.loads(docker("inspect", "--format", "{{json .State}}",
                                 self.container(service)).stdout)

    def down(self) -> None:
        self("down", "-v", "--remove-orphans", "--timeout", "5", check=False)
