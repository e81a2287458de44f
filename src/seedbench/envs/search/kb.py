"""A fictional-entity knowledge base, rendered as Wikipedia-like passages (the synthetic Search-QA corpus).

Why fictional: a model cannot know that Orvik Talsen was born in Bramecourt, so its answers must come
from retrieval (Search-R1's premise), and a no-search agent scores near zero on single-hop and bridge
questions (comparisons still give a 1-in-2 guess). Everything is drawn from one numpy Generator seeded
with ``seed``, so the same (seed, sizes) always gives the same corpus.

Two disjoint *domains* of entities (``in`` and ``out``), each with its own countries, cities,
organisations and people; relations never cross domains. The question generator
(`seedbench.envs.search.questions`) uses the ``in`` domain for train/test and the ``out`` domain, with
other templates, for the out-of-domain split. A passage is a dict in the wiki-18 corpus shape,
``{"id": str, "contents": '"Title"\\ntext'}``, so the same corpus serves a Search-R1 retrieval server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DOMAINS = ("in", "out")
_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s", "st", "t", "th",
           "v", "w", "z", "kal", "mor", "tr", "vel")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "y")
_CODAS = ("", "n", "r", "s", "l", "th", "nd", "rk", "sk", "m", "x", "t")
_CITY_SUFFIXES = ("holm", "ford", "mere", "court", "wick", "stead", "vale", "burg", "port", "gard")
_ORG_KINDS = ("Institute", "Company", "Orchestra", "Observatory", "University", "Foundation", "Press",
              "Laboratories", "Guild", "Railway")
OCCUPATIONS = ("botanist", "architect", "composer", "cartographer", "engineer", "novelist", "chemist",
               "sculptor", "astronomer", "diplomat", "linguist", "painter")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@dataclass(frozen=True)
class KBSize:
    """Entities per domain; the default gives ~1,100 passages (bm25s indexes them in well under a second)."""

    countries: int = 8
    cities: int = 60
    organisations: int = 80
    people: int = 400


@dataclass
class Entity:
    id: str
    kind: str  # country | city | organisation | person
    name: str
    domain: str
    facts: dict = field(default_factory=dict)


@dataclass
class KnowledgeBase:
    entities: dict[str, Entity]

    def of(self, kind: str, domain: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.kind == kind and e.domain == domain]

    def name(self, entity_id: str) -> str:
        return self.entities[entity_id].name


class _Names:
    """Pronounceable invented names, unique across the whole KB (a name is a retrieval key)."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self.used = rng, set()

    def word(self, syllables: int) -> str:
        parts = [self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables)]
        return ("".join(parts) + self.rng.choice(_CODAS)).capitalize()

    def unique(self, make) -> str:
        for _ in range(10_000):
            name = make()
            if name not in self.used:
                self.used.add(name)
                return name
        raise RuntimeError("name space exhausted; use a smaller KBSize")


def generate_kb(seed: int = 0, size: KBSize = KBSize()) -> KnowledgeBase:
    """The knowledge base of (seed, size): countries ← cities ← organisations ← people, per domain."""
    rng = np.random.default_rng([int(seed), 16])
    names = _Names(rng)
    entities: dict[str, Entity] = {}

    counts: dict[tuple[str, str], int] = {}

    def add(kind: str, domain: str, name: str, **facts) -> Entity:
        number = counts[kind, domain] = counts.get((kind, domain), -1) + 1
        entity = Entity(f"{domain}-{kind}-{number}", kind, name, domain, facts)
        entities[entity.id] = entity
        return entity

    for domain in DOMAINS:
        countries = [add("country", domain, names.unique(lambda: names.word(2) + "ia")) for _ in range(size.countries)]
        cities = [add("city", domain, names.unique(lambda: names.word(1) + str(rng.choice(_CITY_SUFFIXES))),
                      country=str(rng.choice([c.id for c in countries])), founded=int(rng.integers(900, 1850)),
                      population=int(rng.integers(20, 2000)) * 1000) for _ in range(size.cities)]
        organisations = [add("organisation", domain,
                             names.unique(lambda: f"{names.word(2)} {rng.choice(_ORG_KINDS)}"),
                             headquarters=str(rng.choice([c.id for c in cities])),
                             founded=int(rng.integers(1800, 2000))) for _ in range(size.organisations)]
        people = []
        for _ in range(size.people):
            person = add("person", domain, names.unique(lambda: f"{names.word(1)} {names.word(2)}"),
                         born=int(rng.integers(1800, 1990)), month=str(rng.choice(MONTHS)),
                         day=int(rng.integers(1, 29)), birthplace=str(rng.choice([c.id for c in cities])),
                         occupation=str(rng.choice(OCCUPATIONS)),
                         employer=str(rng.choice([o.id for o in organisations])))
            people.append(person)
        for organisation in organisations:  # a founder is someone born at least 20 years before the founding
            eligible = [p.id for p in people if p.facts["born"] <= organisation.facts["founded"] - 20]
            organisation.facts["founder"] = str(rng.choice(eligible)) if eligible else str(rng.choice([p.id for p in people]))
    return KnowledgeBase(entities)


def render_passage(kb: KnowledgeBase, entity: Entity) -> str:
    """The passage text (without the title) of one entity, in the register of a Wikipedia lead section."""
    f, n = entity.facts, kb.name
    if entity.kind == "country":
        cities = sorted(c.name for c in kb.of("city", entity.domain) if c.facts["country"] == entity.id)
        listed = ", ".join(cities[:6]) if cities else "no large settlements"
        return f"{entity.name} is a sovereign state. Its principal cities include {listed}."
    if entity.kind == "city":
        return (f"{entity.name} is a city in {n(f['country'])}. It was founded in {f['founded']} and has a "
                f"population of about {f['population']:,}.")
    if entity.kind == "organisation":
        return (f"The {entity.name} is an organisation headquartered in {n(f['headquarters'])}. It was founded "
                f"in {f['founded']} by {n(f['founder'])}.")
    surname = entity.name.split()[-1]
    # No nationality in the lead: "the country where X was born" must stay a two-hop question.
    return (f"{entity.name} (born {f['day']} {f['month']} {f['born']}) is a {f['occupation']}. {surname} was "
            f"born in {n(f['birthplace'])} and worked for the {n(f['employer'])}.")


def corpus_of(kb: KnowledgeBase) -> list[dict]:
    """The wiki-18 shaped corpus: one passage per entity, id = the entity id."""
    return [{"id": e.id, "contents": f'"{e.name}"\n{render_passage(kb, e)}'} for e in kb.entities.values()]
