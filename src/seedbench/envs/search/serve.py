"""`seedbench serve-retriever`: a Search-R1 compatible ``POST /retrieve`` server over a bm25s index.

It serves the env's own corpora (``--dataset synthetic|countryinfo``) or any wiki-18 style jsonl
(``--corpus``), so the env's ``retriever="http"`` path, or Search-R1's own client, can be exercised
without e5 weights or faiss. It listens on loopback unless ``--host`` says otherwise, and bounds what one
request may ask (`ServerLimits`: body size, query count and length, topk, read timeout, listen backlog).
"""

from __future__ import annotations

import argparse

from seedbench.envs.search.server import ServerLimits, serve
from seedbench.envs.search.data import load_dataset
from seedbench.envs.search.loaders import read_corpus
from seedbench.envs.search.retrieval import BM25Retriever

DEFAULTS = ServerLimits()


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedbench serve-retriever",
                                     description="serve a bm25s index with Search-R1's POST /retrieve API")
    parser.add_argument("--dataset", choices=("synthetic", "countryinfo"), default="synthetic",
                        help="corpus of this Search-QA dataset (ignored with --corpus)")
    parser.add_argument("--corpus", default=None, help="a wiki-18 style corpus .jsonl ({id, contents})")
    parser.add_argument("--kb-seed", type=int, default=0)
    parser.add_argument("--kb-size", default="default")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default loopback only; 0.0.0.0 exposes it to the network)")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed)")
    parser.add_argument("--topk", type=positive_int, default=3,
                        help="when a request names none (Search-R1's default: 3)")
    limits = parser.add_argument_group("request limits (a request over one is answered 4xx with a JSON detail)")
    limits.add_argument("--max-body-bytes", type=positive_int, default=DEFAULTS.max_body_bytes,
                        help=f"largest request body; larger answers 413 (default {DEFAULTS.max_body_bytes})")
    limits.add_argument("--max-queries", type=positive_int, default=DEFAULTS.max_queries,
                        help=f"queries per request (default {DEFAULTS.max_queries})")
    limits.add_argument("--max-query-chars", type=positive_int, default=DEFAULTS.max_query_chars,
                        help=f"characters per query (default {DEFAULTS.max_query_chars})")
    limits.add_argument("--max-topk", type=positive_int, default=DEFAULTS.max_topk,
                        help=f"largest topk a request may ask (default {DEFAULTS.max_topk})")
    limits.add_argument("--read-timeout", type=positive_float, default=DEFAULTS.read_timeout_s,
                        help="seconds a request may take to arrive in full (request line, headers and body) "
                             "before 408/close "
                             f"(default {DEFAULTS.read_timeout_s:g})")
    limits.add_argument("--backlog", type=positive_int, default=DEFAULTS.request_queue_size,
                        help=f"listen backlog: connections queued before accept (default {DEFAULTS.request_queue_size})")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.topk > args.max_topk:
        parser.error(f"--topk {args.topk} is over --max-topk {args.max_topk}: lower --topk or raise --max-topk")
    limits = ServerLimits(max_body_bytes=args.max_body_bytes, max_queries=args.max_queries,
                          max_query_chars=args.max_query_chars, max_topk=args.max_topk,
                          read_timeout_s=args.read_timeout, request_queue_size=args.backlog)
    corpus = read_corpus(args.corpus) if args.corpus else load_dataset(args.dataset, args.kb_seed, args.kb_size).corpus
    serve(BM25Retriever(corpus), args.host, args.port, args.topk, limits)
    return 0
