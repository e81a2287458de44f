"""Retrievers behind one interface, and a small Search-R1-compatible retrieval server.

A retriever answers ``search(queries, topk) -> [[{"document": {"id", "contents"}, "score"}, ...], ...]``,
the shape of Search-R1's ``POST /retrieve`` response with ``return_scores: true``. Two implementations:

- `BM25Retriever` (default): bm25s in this process over the env's corpus (the index is built once per
  process and corpus, ~1 s for 10k passages);
- `HttpRetriever`: a client of any Search-R1 style retrieval server (``search_r1/search/
  retrieval_server.py``: e5 + faiss over wiki-18, or BM25), so a user with such a server plugs it in
  unchanged. A server that cannot be reached raises `RetrieverUnavailable`, which the env batch turns
  into a dropped, counted episode instead of a crashed run.

`seedbench.envs.search.server` (``seedbench serve-retriever``) puts a `BM25Retriever` behind the same
HTTP API.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Protocol

from seedbench.envs.batch import EnvUnavailable

BM25_HINT = "the bm25 retriever needs bm25s: pip install 'seedbench[search]' (or pip install bm25s)"


class RetrieverUnavailable(EnvUnavailable):
    """The retrieval server did not answer (refused, timed out, died, or sent something unreadable)."""


class Retriever(Protocol):
    def search(self, queries: list[str], topk: int) -> list[list[dict]]:
        """Per query, the top-`topk` hits as ``{"document": {"id", "contents"}, "score": float}``."""


def passages_to_string(hits: list[dict]) -> str:
    """Search-R1's ``_passages2string``: ``Doc i(Title: <first line>) <rest>`` per hit, one per line."""
    lines = []
    for number, hit in enumerate(hits, start=1):
        title, _, text = hit["document"]["contents"].partition("\n")
        lines.append(f"Doc {number}(Title: {title}) {text}\n")
    return "".join(lines)


class BM25Retriever:
    """bm25s over a corpus of ``{"id", "contents"}`` passages (English stopwords, no stemming)."""

    def __init__(self, corpus: list[dict]):
        try:
            import bm25s
            from bm25s.tokenization import Tokenizer
        except ImportError as err:
            raise ImportError(BM25_HINT) from err
        self.corpus = corpus
        self.tokenizer = Tokenizer(stopwords="en")
        tokens = self.tokenizer.tokenize([d["contents"] for d in corpus], return_as="tuple", show_progress=False)
        self.index = bm25s.BM25()
        self.index.index(tokens, show_progress=False)
        self._lock = threading.Lock()  # envs of one process share the index and may step from threads

    def search(self, queries: list[str], topk: int) -> list[list[dict]]:
        if not queries:
            return []
        k = max(1, min(int(topk), len(self.corpus)))
        with self._lock:
            ids = self.tokenizer.tokenize(list(queries), update_vocab=False, return_as="ids", show_progress=False)
            indices, scores = self.index.retrieve(ids, k=k, show_progress=False, n_threads=1)
        return [[{"document": self.corpus[int(i)], "score": float(s)} for i, s in zip(row, row_scores)]
                for row, row_scores in zip(indices, scores)]


class HttpRetriever:
    """Client of a Search-R1 retrieval server: ``POST {url}`` (e.g. ``http://127.0.0.1:8000/retrieve``)."""

    def __init__(self, url: str, timeout_s: float = 30.0):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"retriever_url must be an http(s) URL like http://127.0.0.1:8000/retrieve, got {url!r}")
        self.url, self.timeout_s = url, float(timeout_s)

    def search(self, queries: list[str], topk: int) -> list[list[dict]]:
        body = json.dumps({"queries": list(queries), "topk": int(topk), "return_scores": True}).encode()
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                result = json.loads(response.read())["result"]
        except (OSError, ValueError, KeyError) as err:  # URLError, refused, reset, timeout are OSErrors
            raise RetrieverUnavailable(f"retrieval server {self.url} failed: {type(err).__name__}: {err}") from err
        # A server asked for scores returns {"document", "score"} items; accept bare documents too.
        return [[hit if "document" in hit else {"document": hit, "score": 0.0} for hit in hits] for hits in result]
