"""Product search: BM25 over the catalogue with bm25s, top 50 as the original's Lucene searcher.

Each product is indexed as the original's ``convert_product_file_format.py`` writes it: title,
description, first bullet point and ``"<option>: v1, v2, and <option>: ..."``, lower-cased. Scoring
uses Lucene's BM25 variant with pyserini's defaults (k1 = 0.9, b = 0.4) and English stop words;
unlike pyserini's default analyser there is no Porter stemming, so "shirts" does not find "shirt"
(docs/webshop.md). Only documents with a positive score are returned, as Lucene returns only matches.

The original's special keywords are kept: a query whose first word is ``<r>`` returns 50 random
products, ``<a> attr`` the products with that attribute, ``<c> cat`` a category, ``<q> query`` the
products scraped with that query.

One index per catalogue per process (`shared_index`): every env instance of a process, and every
episode, reuses it; worker processes build their own once.
"""

from __future__ import annotations

import threading
from typing import Any

SEARCH_RETURN_N = 50

_INDEXES: dict[str, "SearchIndex"] = {}
_LOCK = threading.Lock()


def document_text(product: dict) -> str:
    option_texts = [f"{name}: {', '.join(values)}" for name, values in product.get("options", {}).items()]
    return " ".join([product["Title"], product["Description"], (product["BulletPoints"] or [""])[0],
                     ", and ".join(option_texts)]).lower()


class SearchIndex:
    def __init__(self, products: list[dict]):
        try:
            import bm25s
        except ImportError as exc:
            raise ImportError("WebShop search needs bm25s: pip install 'seedbench[webshop]' "
                              "(or pip install bm25s)") from exc
        self.products = products
        self._tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=None)
        tokens = self._tokenizer.tokenize([document_text(p) for p in products], show_progress=False)
        self._bm25 = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        self._bm25.index(tokens, show_progress=False)
        self._stopwords = frozenset(self._tokenizer.stopwords)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[dict]:
        """The top `k` products for `query` (free text), best first, ties in catalogue order (as Lucene
        breaks them by document id); only positive scores. The query is split and filtered by the index's
        own tokenizer rules; words the catalogue never uses are dropped, repeated words count repeatedly."""
        import numpy as np

        words = [w for w in self._tokenizer.splitter(query.lower()) if w not in self._stopwords]
        ids = [self._tokenizer.word_to_id[w] for w in words if w in self._tokenizer.word_to_id]
        if not ids:
            return []
        scores = self._bm25.get_scores(ids)
        top = np.argsort(-scores, kind="stable")[:k]
        return [self.products[int(i)] for i in top if scores[i] > 0]

    def top_products(self, keywords: list[str], rng: Any) -> list[dict]:
        """The original's `get_top_n_product_from_keywords`: special first keywords, else BM25."""
        head = keywords[0] if keywords else ""
        rest = " ".join(keywords[1:]).strip()
        if head == "<r>":
            picks = rng.choice(len(self.products), size=min(SEARCH_RETURN_N, len(self.products)), replace=False)
            return [self.products[int(i)] for i in picks]
        if head == "<a>":
            return [p for p in self.products if rest in p["Attributes"]]
        if head == "<c>":
            category = keywords[1].strip() if len(keywords) > 1 else ""
            return [p for p in self.products if p["category"] == category]
        if head == "<q>":
            return [p for p in self.products if p["query"] == rest]
        return self.search(" ".join(keywords))


def shared_index(key: str, products: list[dict]) -> SearchIndex:
    """The process-wide index of the catalogue identified by `key` (its checksum), built on first use."""
    with _LOCK:
        index = _INDEXES.get(key)
        if index is None:
            index = _INDEXES[key] = SearchIndex(products)
        return index
