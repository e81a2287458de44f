"""Scores of Search-QA without a model: gold-passage retrieval (hit@k) and scripted agents' exact match.

- `retrieval_metrics`: per question, whether a gold passage (and which fraction of them) is in the top-k
  when the *question* is the query (the one-shot RAG view), and the fraction of gold passages found when
  each gold *title* is the query (what the oracle does); averaged over questions.
- `play`: run a scripted policy over the first n questions of a split: ``oracle`` (the env's expert:
  search the gold titles, then answer; must score 1.0) or ``no-search`` (answers at once without
  searching: the majority train answer of the question's template, or the first-named option of a
  comparison; what guessing earns), with per-kind exact match and env steps per second.
"""

from __future__ import annotations

import time
from collections import Counter

from seedbench.envs.search.answers import command_text


def retrieval_metrics(retriever, questions: list[dict], ks: tuple[int, ...] = (1, 5)) -> dict[str, float]:
    """``question_hit@k`` (a gold passage in the top k of the question), ``question_recall@k`` (the fraction of
    gold passages there: a bridge's second hop is rarely found from the question alone) and
    ``title_recall@k`` (each gold passage found by its title), over questions with gold passages."""
    questions = [q for q in questions if q["gold"]]
    if not questions:
        return {}
    top = max(ks)
    by_question = retriever.search([q["question"] for q in questions], top)
    titles = [t for q in questions for t in q["gold_titles"]]
    by_title = iter(retriever.search(titles, top))
    out: dict[str, float] = {}
    title_hits = []
    for q in questions:
        title_hits.append([[h["document"]["id"] for h in next(by_title)] for _ in q["gold"]])
    for k in ks:
        out[f"question_hit@{k}"] = sum(any(h["document"]["id"] in q["gold"] for h in hits[:k])
                                       for q, hits in zip(questions, by_question)) / len(questions)
        out[f"question_recall@{k}"] = sum(sum(g in [h["document"]["id"] for h in hits[:k]] for g in q["gold"]) / len(q["gold"])
                                          for q, hits in zip(questions, by_question)) / len(questions)
        out[f"title_recall@{k}"] = sum(sum(g in ids[:k] for g, ids in zip(q["gold"], hits)) / len(q["gold"])
                                       for q, hits in zip(questions, title_hits)) / len(questions)
    return out


def majority_answers(train: list[dict]) -> dict[str, str]:
    """The most common gold answer per template in the train questions (the no-search guess)."""
    counts: dict[str, Counter] = {}
    for q in train:
        counts.setdefault(q["template"], Counter())[q["golden_answers"][0]] += 1
    return {template: c.most_common(1)[0][0] for template, c in counts.items()}


def no_search_answer(question: dict, majority: dict[str, str]) -> str:
    if question["kind"] == "comparison":  # "Who was born first, A or B?" -> A
        return question["question"].split(", ", 1)[1].split(" or ")[0]
    return majority.get(question["template"], "")


def play(env, split: str, n: int, policy: str = "oracle") -> dict:
    """Run `policy` on questions 0..n-1 of `split`; returns ``{"em", "per_kind", "episodes", "steps",
    "steps_per_s"}``."""
    majority = majority_answers(env.data.questions.get("train", [])) if policy == "no-search" else {}
    per_kind: dict[str, list[float]] = {}
    steps, start = 0, time.perf_counter()
    n = min(n, len(env.data.questions[split]))
    for seed in range(n):
        env.reset(seed=seed, options={"split": split})
        done, reward = False, 0.0
        while not done:
            if policy == "oracle":
                command = env.expert_plan()[0]
            else:
                command = command_text("answer", no_search_answer(env.question, majority))
            _, reward, terminated, truncated, _ = env.step(f"<think>{policy}</think>\n{command}")
            steps, done = steps + 1, terminated or truncated
        per_kind.setdefault(env.question["kind"], []).append(reward)
    elapsed = time.perf_counter() - start
    scores = [r for rs in per_kind.values() for r in rs]
    return {"em": sum(scores) / len(scores), "per_kind": {k: sum(v) / len(v) for k, v in sorted(per_kind.items())},
            "episodes": n, "steps": steps, "steps_per_s": steps / elapsed if elapsed > 0 else float("inf")}
