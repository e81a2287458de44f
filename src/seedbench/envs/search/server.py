"""The HTTP side of `seedbench serve-retriever`: Search-R1's ``POST /retrieve`` over any `Retriever`.

Request ``{"queries": [str, ...], "topk": k, "return_scores": bool}``, response ``{"result": [[doc, ...],
...]}`` or, with scores, ``[[{"document": doc, "score": s}, ...]]``. Stdlib ``http.server``, one thread
per connection.

The server may be reached by anything on its host, so every request is checked before it costs work,
and a bad one gets a JSON ``{"detail": ...}`` answer instead of a dropped connection:

- 400: not JSON (including ``NaN``/``Infinity``, which Python's parser accepts but JSON forbids, and
  nesting deeper than Python's recursion limit), or a Content-Length that is not a number;
- 408: the client promised more body bytes than it sent within ``read_timeout_s`` (without this a
  lying ``Content-Length`` holds a worker thread forever);
- 411: no Content-Length;
- 413: a Content-Length over ``max_body_bytes`` (answered before reading the body);
- 422: well-formed JSON with invalid fields: ``queries`` not a list of strings, more than
  ``max_queries`` of them or one longer than ``max_query_chars``; ``topk`` not an integer in
  ``1..max_topk`` (booleans are not integers here; ``null`` or absent means the server's default);
  ``return_scores`` not a boolean;
- 500: the retriever itself failed (one line in the log, the server goes on).

``read_timeout_s`` is one deadline per request, from the moment the server waits for its request line to
the last body byte, not a limit per read: a client that trickles a byte every second would otherwise hold
a worker thread as long as it likes. A request that misses it gets 408 (or, before its request line, a
closed connection). A client that leaves before its answer is written is nothing to report: the answer is
dropped without a traceback.

The listen backlog (``request_queue_size``) is what lets many clients connect at once: with
socketserver's default of 5, a burst of connections overflows it and the kernel drops the extra SYNs,
which clients see as resets or a one-second retransmit.
"""

from __future__ import annotations

import io
import json
import socket
import sys
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from seedbench.envs.search.retrieval import Retriever

LINGER_S = 1.0
"""At most this long a refused connection is drained before it is closed (see ``_linger``)."""
USAGE = 'expected JSON {"queries": [str, ...], "topk": k, "return_scores": bool}'


