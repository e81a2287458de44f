"""`seedbench serve-retriever` on loopback: Search-R1's request/response shapes, the env's HTTP retriever
against it, a server killed mid-episode (the episode is dropped and counted, the rollout goes on), hostile
requests (each answered with its 4xx status and a JSON detail, after which the server still serves), the
listen backlog, and the load benchmark at a tiny size."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("bm25s", reason="Search-QA needs the [search] extra: pip install 'seedbench[search]'")

from seedbench.engines.base import Generation, SamplingParams  # noqa: E402
from seedbench.envs.batch import LocalEnvs  # noqa: E402
from seedbench.envs.search.env import SearchQAEnv  # noqa: E402
from seedbench.envs.search.retrieval import HttpRetriever, RetrieverUnavailable  # noqa: E402
from seedbench.envs.search.serve import main as serve_main  # noqa: E402
from seedbench.envs.search.server import ServerLimits, make_server  # noqa: E402
from tests.benchmark_loader import load_benchmark  # noqa: E402
from seedbench.rollout.lockstep import run_episodes  # noqa: E402
from seedbench.rollout.types import TaskRef  # noqa: E402


def start_server():
    process = subprocess.Popen([sys.executable, "-m", "seedbench.cli", "serve-retriever", "--port", "0",
                                "--kb-size", "small"], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()  # "seedbench retriever: POST http://127.0.0.1:<port>/retrieve (...)"
    url = line.split()[3]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/retrieve"), line
    return process, url


@pytest.fixture(scope="module")
def shared_server():
    process, url = start_server()
    yield url
    process.kill()
    process.wait(timeout=10)


@pytest.fixture
def server():
    process, url = start_server()
    yield process, url
    process.kill()
    process.wait(timeout=10)


def post(url, payload):
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_request_and_response_shapes_match_search_r1(shared_server):
    url = shared_server
    with_scores = post(url, {"queries": ["a", "b"], "topk": 2, "return_scores": True})["result"]
    assert len(with_scores) == 2 and all(len(hits) == 2 for hits in with_scores)
    assert set(with_scores[0][0]) == {"document", "score"} and set(with_scores[0][0]["document"]) == {"id", "contents"}
    bare = post(url, {"queries": ["a"]})["result"]  # no topk: the server's default (3), no scores
    assert len(bare[0]) == 3 and set(bare[0][0]) == {"id", "contents"}
    with pytest.raises(urllib.error.HTTPError) as err:
        post(url, {"query": "wrong field"})
    assert err.value.code == 422


def test_http_env_sees_what_the_in_process_env_sees(shared_server):
    url = shared_server
    local, remote = SearchQAEnv(kb_size="small"), SearchQAEnv(kb_size="small", retriever="http", retriever_url=url)
    for env in (local, remote):
        env.reset(seed=2, options={"split": "test"})
    query = f"<search>{local.question['gold_titles'][0]}</search>"
    assert remote.step(query)[0] == local.step(query)[0]


def test_dead_server_raises_retriever_unavailable():
    with pytest.raises(RetrieverUnavailable, match="retrieval server"):
        HttpRetriever("http://127.0.0.1:9/retrieve", timeout_s=2).search(["q"], 3)


class KillingEngine:
    """Searches every turn and kills the retrieval server before the second turn's step."""

    name = "fake"

    def __init__(self, process):
        self.process, self.calls = process, 0

    def generate(self, prompts, params):
        self.calls += 1
        if self.calls == 2:
            self.process.kill()
            self.process.wait(timeout=10)
        return [Generation(token_ids=[5], logprobs=[-1.0], text="<think>t</think><search>anything</search>")
                for _ in prompts]

    def sync_weights(self):
        pass


def test_server_killed_mid_episode_drops_and_counts_the_episodes(server, tiny_tokenizer):
    process, url = server
    make = lambda: SearchQAEnv(kb_size="small", retriever="http", retriever_url=url, retriever_timeout_s=5)  # noqa: E731
    envs = LocalEnvs(make, 2)
    trajectories, _ = run_episodes(envs, make(), KillingEngine(process), tiny_tokenizer, [TaskRef("test", 0)],
                                   group_size=2, params=SamplingParams(), history_length=4, max_steps=5)
    assert [t.dropped for t in trajectories] == [True, True] and envs.dropped_episodes == 2
    assert all(len(t.steps) == 1 and t.steps[0].observation.startswith("Question:") for t in trajectories)
    # the slots are usable again after a reset (an in-process retriever now)
    envs.envs[0].retriever_kind, envs.envs[0]._retriever = "bm25", None
    envs.reset(0, 0, {"split": "test"})
    assert envs.step_many([(0, "<search>x</search>")])[0][0].startswith("<information>Doc 1")


