"""A real cluster for the tests: opcoord and opworker from $OPQ_BIN_DIR (scripts/test sets it to
`swift build --show-bin-path`), Python workers as child processes (`python -m opqueue.worker`).
Every wait is bounded (`wait_until`); nothing sleeps to synchronise."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def bin_dir() -> Path:
    d = os.environ.get("OPQ_BIN_DIR")
    if not d:
        d = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.strip()
    path = Path(d)
    for exe in ("opcoord", "opworker", "opctl"):
        if not (path / exe).exists():
            pytest.fail("%s/%s is missing: run `swift build` first (or set OPQ_BIN_DIR)" % (path, exe))
    return path


def wait_until(what: str, cond: Callable[[], object], timeout: float = 20.0, logs: Callable[[], str] = lambda: "") -> object:
    """cond() until truthy, at most `timeout` s (polled every 20 ms); fails the test naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %g s waiting for %s\n%s" % (timeout, what, logs()))
        time.sleep(0.02)


class Cluster:
    def __init__(self, tmp: Path, keys: bool = False, heartbeat_ms: int = 200, liveness: int = 3,
                 journal: bool = False) -> None:
        self.dir, self.bin = tmp, bin_dir()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.keys_dir: Path | None = None
        args = ["--bind", "tcp://127.0.0.1:*", "--endpoint-file", str(tmp / "endpoint"), "--http", "off",
                "--heartbeat-ms", str(heartbeat_ms), "--liveness", str(liveness)]
        args += ["--state-dir", str(tmp / "state")] if journal else ["--ephemeral"]
        if keys:
            self.keys_dir = tmp / "keys"
            self.keys_dir.mkdir()
            self.new_key("coordinator")
            allow = self.keys_dir / "allow.txt"
            allow.touch(mode=0o644)
            self.allow("admin", "admin")
            self.allow("worker", "worker")
            args += ["--key", str(self.keys_dir / "coordinator.key"), "--allow", str(allow)]
        self.coordinator_args = args
        self.coordinator = self.launch([str(self.bin / "opcoord")] + args, "opcoord")
        wait_until("opcoord to write its endpoint", lambda: (tmp / "endpoint").exists()
                   and (tmp / "endpoint").read_text().startswith("tcp://"), logs=self.logs)
        self.endpoint = (tmp / "endpoint").read_text().strip()

    def stop_coordinator(self, sig: int = signal.SIGTERM) -> None:
        """SIGTERM: it tells its workers to reconnect; SIGKILL: it just dies."""
        self.coordinator.send_signal(sig)
        self.coordinator.wait(15)

    def restart_coordinator(self, sig: int | None = signal.SIGTERM) -> None:
        """Stops it (unless `sig` is None: stopped already), then a new opcoord on the same endpoint (and
        state directory, with a journal)."""
        if sig is not None:
            self.stop_coordinator(sig)
        (self.dir / "endpoint").unlink()
        args = list(self.coordinator_args)
        args[args.index("--bind") + 1] = self.endpoint
        self.coordinator = self.launch([str(self.bin / "opcoord")] + args, "opcoord-2")
        wait_until("the new opcoord to listen", lambda: (self.dir / "endpoint").exists(), logs=self.logs)
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- keys

    def new_key(self, name: str) -> Path:
        assert self.keys_dir is not None
        path = self.keys_dir / ("%s.key" % name)
        subprocess.run([str(self.bin / "opctl"), "keys", "new", str(path)], check=True, capture_output=True)
        return path

    def allow(self, name: str, roles: str, *scopes: str) -> None:
        """Adds key `name` (made now) to the allow file; waits until the coordinator has reloaded it."""
        assert self.keys_dir is not None
        path = self.keys_dir / ("%s.key" % name)
        if not path.exists():
            self.new_key(name)
        allow = self.keys_dir / "allow.txt"
        before = self.log("opcoord").count("allow file reloaded")
        line = " ".join([(self.keys_dir / ("%s.key.pub" % name)).read_text().split()[-1], name, roles, *scopes])
        with allow.open("a") as f:
            f.write(line + "\n")
        if hasattr(self, "coordinator"):
            wait_until("the allow file reloaded", lambda: self.log("opcoord").count("allow file reloaded") > before,
                       logs=self.logs)

    def key_options(self, name: str) -> dict[str, str]:
        assert self.keys_dir is not None
        return {"key": str(self.keys_dir / ("%s.key" % name)),
                "coordinator_key": str(self.keys_dir / "coordinator.key.pub")}

    def key_args(self, name: str) -> list[str]:
        o = self.key_options(name)
        return ["--key", o["key"], "--coordinator-key", o["coordinator_key"]]

    # -- processes

    def launch(self, argv: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        out = open(self.dir / ("%s.log" % log), "ab")
        e = dict(os.environ)
        e.pop("OPQ_KEY", None)
        e.pop("OPQ_COORDINATOR_KEY", None)
        e["PYTHONUNBUFFERED"] = "1"
        e.update(env or {})
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=e, cwd=self.dir)
        out.close()
        self.procs.append(p)
        return p

    def swift_worker(self, name: str, slots: int = 2, key: str | None = None) -> subprocess.Popen[bytes]:
        args = ["--connect", self.endpoint, "--name", name, "--slots", str(slots), "--prefetch", "0"]
        if self.keys_dir is not None:
            args += self.key_args(key or "worker")
        p = self.launch([str(self.bin / "opworker")] + args, name)
        self.wait_registered(name)
        return p

    def python_worker(self, module: str, name: str, env: dict[str, str] | None = None,
                      wait: bool = True) -> subprocess.Popen[bytes]:
        """`python -m opqueue.worker module:make` with $WORKER_NAME and $OPQ_ENDPOINT set for the module."""
        e = {"OPQ_ENDPOINT": self.endpoint, "WORKER_NAME": name, "PYTHONPATH": str(HERE / "workers")}
        e.update(env or {})
        p = self.launch([sys.executable, "-m", "opqueue.worker", module, "--log-level", "debug"], name, env=e)
        if wait:
            self.wait_registered(name, p)
        return p

    def python_worker_script(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        p = self.launch([sys.executable] + argv, name)
        self.wait_registered(name, p)
        return p

    def wait_registered(self, name: str, p: subprocess.Popen[bytes] | None = None) -> None:
        from opqueue import Client

        def registered() -> bool:
            if p is not None and p.poll() is not None:
                pytest.fail("worker %s exited with %s:\n%s" % (name, p.returncode, self.log(name)))
            return any(w.name == name for w in self.admin().workers())
        wait_until("worker %s to register" % name, registered, logs=self.logs)

    _admin = None

    def admin(self):  # type: ignore[no-untyped-def]
        from opqueue import Client
        if self._admin is None:
            opts = self.key_options("admin") if self.keys_dir is not None else {}
            self._admin = Client(self.endpoint, timeout=10, **opts)
        return self._admin

    def log(self, name: str) -> str:
        p = self.dir / ("%s.log" % name)
        return p.read_text(errors="replace") if p.exists() else ""

    def logs(self) -> str:
        return "\n".join("--- %s\n%s" % (f.name, "\n".join(f.read_text(errors="replace").splitlines()[-30:]))
                         for f in sorted(self.dir.glob("*.log")))

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def make_cluster() -> Iterator[Callable[..., Cluster]]:
    """make_cluster(keys=False, heartbeat_ms=200, liveness=3): a cluster stopped after the test."""
    made: list[tuple[Cluster, Path]] = []

    def make(**kw: object) -> Cluster:
        tmp = Path(tempfile.mkdtemp(prefix="opq-py-"))
        c = Cluster(tmp, **kw)  # type: ignore[arg-type]
        made.append((c, tmp))
        return c
    yield make
    for c, tmp in made:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def cluster(make_cluster: Callable[..., Cluster]) -> Cluster:
    return make_cluster()