@dataclass(frozen=True)
class ServerLimits:
    """What one request may ask of the server; the defaults are also the CLI's."""

    max_body_bytes: int = 1 << 20
    """Largest accepted request body (1 MiB: ~250 queries of 4,096 characters)."""
    max_queries: int = 256
    """Queries per request (Search-R1 batches one query per live episode)."""
    max_query_chars: int = 4096
    """Characters per query (a search is a sentence, not a document)."""
    max_topk: int = 100
    """Largest ``topk``: each hit is a whole passage in the response."""
    read_timeout_s: float = 10.0
    """Seconds a request may take to arrive in full: request line, headers and body together (one deadline,
    also for a connection that stays silent)."""
    request_queue_size: int = 128
    """Listen backlog: connections the kernel queues before the server accepts them."""

    def __post_init__(self):
        for name in ("max_body_bytes", "max_queries", "max_query_chars", "max_topk", "request_queue_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if not self.read_timeout_s > 0:
            raise ValueError(f"read_timeout_s must be positive, got {self.read_timeout_s!r}")


class RequestError(Exception):
    """A request the server refuses: its HTTP status and the one-line reason sent back as ``detail``."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def decode_body(body: bytes) -> object:
    """The JSON value of `body`, or `RequestError` 400 (invalid UTF-8/JSON, NaN/Infinity, too deep)."""
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:
        raise RequestError(400, "malformed JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise RequestError(400, f"malformed JSON: {err}") from None


def parse_request(payload: object, limits: ServerLimits, default_topk: int) -> tuple[list[str], int, bool]:
    """``(queries, topk, return_scores)`` of a decoded body, or `RequestError` 422 naming the bad field."""
    if not isinstance(payload, dict) or "queries" not in payload:
        raise RequestError(422, USAGE)
    queries = payload["queries"]
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise RequestError(422, f'"queries" must be a list of strings; {USAGE}')
    if len(queries) > limits.max_queries:
        raise RequestError(422, f'"queries" has {len(queries)} items, at most {limits.max_queries} per request')
    longest = max(map(len, queries), default=0)
    if longest > limits.max_query_chars:
        raise RequestError(422, f"a query has {longest} characters, at most {limits.max_query_chars}")
    topk = payload.get("topk")
    if topk is None:
        topk = default_topk
    elif isinstance(topk, bool) or not isinstance(topk, int) or not 1 <= topk <= limits.max_topk:
        raise RequestError(422, f'"topk" must be an integer from 1 to {limits.max_topk}, got {json.dumps(topk)}')
    return_scores = payload.get("return_scores", False)
    if not isinstance(return_scores, bool):
        raise RequestError(422, f'"return_scores" must be true or false, got {json.dumps(return_scores)}')
    return queries, topk, return_scores


def body_length(header: str | None, limits: ServerLimits) -> int:
    """The Content-Length to read, or `RequestError` 411/400/413 before any body byte is read."""
    if header is None:
        raise RequestError(411, "a Content-Length header is required")
    try:
        length = int(header)
    except ValueError:
        raise RequestError(400, f"Content-Length must be a number of bytes, got {header[:40]!r}") from None
    if length < 0:
        raise RequestError(400, f"Content-Length must not be negative, got {length}")
    if length > limits.max_body_bytes:
        raise RequestError(413, f"body of {length} bytes is over the limit of {limits.max_body_bytes}")
    return length


class DeadlineReader(io.RawIOBase):
    """The reading side of a connection, under one deadline that `start` sets: each read waits at most for
    the time left, and a read after the deadline raises `TimeoutError` (as a socket timeout does)."""

    def __init__(self, sock: socket.socket, timeout_s: float):
        self.sock, self.timeout_s, self.deadline = sock, timeout_s, time.monotonic() + timeout_s

    def start(self) -> None:
        """A new request: its request line, headers and body must all arrive within ``timeout_s`` from now."""
        self.deadline = time.monotonic() + self.timeout_s

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"request not received within {self.timeout_s:g} s")
        self.sock.settimeout(left)
        try:
            return self.sock.recv_into(buffer)
        finally:
            self.sock.settimeout(self.timeout_s)  # writes of the answer keep the whole timeout


def make_handler(retriever: Retriever, default_topk: int, limits: ServerLimits):
    class RetrieveHandler(BaseHTTPRequestHandler):
        timeout = limits.read_timeout_s  # the socket's timeout outside the request's reads (the answer's writes)

        def setup(self):
            super().setup()
            self.rfile = io.BufferedReader(DeadlineReader(self.connection, limits.read_timeout_s))

        def handle_one_request(self):
            self.rfile.raw.start()  # one deadline per request, from the wait for its request line
            super().handle_one_request()

        def do_POST(self):  # noqa: N802 - http.server's naming
            if self.path.rstrip("/") != "/retrieve":
                return self._reply(404, {"detail": "only POST /retrieve"})
            try:
                length = body_length(self.headers.get("Content-Length"), limits)
                body = self._read_body(length)
                queries, topk, return_scores = parse_request(decode_body(body), limits, default_topk)
            except RequestError as err:
                return self._reply(err.status, {"detail": err.detail})
            try:
                hits = retriever.search(queries, topk)
            except Exception as err:  # a broken retriever answers 500 and the server goes on
                print(f"seedbench retriever: search failed: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
                return self._reply(500, {"detail": f"retriever failed: {type(err).__name__}"})
            if not return_scores:
                hits = [[hit["document"] for hit in row] for row in hits]
            self._reply(200, {"result": hits})

        def _read_body(self, length: int) -> bytes:
            try:
                body = self.rfile.read(length)
            except TimeoutError:
                raise RequestError(408, f"body not received within {limits.read_timeout_s:g} s "
                                        f"(Content-Length said {length} bytes)") from None
            if len(body) < length:
                raise RequestError(400, f"body ended after {len(body)} of {length} bytes")
            return body

        def _reply(self, status: int, payload: dict):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status >= 400:
                self.send_header("Connection", "close")
                self.close_connection = True
            try:
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except ConnectionError:  # the client left before its answer: nothing to send it, nothing to report
                self.close_connection = True
                return
            if status >= 400:
                self._linger()

        def _linger(self):
            """Send FIN, then discard what the client still sends (bounded in bytes and time) before closing.

            Closing a socket with unread bytes in its receive buffer sends a reset, and a reset can destroy
            the error response before the client reads it; refused requests often leave their body unread."""
            try:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_WR)
                self.connection.settimeout(LINGER_S)
                drained, deadline = 0, time.monotonic() + LINGER_S
                while drained <= limits.max_body_bytes and time.monotonic() < deadline:
                    chunk = self.connection.recv(1 << 16)
                    if not chunk:
                        break
                    drained += len(chunk)
            except OSError:  # the client is gone or silent: nothing more to save
                pass

        def log_message(self, *args):  # one line per request is noise at thousands of requests
            pass

    return RetrieveHandler


class RetrieverHTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a configurable listen backlog (socketserver's default is 5)."""

    daemon_threads = True

    def __init__(self, address, handler, request_queue_size: int):
        self.request_queue_size = request_queue_size  # read by server_activate's listen()
        super().__init__(address, handler)

    def handle_error(self, request, client_address):
        """A client that resets or leaves mid-request is routine on a shared port: no traceback for it."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def make_server(retriever: Retriever, host: str = "127.0.0.1", port: int = 8000, topk: int = 3,
                limits: ServerLimits | None = None) -> RetrieverHTTPServer:
    """An unstarted server (``port=0`` picks a free port: ``server.server_address[1]``)."""
    limits = limits or ServerLimits()
    if not 1 <= topk <= limits.max_topk:
        raise ValueError(f"default topk must be from 1 to max_topk={limits.max_topk}, got {topk}")
    return RetrieverHTTPServer((host, port), make_handler(retriever, topk, limits), limits.request_queue_size)


def serve(retriever: Retriever, host: str = "127.0.0.1", port: int = 8000, topk: int = 3,
          limits: ServerLimits | None = None) -> None:
    """Serve until interrupted."""
    server = make_server(retriever, host, port, topk, limits)
    print(f"seedbench retriever: POST http://{host}:{server.server_address[1]}/retrieve "
          f"({len(getattr(retriever, 'corpus', []))} passages, default topk {topk})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
