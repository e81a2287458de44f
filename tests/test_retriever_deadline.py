"""The retriever's ``read_timeout_s`` is one deadline per request, not a limit per read: a client that
trickles its request a byte at a time is cut off when the deadline passes; a client that leaves before its
answer costs no traceback. In-process servers on 127.0.0.1, every loop bounded."""

from __future__ import annotations

import json
import socket
import time

import pytest

pytest.importorskip("bm25s", reason="Search-QA needs the [search] extra: pip install 'seedbench[search]'")

from seedbench.envs.search.server import ServerLimits  # noqa: E402
from tests.test_search_server import assert_still_serves, running  # noqa: E402

TIMEOUT_S = 1.0
TRICKLE_S = 0.3
"""One byte per 0.3 s: well inside the timeout for every single read, so only a total deadline stops it."""


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def _trickle(sock: socket.socket, data: bytes, max_seconds: float) -> float:
    """Send `data` a byte per TRICKLE_S until the server answers or closes the connection, or `max_seconds`
    pass; the seconds the server let the request go on."""
    t0 = time.monotonic()
    for byte in data:
        if time.monotonic() - t0 > max_seconds:
            break
        try:
            sock.sendall(bytes([byte]))
        except OSError:  # reset: the server has closed it
            break
        time.sleep(TRICKLE_S)
        sock.setblocking(False)
        try:
            sock.recv(1 << 16, socket.MSG_PEEK)  # an answer or the end of the connection: it is over
            break
        except BlockingIOError:
            pass
        except OSError:
            break
        finally:
            sock.setblocking(True)
    return time.monotonic() - t0


def test_trickled_headers_are_cut_off_at_the_deadline():
    with running(ServerLimits(read_timeout_s=TIMEOUT_S)) as url:
        with socket.create_connection(("127.0.0.1", _port(url)), timeout=5) as sock:
            held = _trickle(sock, b"POST /retrieve HTTP/1.1\r\nX-Slow: " + b"a" * 100, max_seconds=8)
        assert held < TIMEOUT_S + 1.5, f"a trickling client held the connection {held:.1f} s"
        assert_still_serves(url)


def test_a_trickled_body_is_answered_408_at_the_deadline():
    body = json.dumps({"queries": ["what is the capital of france"]}).encode()
    with running(ServerLimits(read_timeout_s=TIMEOUT_S)) as url:
        with socket.create_connection(("127.0.0.1", _port(url)), timeout=5) as sock:
            sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
            held = _trickle(sock, body, max_seconds=8)
            sock.settimeout(5)
            answer = b""
            for _ in range(20):  # bounded: the answer is a few hundred bytes
                try:
                    chunk = sock.recv(4096)
                except OSError:
                    break
                if not chunk:
                    break
                answer += chunk
        assert held < TIMEOUT_S + 1.5, f"a trickled body held the connection {held:.1f} s"
        assert answer.startswith(b"HTTP/1.0 408") and b"body not received within 1 s" in answer
        assert_still_serves(url)


def test_a_client_that_leaves_before_its_answer_logs_no_traceback(capfd):
    payload = json.dumps({"queries": ["q"] * 200, "topk": 100}).encode()  # an answer of ~1 MB: writes block
    with running(ServerLimits(read_timeout_s=TIMEOUT_S)) as url:
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", _port(url)), timeout=5)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close = reset
            sock.sendall(b"POST /retrieve HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
            sock.recv(100)
            sock.close()
        time.sleep(0.5)
        assert_still_serves(url)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err
