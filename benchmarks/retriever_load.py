"""Retriever server under load: N concurrent loopback clients × M requests against `seedbench serve-retriever`.

    python benchmarks/retriever_load.py [--clients 20] [--requests 50] [--kb-size small]
                                        [--max-seconds 120] [--out benchmarks/results/retriever_load.json]

It starts its own server (a child process on 127.0.0.1, a free port, the checkout's ``src/``), releases
all clients at once (each a thread doing its M requests one after another, a new connection per request,
like the env's `HttpRetriever`: one query, topk 3, with scores), then stops the server. Nothing leaves
loopback; the run is bounded by the request count, a per-request timeout and ``--max-seconds`` (requests
not started by then are counted as ``not_sent``).

Printed and written: latency p50/p99/max over answered requests, requests slower than 1 s (a dropped SYN
is retransmitted after 1 s, so a full listen backlog shows up there), errors by kind (``reset``,
``timeout``, ``http_<code>``, ...) and the server's peak resident memory (VmHWM, Linux).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("capital", "river", "founded", "born", "mountain", "language", "currency", "author", "museum", "bridge")


def start_server(kb_size: str, startup_timeout_s: float = 120.0) -> tuple[subprocess.Popen, str]:
    """A `seedbench serve-retriever` child on 127.0.0.1 and its URL (from the line it prints when ready)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    process = subprocess.Popen([sys.executable, "-m", "seedbench.cli", "serve-retriever", "--host", "127.0.0.1",
                                "--port", "0", "--kb-size", kb_size], stdout=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=startup_timeout_s)
    except queue.Empty:
        stop_server(process)
        raise RuntimeError(f"retriever server printed nothing within {startup_timeout_s:g} s") from None
    if not line.startswith("seedbench retriever: POST http://127.0.0.1:"):
        stop_server(process)
        raise RuntimeError(f"retriever server did not start: {line!r}")
    return process, line.split()[3]


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def peak_rss_mib(pid: int) -> float | None:
    """Peak resident set size of a live process (VmHWM in /proc), or None where /proc has no such line."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def error_kind(err: BaseException) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"http_{err.code}"
    reason = getattr(err, "reason", err)  # URLError wraps the socket error
    if isinstance(reason, ConnectionResetError):
        return "reset"
    if isinstance(reason, TimeoutError):
        return "timeout"
    return type(reason).__name__


def client(url: str, client_id: int, requests: int, timeout_s: float, deadline: float,
           start: threading.Barrier, latencies: list, errors: list, not_sent: list) -> None:
    start.wait()
    for number in range(requests):
        if time.monotonic() > deadline:
            not_sent.append(requests - number)
            return
        query = f"{WORDS[(client_id + number) % len(WORDS)]} {client_id} {number}"
        body = json.dumps({"queries": [query], "topk": 3, "return_scores": True}).encode()
        request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                hits = json.loads(response.read())["result"]
            if len(hits) != 1 or len(hits[0]) != 3:
                raise ValueError(f"expected 1 row of 3 hits, got {hits!r:.80}")
            latencies.append(time.perf_counter() - t0)
        except (OSError, ValueError, KeyError) as err:  # HTTPError, URLError, resets, timeouts are OSErrors
            errors.append(error_kind(err))


def percentile(sorted_values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), math.ceil(fraction * len(sorted_values))))
    return sorted_values[rank - 1]


def run_load(clients: int = 20, requests: int = 50, kb_size: str = "small", timeout_s: float = 10.0,
             max_seconds: float = 120.0) -> dict:
    """Start a server, run `clients` × `requests` against it, stop it; the figures as a dict."""
    process, url = start_server(kb_size)
    try:
        latencies, errors, not_sent = [], [], []
        start = threading.Barrier(clients + 1)
        deadline = time.monotonic() + max_seconds
        threads = [threading.Thread(target=client, args=(url, i, requests, timeout_s, deadline, start,
                                                         latencies, errors, not_sent), daemon=True)
                   for i in range(clients)]
        for thread in threads:
            thread.start()
        start.wait()
        t0 = time.perf_counter()
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()) + timeout_s + 5)
        wall_s = time.perf_counter() - t0
        peak_mib = peak_rss_mib(process.pid)
    finally:
        stop_server(process)
    latencies.sort()
    kinds: dict[str, int] = {}
    for kind in errors:
        kinds[kind] = kinds.get(kind, 0) + 1
    ms = lambda s: None if s is None else round(s * 1000, 2)  # noqa: E731
    return {"clients": clients, "requests_per_client": requests, "kb_size": kb_size, "cpus": os.cpu_count(),
            "answered": len(latencies), "errors": len(errors), "errors_by_kind": kinds,
            "not_sent": sum(not_sent), "wall_s": round(wall_s, 3),
            "requests_per_s": round(len(latencies) / wall_s, 1) if wall_s else None,
            "p50_ms": ms(percentile(latencies, 0.50)), "p99_ms": ms(percentile(latencies, 0.99)),
            "max_ms": ms(latencies[-1] if latencies else None),
            "over_1s": sum(latency >= 1.0 for latency in latencies), "server_peak_rss_mib": peak_mib}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50, help="per client")
    parser.add_argument("--kb-size", default="small", help="the served synthetic corpus (small|default)")
    parser.add_argument("--timeout", type=float, default=10.0, help="per-request client timeout, seconds")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="no request starts after this")
    parser.add_argument("--label", default="", help="recorded with the result (e.g. the commit measured)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "retriever_load.json"))
    args = parser.parse_args(argv)
    if args.clients < 1 or args.requests < 1:
        parser.error("--clients and --requests must be at least 1")
    result = run_load(args.clients, args.requests, args.kb_size, args.timeout, args.max_seconds)
    result["label"] = args.label
    print(f"{result['clients']} clients x {result['requests_per_client']} requests: {result['answered']} answered, "
          f"{result['errors']} errors {result['errors_by_kind']}, {result['not_sent']} not sent; "
          f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms, "
          f"{result['over_1s']} over 1 s; {result['requests_per_s']} req/s; "
          f"server peak RSS {result['server_peak_rss_mib']:.1f} MiB")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
