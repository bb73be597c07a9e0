"""/healthz and /readyz (portal/probes.py), the probes of the chart's web pods.

The outages are real: the database and the broker are reached through a TCP gate in this process
that forwards to the real PostgreSQL and Redis, and that the test shuts (every connection cut,
every new one closed at once) and opens again. The portal's own connection code sees exactly what
it sees when the server goes away.
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.db.utils import ConnectionHandler

from portal import probes


class TcpGate:
    """A loopback port that forwards to `target` while open; shut, it cuts every connection."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open = True
        self._pipes: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._pipes += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(a, selectors.EVENT_READ, b)
            selector.register(b, selectors.EVENT_READ, a)
            try:
                while True:
                    for key, _ in selector.select():
                        data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                        if not data:
                            return
                        key.data.sendall(data)
            except OSError:
                return
            finally:
                a.close()
                b.close()

    def shut(self) -> None:
        self.open = False
        with self._lock:
            pipes, self._pipes = self._pipes, []
        for sock in pipes:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.shut()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        except OSError:
            pass
        self.listener.close()


@pytest.fixture
def gate_to() -> Iterator:
    gates: list[TcpGate] = []

    def make(host: str, port: int) -> TcpGate:
        gates.append(TcpGate((host, port)))
        return gates[-1]

    yield make
    for gate in gates:
        gate.close()


# No django_db mark: pytest-django makes any database access here an error.
def test_healthz_answers_without_login_and_without_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok\n"
    assert "no-cache" in response["Cache-Control"]
    assert client.head("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readyz_is_ok_with_database_migrations_and_broker(client):
    response = client.get("/readyz")
    assert (response.status_code, response.content) == (200, b"ok\n")


@pytest.mark.django_db
def test_readyz_fails_while_the_database_is_unreachable_and_recovers(client, gate_to, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("the database outage is staged on PostgreSQL's TCP port (CI runs it)")
    db = connection.settings_dict
    gate = gate_to(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432))
    # The probe's own connection, to the test database, through the gate.
    handler = ConnectionHandler({"default": {**db, "HOST": "127.0.0.1", "PORT": str(gate.port), "CONN_MAX_AGE": 60}})
    monkeypatch.setattr(probes, "connections", handler)
    monkeypatch.setattr(probes, "_migrated", set())
    try:
        assert client.get("/readyz").status_code == 200
        gate.shut()
        response = client.get("/readyz")
        assert (response.status_code, response.content) == (503, b"database: failed\n")
        assert str(gate.port) not in response.content.decode()
        gate.open = True
        assert (client.get("/readyz").status_code, client.get("/readyz").content) == (200, b"ok\n")
    finally:
        handler.close_all()


@pytest.mark.django_db
def test_readyz_fails_while_migrations_are_pending(client, monkeypatch):
    monkeypatch.setattr(probes, "_migrated", set())
    # A migration this code knows and the database has not recorded: what a new image sees
    # before its pre-upgrade hook has run.
    from django.db.migrations.recorder import MigrationRecorder

    recorded = MigrationRecorder.Migration.objects.filter(app="gitops").order_by("-id").first()
    assert recorded is not None
    recorded.delete()
    response = client.get("/readyz")
    assert (response.status_code, response.content) == (503, b"migrations: failed\n")


@pytest.mark.django_db
def test_readyz_fails_while_the_broker_is_unreachable_and_recovers(client, gate_to, celery_conf):
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        pytest.skip("the broker outage is staged on Redis's TCP port (CI runs it)")
    where = urlsplit(redis_url)
    gate = gate_to(where.hostname or "127.0.0.1", where.port or 6379)
    celery_conf(broker_url=f"redis://127.0.0.1:{gate.port}{where.path}", broker_write_url=None)
    assert client.get("/readyz").status_code == 200
    gate.shut()
    response = client.get("/readyz")
    assert (response.status_code, response.content) == (503, b"broker: failed\n")
    gate.open = True
    response = client.get("/readyz")
    assert (response.status_code, response.content) == (200, b"ok\n")
