"""Questions over the fictional knowledge base, of Search-R1's kinds: single-hop, two-hop bridge, comparison.

Each question records its gold passages (``gold``: corpus ids, ``gold_titles``: their titles, in the
order a reader needs them), so the scripted oracle can search for them and retrieval can be scored
(hit@k). The generalisation axis of the paper (trained on NQ + HotpotQA, tested on other datasets) is
mimicked by two splits of *both* templates and entities: train/test use the ``IN_DOMAIN`` templates on
the ``in`` entities (a question is in test when a hash of its id says so, ~20 %), and ``ood`` uses the
``OUT_OF_DOMAIN`` templates on the disjoint ``out`` entities.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from seedbench.envs.search.kb import Entity, KnowledgeBase

TEST_FRACTION_MOD = 5  # question ids with crc32 % 5 == 0 are test questions
COMPARISONS_PER_TEMPLATE = 200


@dataclass(frozen=True)
class Template:
    name: str
    kind: str  # single-hop | bridge | comparison
    subject: str  # entity kind the question is about (pairs of them for comparisons)
    ask: Callable[[KnowledgeBase, Entity], tuple[str, str, list[str]] | None]
    """entity → (question, answer, gold entity ids), or None when the entity does not suit."""


def _fact(kb: KnowledgeBase, entity: Entity, key: str) -> Entity:
    return kb.entities[entity.facts[key]]


def _birthplace(kb, p):
    return f"In which city was {p.name} born?", _fact(kb, p, "birthplace").name, [p.id]


def _org_founded(kb, o):
    return f"In what year was the {o.name} founded?", str(o.facts["founded"]), [o.id]


def _birth_country(kb, p):
    city = _fact(kb, p, "birthplace")
    return f"In which country is the city where {p.name} was born?", _fact(kb, city, "country").name, [p.id, city.id]


def _employer_headquarters(kb, p):
    org = _fact(kb, p, "employer")
    return (f"In which city is the organisation that {p.name} worked for headquartered?",
            _fact(kb, org, "headquarters").name, [p.id, org.id])


def _founder(kb, o):
    return f"Who founded the {o.name}?", _fact(kb, o, "founder").name, [o.id]


def _city_country(kb, c):
    return f"Which country is {c.name} in?", _fact(kb, c, "country").name, [c.id]


def _employer_founded(kb, p):
    org = _fact(kb, p, "employer")
    return f"In what year was the employer of {p.name} founded?", str(org.facts["founded"]), [p.id, org.id]


def _founder_birthplace(kb, o):
    founder = _fact(kb, o, "founder")
    return (f"In which city was the founder of the {o.name} born?", _fact(kb, founder, "birthplace").name,
            [o.id, founder.id])


def _born_first(kb, pair):
    a, b = pair
    if a.facts["born"] == b.facts["born"]:
        return None
    first = a if a.facts["born"] < b.facts["born"] else b
    return f"Who was born first, {a.name} or {b.name}?", first.name, [a.id, b.id]


def _founded_earlier(kb, pair):
    a, b = pair
    if a.facts["founded"] == b.facts["founded"]:
        return None
    first = a if a.facts["founded"] < b.facts["founded"] else b
    return f"Which city was founded earlier, {a.name} or {b.name}?", first.name, [a.id, b.id]


IN_DOMAIN = (
    Template("birthplace", "single-hop", "person", _birthplace),
    Template("org_founded", "single-hop", "organisation", _org_founded),
    Template("birth_country", "bridge", "person", _birth_country),
    Template("employer_headquarters", "bridge", "person", _employer_headquarters),
    Template("born_first", "comparison", "person", _born_first),
)
OUT_OF_DOMAIN = (
    Template("founder", "single-hop", "organisation", _founder),
    Template("city_country", "single-hop", "city", _city_country),
    Template("employer_founded", "bridge", "person", _employer_founded),
    Template("founder_birthplace", "bridge", "organisation", _founder_birthplace),
    Template("founded_earlier", "comparison", "city", _founded_earlier),
)


def _subjects(kb: KnowledgeBase, template: Template, domain: str, rng: np.random.Generator) -> list:
    entities = kb.of(template.subject, domain)
    if template.kind != "comparison":
        return entities
    pairs = rng.integers(len(entities), size=(COMPARISONS_PER_TEMPLATE, 2))
    unique = dict.fromkeys(tuple(sorted((int(i), int(j)))) for i, j in pairs if i != j)  # a pair is asked once
    return [(entities[i], entities[j]) for i, j in unique]


def generate_questions(kb: KnowledgeBase, seed: int = 0) -> dict[str, list[dict]]:
    """``{"train": [...], "test": [...], "ood": [...]}``; each question a dict with ``id``, ``question``,
    ``golden_answers``, ``kind``, ``template``, ``gold`` and ``gold_titles``."""
    rng = np.random.default_rng([int(seed), 17])
    splits: dict[str, list[dict]] = {"train": [], "test": [], "ood": []}
    for domain, templates in (("in", IN_DOMAIN), ("out", OUT_OF_DOMAIN)):
        for template in templates:
            for number, subject in enumerate(_subjects(kb, template, domain, rng)):
                made = template.ask(kb, subject)
                if made is None:
                    continue
                text, answer, gold = made
                qid = f"{template.name}-{number}"
                split = "ood" if domain == "out" else ("test" if zlib.crc32(qid.encode()) % TEST_FRACTION_MOD == 0 else "train")
                splits[split].append({"id": qid, "question": text, "golden_answers": [answer], "kind": template.kind,
                                      "template": template.name, "gold": gold,
                                      "gold_titles": [kb.name(g) for g in gold]})
    return shuffled(splits, rng)


def shuffled(splits: dict[str, list[dict]], rng: np.random.Generator) -> dict[str, list[dict]]:
    """Each split in a seeded random order: evaluation takes seeds 0..n-1, so its first n questions
    must be a mix of templates, not the first template's."""
    return {name: [questions[i] for i in rng.permutation(len(questions))] for name, questions in splits.items()}
