"""`seedbench serve-retriever`: a Search-R1 compatible ``POST /retrieve`` server over a bm25s index.

It serves the env's own corpora (``--dataset synthetic|countryinfo``) or any wiki-18 style jsonl
(``--corpus``), so the env's ``retriever="http"`` path, or Search-R1's own client, can be exercised
without e5 weights or faiss. Stdlib ``http.server``; one thread per request.
"""

from __future__ import annotations

import argparse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedbench serve-retriever",
                                     description="serve a bm25s index with Search-R1's POST /retrieve API")
    parser.add_argument("--dataset", choices=("synthetic", "countryinfo"), default="synthetic",
                        help="corpus of this Search-QA dataset (ignored with --corpus)")
    parser.add_argument("--corpus", default=None, help="a wiki-18 style corpus .jsonl ({id, contents})")
    parser.add_argument("--kb-seed", type=int, default=0)
    parser.add_argument("--kb-size", default="default")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed)")
    parser.add_argument("--topk", type=int, default=3, help="when a request names none (Search-R1's default: 3)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from seedbench.envs.search.data import load_dataset
    from seedbench.envs.search.loaders import read_corpus
    from seedbench.envs.search.retrieval import BM25Retriever, serve

    args = build_parser().parse_args(argv)
    corpus = read_corpus(args.corpus) if args.corpus else load_dataset(args.dataset, args.kb_seed, args.kb_size).corpus
    serve(BM25Retriever(corpus), args.host, args.port, args.topk)
    return 0
