"""Readers for real Search-R1 data: question files (parquet/jsonl) and a wiki-18 style corpus (jsonl).

The data themselves (NQ, TriviaQA, PopQA, HotpotQA, 2WikiMultihopQA, Musique, Bamboogle, the 2018
Wikipedia dump) come from the Hugging Face hub and are never downloaded here; a user who has them points
the env at the files (``dataset="files"``, ``train_file``/``test_file``/``corpus_file``).

Question records are read in any of the shapes those files come in:

- Search-R1's processed parquet (``scripts/data_process/nq_search.py``): ``data_source``, ``prompt`` (chat
  messages ending in "Question: …"), ``reward_model.ground_truth.target``, plus the FlashRAG columns it keeps;
- FlashRAG jsonl: ``id``, ``question``, ``golden_answers``;
- the datasets' own fields: ``answer`` (a string, or TriviaQA's ``{"value", "aliases"}``),
  ``answer_aliases`` (Musique), ``possible_answers`` (PopQA, a JSON string), ``Question``/``Answer`` (Bamboogle).

The dataset name (``kind``, the per-type key of `seedbench eval`'s tables) is the record's
``data_source``, else the file name's stem. `per_dataset_scores` gives the paper's table: EM per
dataset and their unweighted average.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

PARQUET_HINT = "reading parquet question files needs pyarrow: pip install 'seedbench[search]' (or pip install pyarrow pandas)"


def read_records(path: str | Path) -> list[dict]:
    """Rows of a ``.parquet``, ``.jsonl`` or ``.json`` (a list) file, as plain Python dicts."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such question/corpus file")
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as err:
            raise ImportError(PARQUET_HINT) from err
        return pq.read_table(path).to_pylist()
    if path.suffix == ".json":
        return list(json.loads(path.read_text()))
    with path.open() as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _answers(record: dict) -> list[str]:
    target = ((record.get("reward_model") or {}).get("ground_truth") or {}).get("target")
    for value in (record.get("golden_answers"), target, record.get("possible_answers")):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                value = [value]
        if value is not None and len(value):
            return [str(v) for v in value]
    answer = record.get("answer", record.get("Answer"))
    if isinstance(answer, dict):  # TriviaQA
        return [str(answer["value"])] + [str(a) for a in answer.get("aliases", [])]
    if answer is None:
        return []
    return [str(answer)] + [str(a) for a in record.get("answer_aliases") or []]


def _question(record: dict) -> str:
    text = record.get("question", record.get("Question"))
    if text:
        return str(text).strip()
    prompt = record.get("prompt") or []
    content = prompt[-1]["content"] if prompt else ""
    return content.rsplit("Question:", 1)[-1].strip()


def questions_from_records(records: Iterable[dict], default_source: str) -> list[dict]:
    """The env's question dicts (no gold passages: real sets do not name them)."""
    questions = []
    for number, record in enumerate(records):
        answers, text = _answers(record), _question(record)
        if not text or not answers:
            raise ValueError(f"{default_source} record {number} lacks a question or answers: {sorted(record)}")
        source = str(record.get("data_source") or default_source)
        qid = record.get("id")
        qid = str(qid if qid is not None else (record.get("extra_info") or {}).get("index", number))
        questions.append({"id": f"{source}-{qid}", "question": text, "golden_answers": answers, "kind": source,
                          "template": source, "gold": [], "gold_titles": []})
    return questions


def read_questions(path: str | Path) -> list[dict]:
    return questions_from_records(read_records(path), Path(path).stem.split("_")[0])


def read_corpus(path: str | Path) -> list[dict]:
    """A wiki-18 style jsonl (``{"id", "contents": '"Title"\\ntext'}``, or ``{"id", "title", "text"}``)."""
    corpus = []
    for number, record in enumerate(read_records(path)):
        contents = record.get("contents")
        if contents is None:
            contents = f'"{record.get("title", "")}"\n{record.get("text", "")}'
        corpus.append({"id": str(record.get("id", number)), "contents": str(contents)})
    return corpus


def per_dataset_scores(results: Iterable[tuple[str, float]]) -> dict[str, float]:
    """``(dataset, score)`` pairs → mean score per dataset plus ``average``, the unweighted mean of the
    per-dataset means (how the Search-R1 and SEED papers average their seven test sets)."""
    sums: dict[str, list[float]] = {}
    for dataset, score in results:
        sums.setdefault(dataset, []).append(float(score))
    table: dict[str, Any] = {name: sum(v) / len(v) for name, v in sorted(sums.items())}
    if table:
        table["average"] = sum(table.values()) / len(table)
    return table
