"""A real-fact question set from `countryinfo` (MIT): the realism check next to the fictional corpus.

The passages are rendered from countryinfo's records (capital, region, population, currency), one per
country, in the wiki-18 corpus shape; the questions are single-hop (capital, subregion), bridge (the
currency of the country whose capital is X: capital → country passage) and comparison (larger
population). A model may know these facts without searching (it does know the capital of France), so
the no-search score here is *not* near zero: that is the point of the set.
"""

from __future__ import annotations

import zlib

import numpy as np

from seedbench.envs.search.questions import shuffled

INSTALL_HINT = "the countryinfo question set needs countryinfo: pip install 'seedbench[search]' (or pip install countryinfo)"
COMPARISONS = 150


def load_countries() -> list[dict]:
    """countryinfo's records with the fields the passages use, sorted by name; countries lacking any of
    them are skipped."""
    try:
        from countryinfo import all_countries
    except ImportError as err:
        raise ImportError(INSTALL_HINT) from err
    rows = []
    for country in all_countries():
        info = country.info()
        name, capital = info.get("name"), info.get("capital")
        population, region = info.get("population"), info.get("subregion") or info.get("region")
        if not (name and capital and population and region and info.get("currencies")):
            continue
        rows.append({"name": str(name), "capital": str(capital), "population": int(population),
                     "subregion": str(region), "currency": str(info["currencies"][0])})
    return sorted(rows, key=lambda r: r["name"])


def country_corpus(countries: list[dict]) -> list[dict]:
    return [{"id": f"country-{i}", "contents": (
        f'"{c["name"]}"\n{c["name"]} is a country in {c["subregion"]}. Its capital is {c["capital"]}. It has a '
        f'population of about {c["population"]:,}, and its currency has the ISO code {c["currency"]}.')}
        for i, c in enumerate(countries)]


def country_questions(countries: list[dict], seed: int = 0) -> dict[str, list[dict]]:
    """``{"train": [...], "test": [...]}`` split by a hash of the question id (~20 % test)."""
    rng = np.random.default_rng([int(seed), 18])
    questions = []

    def add(qid, text, answer, kind, gold):
        questions.append({"id": qid, "question": text, "golden_answers": [answer], "kind": kind,
                          "template": qid.rsplit("-", 1)[0], "gold": [f"country-{g}" for g in gold],
                          "gold_titles": [countries[g]["name"] for g in gold]})

    capitals = [c["capital"] for c in countries]
    for i, c in enumerate(countries):
        add(f"capital-{i}", f"What is the capital of {c['name']}?", c["capital"], "single-hop", [i])
        add(f"subregion-{i}", f"In which region of the world is {c['name']}?", c["subregion"], "single-hop", [i])
        if capitals.count(c["capital"]) == 1:
            add(f"currency_by_capital-{i}", f"What is the ISO code of the currency of the country whose capital is "
                f"{c['capital']}?", c["currency"], "bridge", [i])
    pairs = dict.fromkeys(tuple(sorted(map(int, p))) for p in rng.integers(len(countries), size=(COMPARISONS, 2)))
    for number, (i, j) in enumerate(p for p in pairs if p[0] != p[1]):
        a, b = countries[i], countries[j]
        if a["population"] != b["population"]:
            larger = a if a["population"] > b["population"] else b
            add(f"larger_population-{number}", f"Which country has a larger population, {a['name']} or {b['name']}?",
                larger["name"], "comparison", [i, j])
    splits: dict[str, list[dict]] = {"train": [], "test": []}
    for q in questions:
        splits["test" if zlib.crc32(q["id"].encode()) % 5 == 0 else "train"].append(q)
    return shuffled(splits, rng)
