"""The Search-QA datasets (corpus + questions per split), their checksums, and `seedbench data search`.

``synthetic`` (default) and ``countryinfo`` are generated in memory from a seed in well under a second,
cached per process; ``files`` reads a user's Search-R1 files (`seedbench.envs.search.loaders`). Every
dataset has a checksum (sha256 of its canonical JSON), which the env's `provenance()` reports, so runs on
other data never compare as equal. `seedbench data search` writes a dataset to the cache directory
(`seedbench.paths`) as a wiki-18 style ``corpus.jsonl``, FlashRAG style ``<split>.jsonl`` question files
and a ``manifest.json`` of checksums: the files a Search-R1 e5/faiss retrieval server can index.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from seedbench.envs.search.kb import KBSize, corpus_of, generate_kb
from seedbench.envs.search.questions import generate_questions
from seedbench.envs.search.countries import country_corpus, country_questions, load_countries
from seedbench.envs.search.loaders import read_corpus, read_questions
from seedbench.paths import cache_dir

DATASETS = ("synthetic", "countryinfo", "files")
KB_SIZES = {"default": KBSize(), "small": KBSize(countries=4, cities=15, organisations=20, people=60)}


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: list
    questions: dict  # split -> list of question dicts
    data_source: str  # provenance vocabulary: "generated" or "official"

    @functools.cached_property
    def checksum(self) -> str:
        text = json.dumps({"corpus": self.corpus, "questions": self.questions}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def load_dataset(dataset: str = "synthetic", kb_seed: int = 0, kb_size: str = "default",
                 train_file: str | None = None, test_file: str | None = None,
                 corpus_file: str | None = None) -> Dataset:
    if dataset == "synthetic":
        if kb_size not in KB_SIZES:
            raise ValueError(f"kb_size: unknown {kb_size!r}; choose one of {', '.join(KB_SIZES)}")
        kb = generate_kb(kb_seed, KB_SIZES[kb_size])
        return Dataset(dataset, corpus_of(kb), generate_questions(kb, kb_seed), "generated")
    if dataset == "countryinfo":
        countries = load_countries()
        return Dataset(dataset, country_corpus(countries), country_questions(countries, kb_seed), "generated")
    if dataset == "files":
        if not corpus_file or not test_file:
            raise ValueError("dataset='files' needs corpus_file=<wiki-18 style .jsonl> and test_file=<.parquet/.jsonl> "
                             "(train_file optional), e.g. --kwarg corpus_file=wiki-18.jsonl test_file=test.parquet")
        splits = {"test": read_questions(test_file)}
        if train_file:
            splits = {"train": read_questions(train_file), **splits}
        return Dataset(dataset, read_corpus(corpus_file), splits, "official")
    raise ValueError(f"dataset: unknown {dataset!r}; choose one of {', '.join(DATASETS)}")


def write_dataset(data: Dataset, out: Path) -> dict:
    """Write corpus.jsonl, <split>.jsonl and manifest.json (sha256 of each file) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"corpus.jsonl": data.corpus}
    for split, questions in data.questions.items():
        files[f"{split}.jsonl"] = [{"id": q["id"], "question": q["question"], "golden_answers": q["golden_answers"],
                                    "metadata": {k: q[k] for k in ("kind", "template", "gold", "gold_titles")}}
                                   for q in questions]
    manifest = {"dataset": data.name, "checksum": data.checksum, "files": {}}
    for name, rows in files.items():
        text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
        (out / name).write_text(text)
        manifest["files"][name] = {"rows": len(rows), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    """`seedbench data search [--dataset NAME] [--kb-seed N] [--kb-size NAME] [--out DIR]`."""
    parser = argparse.ArgumentParser(prog="seedbench data search",
                                     description="write a Search-QA corpus and question files to the cache dir")
    parser.add_argument("--dataset", choices=("synthetic", "countryinfo"), default="synthetic")
    parser.add_argument("--kb-seed", type=int, default=0)
    parser.add_argument("--kb-size", choices=sorted(KB_SIZES), default="default")
    parser.add_argument("--out", type=Path, default=None, help="default: <cache>/search/<dataset>-<seed>-<size>")
    args = parser.parse_args(argv)
    try:
        data = load_dataset(args.dataset, args.kb_seed, args.kb_size)
    except ImportError as err:
        print(err)
        return 2
    out = args.out or cache_dir("search", f"{args.dataset}-{args.kb_seed}-{args.kb_size}")
    manifest = write_dataset(data, out)
    rows = ", ".join(f"{name} {info['rows']}" for name, info in manifest["files"].items())
    print(f"Search-QA {args.dataset} in {out}: {rows}; checksum {manifest['checksum']}")
    return 0
