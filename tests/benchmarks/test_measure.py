"""A page that gets no answer is an error of its row in the bench's table, never the end of a
run of half an hour (a worker killed at its timeout while writing an export closed the
connection, and the run stopped on an empty list of latencies)."""

import socket
import threading
from types import SimpleNamespace

import pytest

from bench.measure import summarise, time_latencies


@pytest.fixture
def hanging_up_server():
    """A server on 127.0.0.1 that reads each request and closes the connection unanswered."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    listener.close()


def test_requests_without_an_answer_are_counted_as_errors(hanging_up_server):
    options = SimpleNamespace(requests=4, concurrency=2, seconds_per_mode=5.0)  # what it reads

    timed = time_latencies(hanging_up_server, "/anything/", "cookie", options)
    summary = summarise(timed)

    assert len(timed["sequential"]) == 4
    assert len(timed["concurrent"]) == 4
    assert summary["errors"] == 8
    assert summary["error_statuses"] == ["no answer (RemoteDisconnected)"]
    assert summary["sequential"]["count"] == summary["concurrent"]["count"] == 4
