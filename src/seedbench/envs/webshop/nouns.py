"""Noun extraction for the type reward's title score.

The original tags both titles with spaCy's ``en_core_web_sm`` and keeps the lower-cased text of tokens
tagged ``NOUN`` or ``PROPN`` (its list also names ``PNOUN``, a tag spaCy never emits), duplicates
included. That model cannot be downloaded here, so two taggers are offered (``nouns=`` kwarg):

- ``heuristic`` (default): deterministic, no model. Tokens are spaCy-like (``men's`` → ``men``, ``'s``;
  ``t-shirt`` → ``t``, ``-``, ``shirt``); a token counts as a noun unless it is punctuation, contains a
  digit, is a function word, is in the generator's adjective list (`vocabulary.ADJECTIVES`) or ends in
  an adjective suffix (-able, -ible, -ful, -less, -ous, -ive). Exact on generated titles by construction
  (every non-noun word the generator uses is listed); an approximation on real Amazon titles.
- ``spacy``: the original path, used when ``en_core_web_sm`` (or the model named by ``spacy_model``) is
  installed; loading fails with the install line otherwise.

`disagreement` measures how often the two differ on a list of titles.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

from seedbench.envs.webshop.vocabulary import ADJECTIVES

NOUN_TAGS = ("PNOUN", "NOUN", "PROPN")
TOKEN = re.compile(r"'s\b|[a-z0-9]+(?:\.[0-9]+)?|[^\sa-z0-9]", re.IGNORECASE)
FUNCTION_WORDS = frozenset(
    "a an the and or but nor for of in on at to by with without from into onto over under up down out off "
    "as per via than then so too very not no yes is are be been was were it its this that these those "
    "all any each every both few more most other some such only own same just can will your our my his her "
    "their you we they i me us he she them what which who whom whose there here when where why how "
    "x 's".split()
)
ADJECTIVE_SUFFIXES = ("able", "ible", "ful", "less", "ous", "ive")


def heuristic_nouns(text: str) -> list[str]:
    """Lower-cased noun tokens of `text` by the deterministic rule in the module docstring."""
    nouns = []
    for token in TOKEN.findall(text.lower()):
        if not token[0].isalpha() or any(c.isdigit() for c in token):
            continue
        if token in FUNCTION_WORDS or token in ADJECTIVES or len(token) < 2:
            continue
        if len(token) > 5 and token.endswith(ADJECTIVE_SUFFIXES):
            continue
        nouns.append(token)
    return nouns


@lru_cache(maxsize=4)
def _spacy_model(name: str):
    import importlib.util
    import os

    missing = OSError(f"nouns='spacy' needs the spaCy model {name!r}, which is not installed: pip install spacy && "
                      f"python -m spacy download {name} (or use the default nouns='heuristic')")
    try:
        installed = os.path.exists(name) or importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a dotted name whose parent is not a package
        installed = False
    if not installed:
        raise missing  # before importing spaCy (seconds) for nothing
    try:
        import spacy
    except ImportError as exc:
        raise ImportError(f"nouns='spacy' needs spaCy and its model: pip install spacy && python -m spacy download "
                          f"{name}") from exc
    try:
        return spacy.load(name)
    except OSError as exc:
        raise missing from exc


def spacy_nouns(text: str, model: str = "en_core_web_sm") -> list[str]:
    """The original: lower-cased text of the tokens spaCy tags NOUN/PROPN."""
    return [t.text.lower() for t in _spacy_model(model)(text) if t.pos_ in NOUN_TAGS]


def noun_extractor(kind: str = "heuristic", spacy_model: str = "en_core_web_sm") -> Callable[[str], list[str]]:
    """The extractor named by `kind`; the spaCy model is loaded here, so a missing model fails at env
    construction, not at the first purchase."""
    if kind == "heuristic":
        return _cached(heuristic_nouns)
    if kind == "spacy":
        _spacy_model(spacy_model)
        return _cached(lambda text: spacy_nouns(text, spacy_model))
    raise ValueError(f"nouns: unknown {kind!r}; choose heuristic or spacy")


def _cached(function: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    cached = lru_cache(maxsize=65536)(lambda text: tuple(function(text)))
    return lambda text: list(cached(text))


def disagreement(titles: list[str], a: Callable[[str], list[str]], b: Callable[[str], list[str]]) -> float:
    """Fraction of `titles` whose noun lists differ between extractors `a` and `b`."""
    if not titles:
        return 0.0
    return sum(a(t) != b(t) for t in titles) / len(titles)