# ---- hostile requests: a 4xx with a JSON detail, never a dropped connection; the server serves on after ----


def raw_post(url: str, body: bytes, headers: dict[str, str] | None = None, timeout: float = 5.0):
    """POST `body` with exactly `headers` (no Content-Length unless given): ``(status, decoded JSON body)``."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    head = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(f"POST /retrieve HTTP/1.1\r\nHost: {host}\r\n{head}\r\n".encode() + body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.getheader("Content-Type") == "application/json"
        return response.status, json.loads(response.read())


def sized(body: bytes) -> tuple[bytes, dict]:
    return body, {"Content-Length": str(len(body)), "Content-Type": "application/json"}


def assert_still_serves(url: str):
    hits = post(url, {"queries": ["capital"], "topk": 2, "return_scores": True})["result"]
    assert len(hits) == 1 and len(hits[0]) == 2 and set(hits[0][0]) == {"document", "score"}


DEEP = b'{"queries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

HOSTILE_BODIES = {
    # 400: not JSON
    "not json": (b"queries=a", 400, "malformed JSON"),
    "invalid utf-8": (b'{"queries": ["\xff"]}', 400, "malformed JSON"),
    "NaN topk": (b'{"queries": ["a"], "topk": NaN}', 400, "NaN is not JSON"),
    "Infinity topk": (b'{"queries": ["a"], "topk": -Infinity}', 400, "-Infinity is not JSON"),
    "100k-deep nesting": (DEEP, 400, "nested too deeply"),
    # 422: JSON, wrong fields
    "no queries": (b'{"query": "a"}', 422, '"queries": [str, ...]'),
    "a list at top level": (b'["a"]', 422, '"queries": [str, ...]'),
    "queries a string": (b'{"queries": "abc"}', 422, '"queries" must be a list of strings'),
    "a non-string query": (b'{"queries": ["a", 1]}', 422, '"queries" must be a list of strings'),
    "a null query": (b'{"queries": [null]}', 422, '"queries" must be a list of strings'),
    "257 queries": (json.dumps({"queries": ["a"] * 257}).encode(), 422, "has 257 items, at most 256"),
    "a 4097-char query": (json.dumps({"queries": ["a" * 4097]}).encode(), 422, "4097 characters, at most 4096"),
    "topk a string": (b'{"queries": ["a"], "topk": "abc"}', 422, '"topk" must be an integer from 1 to 100, got "abc"'),
    "topk a list": (b'{"queries": ["a"], "topk": [3]}', 422, "got [3]"),
    "topk a float": (b'{"queries": ["a"], "topk": 1.5}', 422, "got 1.5"),
    "topk 1e400": (b'{"queries": ["a"], "topk": 1e400}', 422, '"topk" must be an integer'),
    "topk true": (b'{"queries": ["a"], "topk": true}', 422, "got true"),
    "topk 0": (b'{"queries": ["a"], "topk": 0}', 422, "got 0"),
    "topk negative": (b'{"queries": ["a"], "topk": -2}', 422, "got -2"),
    "topk over the cap": (b'{"queries": ["a"], "topk": 101}', 422, "from 1 to 100, got 101"),
    "return_scores a string": (b'{"queries": ["a"], "return_scores": "yes"}', 422, '"return_scores" must be'),
}


@pytest.mark.parametrize("case", list(HOSTILE_BODIES))
def test_hostile_body_gets_its_status_and_a_json_detail(shared_server, case):
    body, status, detail = HOSTILE_BODIES[case]
    got, payload = raw_post(shared_server, *sized(body))
    assert got == status and set(payload) == {"detail"} and detail in payload["detail"], payload
    assert_still_serves(shared_server)


@pytest.mark.parametrize("headers, status, detail", [
    ({"Content-Length": "1000000000000"}, 413, "body of 1000000000000 bytes is over the limit of 1048576"),
    ({"Content-Length": "1048577"}, 413, "body of 1048577 bytes is over the limit of 1048576"),
    ({"Content-Length": "-5"}, 400, "Content-Length must not be negative, got -5"),
    ({"Content-Length": "ten"}, 400, "Content-Length must be a number of bytes, got 'ten'"),
    ({}, 411, "a Content-Length header is required"),
], ids=["a terabyte", "one byte over", "negative", "not a number", "missing"])
def test_bad_content_length_is_refused_before_the_body_is_read(shared_server, headers, status, detail):
    """Only the header and a 2-byte body are sent: a server that waited for the promised body would hang."""
    assert raw_post(shared_server, b"{}", headers) == (status, {"detail": detail})
    assert_still_serves(shared_server)


class EchoRetriever:
    """`topk` hits per query whose contents is the query: an in-process server without an index."""

    corpus = [{"id": "0", "contents": "title\ntext"}]

    def search(self, queries, topk):
        return [[{"document": {"id": str(i), "contents": q}, "score": 1.0} for i in range(topk)] for q in queries]


class running:  # noqa: N801 - used as a context manager
    """An in-process server with `limits` on a free loopback port, serving from a thread."""

    def __init__(self, limits: ServerLimits):
        self.server = make_server(EchoRetriever(), "127.0.0.1", 0, 3, limits)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/retrieve"

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_a_body_shorter_than_its_content_length_is_answered_408_after_the_read_timeout():
    with running(ServerLimits(read_timeout_s=0.5)) as url:
        t0 = time.monotonic()
        status, payload = raw_post(url, b'{"queries"', {"Content-Length": "100"}, timeout=5)
        waited = time.monotonic() - t0
        assert (status, payload) == (408, {"detail": "body not received within 0.5 s (Content-Length said 100 bytes)"})
        assert 0.45 < waited < 3
        assert_still_serves(url)


def test_a_silent_connection_is_closed_after_the_read_timeout():
    with running(ServerLimits(read_timeout_s=0.5)) as url:
        port = int(url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            t0 = time.monotonic()
            assert sock.recv(1) == b""  # the server closed it: no request line arrived
            assert 0.45 < time.monotonic() - t0 < 3
        assert_still_serves(url)


def connections_before_first_timeout(limits: ServerLimits, attempts: int = 40) -> int:
    """Loopback connections a server that accepts none (not serving yet) completes before one times out:
    the kernel completes handshakes only while the listen backlog has room."""
    server = make_server(EchoRetriever(), "127.0.0.1", 0, 3, limits)
    sockets = []
    try:
        for _ in range(attempts):
            try:
                sockets.append(socket.create_connection(server.server_address, timeout=0.3))
            except TimeoutError:
                break
        return len(sockets)
    finally:
        for sock in sockets:
            sock.close()
        server.server_close()


def test_default_listen_backlog_holds_a_burst_of_40_connections():
    assert ServerLimits().request_queue_size == 128
    assert connections_before_first_timeout(ServerLimits()) == 40
    # socketserver's default backlog of 5: Linux queues backlog + 1 handshakes, the 7th waits for a retransmit
    assert connections_before_first_timeout(ServerLimits(request_queue_size=5)) < 40


def test_cli_refuses_bad_limits_with_a_one_line_error(capsys):
    for argv, message in ((["--topk", "0"], "must be a positive integer, got 0"),
                          (["--read-timeout", "0"], "must be a positive number of seconds, got 0"),
                          (["--topk", "5", "--max-topk", "4"], "--topk 5 is over --max-topk 4")):
        with pytest.raises(SystemExit) as exit_:
            serve_main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_load_benchmark_at_a_tiny_size_answers_every_request(tmp_path):
    bench = load_benchmark("retriever_load")
    assert bench.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0 and bench.percentile([1.0, 2.0, 3.0, 4.0], 0.75) == 3.0
    assert bench.percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    out = tmp_path / "load.json"
    assert bench.main(["--clients", "4", "--requests", "5", "--max-seconds", "60", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["answered"], result["errors"], result["errors_by_kind"], result["not_sent"]) == (20, 0, {}, 0)
    assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["max_ms"] < 10_000
    assert result["server_peak_rss_mib"] > 10  # a Python process with bm25s loaded
