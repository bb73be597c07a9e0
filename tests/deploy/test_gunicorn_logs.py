"""The web pod's own process, `gunicorn portal.wsgi` as the chart and docker-compose.yml run it
(gunicorn.conf.py is read from the working directory): with PORTAL_LOG_FORMAT=json every line it
writes is a JSON object, gunicorn's boot and access lines included, and the access line carries
the request id the portal answered with."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
# A calendar feed's address carries its secret in the path (portal.kernel.accounts.calendarfeeds).
FEED_SECRET = "gcal_Zq8vKx3mWp0RtY7uLs2N"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


def serve_and_ask(tmp_path: Path, log_format: str) -> tuple[list[str], str]:
    port = free_port()
    env = {**os.environ, "PORTAL_LOG_FORMAT": log_format, "PORTAL_VAR_DIR": str(tmp_path), "HOME": str(tmp_path)}
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        server = subprocess.Popen([str(GUNICORN), "portal.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
                                   "--access-logfile", "-"], cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
    try:
        deadline = time.monotonic() + 60
        while True:  # until it answers: start-up time is not what is tested
            try:
                status, _ = get(f"http://127.0.0.1:{port}/healthz", {})
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        status, headers = get(f"http://127.0.0.1:{port}/healthz", {"X-Request-ID": "edge-42"})
        assert (status, headers["X-Request-ID"]) == (200, "edge-42")
        get(f"http://127.0.0.1:{port}/calendar/feeds/{FEED_SECRET}/environments/prod.ics", {})
        status, headers = get(f"http://127.0.0.1:{port}/no-such-page", {})
        assert status == 404
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    lines = out.read_text().splitlines() + err.read_text().splitlines()
    # The feed's access line is written, its secret redacted.
    assert [line for line in lines if "/calendar/feeds/gcal_" in line]
    assert not [line for line in lines if FEED_SECRET[5:] in line]
    return lines, headers["X-Request-ID"]


def test_every_line_of_the_web_process_is_json(tmp_path):
    lines, not_found_id = serve_and_ask(tmp_path, "json")
    # Python's own warnings (a missing staticfiles/ outside the image) are not log records.
    records = [json.loads(line) for line in lines if line.startswith("{")]
    others = [line for line in lines if not line.startswith("{")]
    assert all("Warning" in line or line.startswith("  ") for line in others), others
    loggers = {record["logger"] for record in records}
    assert {"gunicorn.error", "gunicorn.access", "django.request"} <= loggers
    access = [record for record in records if record["logger"] == "gunicorn.access"]
    assert {"edge-42", not_found_id} <= {record["request_id"] for record in access}
    # The 404 asked for is logged once, under the id it was answered with (the feed's request
    # may log its own 404 or error, depending on the database the server finds).
    (not_found,) = [record for record in records
                    if record["logger"] == "django.request" and record.get("request_id") == not_found_id]
    assert not_found["message"].startswith("Not Found")


def test_plain_access_lines_name_the_request_id(tmp_path):
    lines, _ = serve_and_ask(tmp_path, "plain")
    assert any('"GET /healthz HTTP/1.1" 200' in line and line.endswith("request_id=edge-42") for line in lines)
