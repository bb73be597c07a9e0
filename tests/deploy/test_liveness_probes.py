"""The chart's exec probes for workers and beat, run as the kubelet runs them (`sh -c`), against a
real Celery worker and against files of a known age.

A worker touches its heartbeat file from the consumer's event loop (portal/celery.py): while it
runs the probe passes; frozen (SIGSTOP: the process lives, nothing is consumed) the file goes
stale and the probe fails; thawed, it passes again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deploy.test_helm_chart import objects

ROOT = Path(__file__).resolve().parents[2]


def probe_command(name: str) -> str:
    (deployment,) = [d for d in objects("default", "Deployment") if d["metadata"]["name"] == name]
    command = deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]["command"]
    assert command[:2] == ["sh", "-c"]
    return command[2]


def passes(script: str, env: dict[str, str]) -> bool:
    return subprocess.run(["sh", "-c", script], env={**os.environ, **env}, capture_output=True).returncode == 0


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_the_worker_probe_follows_a_real_workers_heartbeat(tmp_path):
    script = probe_command("gitops-portal-worker-poll")
    heartbeat = tmp_path / "worker-heartbeat"
    env = {"PORTAL_WORKER_HEARTBEAT_FILE": str(heartbeat), "PORTAL_VAR_DIR": str(tmp_path / "var")}
    assert not passes(script, env), "no file yet: not alive"
    # A queue of its own: the worker must take none of the suite's tasks.
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool", "solo", "--loglevel", "WARNING",
         "--queues", f"liveness-{os.getpid()}", "--hostname", f"liveness-{os.getpid()}@%h"],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        assert wait_for(heartbeat.exists, 60), "the worker never touched its heartbeat file"
        assert passes(script, env)
        # A consuming worker refreshes an old file by itself (its heartbeat every 2 s). Whether
        # the probe fails on a stale file is checked below, with the worker stopped: checked
        # here it would race the next heartbeat.
        age(heartbeat, 600)
        assert wait_for(lambda: passes(script, env)), "a consuming worker refreshes it"

        worker.send_signal(signal.SIGSTOP)  # alive, consuming nothing
        age(heartbeat, 600)
        touched = heartbeat.stat().st_mtime
        assert not wait_for(lambda: heartbeat.stat().st_mtime != touched, 5), "a frozen worker touched the file"
        assert not passes(script, env)
        worker.send_signal(signal.SIGCONT)
        assert wait_for(lambda: passes(script, env)), "a thawed worker is alive again"
    finally:
        worker.send_signal(signal.SIGCONT)
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


@pytest.mark.parametrize("files, alive", [
    ({}, False),
    ({"celerybeat-schedule": 5}, True),  # dbm.gnu keeps one file
    ({"celerybeat-schedule.dat": 60, "celerybeat-schedule.dir": 60}, True),  # dbm.dumb, as in the image
    ({"celerybeat-schedule.dat": 11 * 60}, False),  # past livenessSeconds (600)
    ({"celerybeat-schedule.db": 11 * 60, "celerybeat-schedule.bak": 30}, True),
    ({"other-file": 5}, False),
])
def test_the_beat_probe_reads_its_schedule_files_age(tmp_path, files, alive):
    script = probe_command("gitops-portal-beat")
    assert "/tmp " in script
    for name, seconds in files.items():
        (tmp_path / name).touch()
        age(tmp_path / name, seconds)
    assert passes(script.replace("/tmp ", f"{tmp_path} "), {}) is alive
