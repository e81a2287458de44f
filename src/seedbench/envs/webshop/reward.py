"""WebShop's purchase reward, as the original `get_reward` (web_agent_site/engine/goal.py) computes it.

    total = r_type · (n_attr_matched + n_option_matched + r_price) / (|goal attributes| + |goal options| + 1)

- **type** (`type_reward`): ``query_match`` (same search query), ``category_match`` (at least two of the
  ``›``-separated category levels shared, as sets), ``title_score`` = |set(purchased nouns) ∩
  set(goal nouns)| / |goal nouns| with the goal's nouns counted *with duplicates* (0.2 when the goal title
  has none). ``r_type`` = 1, then 0.5 if none of query match, category match, title_score > 0.2; then
  0.1 if title_score < 0.1; then 0 if title_score == 0.
- **attributes**: a goal attribute matches when some product attribute has fuzzy token-set score > 85,
  else when it is a raw (case-sensitive goal, lower-cased text) substring of the title, the bullet
  points joined by spaces, or the description.
- **options**: both sides go through the colour normaliser (the first entry of `COLOR_SET`, in list
  order, that is a *substring* of the value, else the value); a goal option matches when some purchased
  value has fuzzy score > 85. Synthetic goals store options as a dict and the original passes
  ``dict.items()``: each goal option is a ``(name, value)`` tuple. The normaliser's ``in`` then tests
  tuple membership, and the fuzzy scorer sees ``str(tuple)`` (``"('size', 'x-large')"``), so the option
  *name's* words count too: purchased ``large`` matches goal ``('size', 'x-large')``.
- **price**: 1 when the price is at most ``price_upper``.

``details`` always holds every part with its weight: ``r_att`` is None for a goal without attributes,
``r_option`` for one without options and ``r_price`` without a price bound (the original leaves the
last two keys out; a record with the same keys for every goal tabulates without gaps).

Fuzzy score: thefuzz's ``token_set_ratio``, i.e. ``int(round(score))`` after thefuzz's preprocessing
(``str()``, characters 128-255 deleted, lower case, non-alphanumerics → spaces, stripped).

Every trap is reproduced by default; `RewardRules` names the alternatives (docs/webshop.md, docs/method.md §9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from seedbench.envs.webshop.nouns import heuristic_nouns

COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue", "blush",
    "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne", "charcoal", "cheetah",
    "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral", "cranberry", "cream", "crystal",
    "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia", "gold", "granite", "grape", "graphite",
    "grass", "gray", "green", "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender", "lemon", "leopard",
    "light", "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor",
    "mushroom", "mustard", "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum",
    "purple", "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull",
    "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise", "violet",
    "walnut", "wheat", "white", "wine", "yellow",
)
"""The original normaliser's colour words (WebShop, MIT licence), verbatim: their *order* decides which
colour a value normalises to, so the reward cannot be reproduced without this exact list."""

MATCH_THRESHOLD = 85  # a fuzzy score must be strictly above this


@dataclass(frozen=True)
class RewardRules:
    """The reward's decision points; every default is the original's behaviour.

    - ``fuzzy``: ``thefuzz`` (rounded integer with thefuzz's preprocessing) or ``rapidfuzz`` (raw
      float score, no preprocessing: case and punctuation count).
    - ``goal_options``: ``items`` (synthetic goals' options as ``(name, value)`` tuples) or ``values``
      (the values only, as human goals give them).
    - ``color``: ``substring`` (first `COLOR_SET` entry that is a case-sensitive substring) or ``word``
      (first entry that is a whole word of the lower-cased value; leaves "standard", "washed" alone).
    - ``title_denominator``: ``list`` (goal nouns with duplicates) or ``set`` (distinct goal nouns).
    - ``empty_attributes``: ``raise`` (a goal without attributes is an error; the original divides by
      zero) or ``allow`` (the total formula is used as is, with no attribute term).
    """

    fuzzy: str = "thefuzz"
    goal_options: str = "items"
    color: str = "substring"
    title_denominator: str = "list"
    empty_attributes: str = "raise"

    def __post_init__(self):
        choices = {"fuzzy": ("thefuzz", "rapidfuzz"), "goal_options": ("items", "values"),
                   "color": ("substring", "word"), "title_denominator": ("list", "set"),
                   "empty_attributes": ("raise", "allow")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"reward rule {name}: unknown {getattr(self, name)!r}; "
                                 f"choose one of {', '.join(allowed)}")


def fuzzy_scorer(kind: str = "thefuzz") -> Callable[[Any, Any], float]:
    if kind == "thefuzz":
        try:
            from thefuzz import fuzz
        except ImportError as exc:
            raise ImportError("the WebShop reward needs thefuzz: pip install 'seedbench[webshop]' "
                              "(or pip install thefuzz)") from exc
        return fuzz.token_set_ratio
    try:
        from rapidfuzz import fuzz as rfuzz
    except ImportError as exc:
        raise ImportError("fuzzy='rapidfuzz' needs rapidfuzz: pip install rapidfuzz") from exc
    return lambda a, b: rfuzz.token_set_ratio(str(a), str(b))


def normalize_color(value: Any, rule: str = "substring") -> Any:
    """The first colour word found in `value` (a string, or a ``(name, value)`` tuple under the reference
    rule, where ``in`` means membership), else `value` unchanged."""
    if rule == "substring":
        for color in COLOR_SET:
            if color in value:
                return color
        return value
    words = set(re.findall(r"[a-z]+", " ".join(value).lower() if isinstance(value, tuple) else str(value).lower()))
    for color in COLOR_SET:
        if color in words:
            return color
    return value


def type_reward(purchased: dict, goal: dict, nouns: Callable[[str], list[str]], rules: RewardRules) -> dict:
    query_match = purchased["query"] == goal["query"]
    purchased_levels = {x.strip() for x in purchased["product_category"].split("›")}
    goal_levels = {x.strip() for x in goal["product_category"].split("›")}
    category_match = len(purchased_levels & goal_levels) >= 2
    purchased_nouns = nouns(purchased["name"])
    goal_nouns = nouns(goal["name"])
    denominator = len(goal_nouns) if rules.title_denominator == "list" else len(set(goal_nouns))
    title_score = 0.2 if denominator == 0 else len(set(purchased_nouns) & set(goal_nouns)) / denominator
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match,
            "title_score": title_score}


def attribute_matches(purchased: dict, goal_attributes: Iterable[str], score: Callable) -> int:
    title = purchased["Title"].lower()
    bullets = " ".join(purchased["BulletPoints"]).lower()
    description = purchased["Description"].lower()
    matches = 0
    for g_attr in goal_attributes:
        if any(score(p_attr, g_attr) > MATCH_THRESHOLD for p_attr in purchased["Attributes"]):
            matches += 1
        elif g_attr in title or g_attr in bullets or g_attr in description:
            matches += 1
    return matches


def option_matches(purchased_values: list, goal_options: list, score: Callable, color_rule: str) -> int:
    purchased = [normalize_color(o, color_rule) for o in purchased_values]
    goal = [normalize_color(o, color_rule) for o in goal_options]
    return sum(any(score(p, g) > MATCH_THRESHOLD for p in purchased) for g in goal)


def goal_option_list(goal_options: dict | list, rule: str = "items") -> list:
    """What the original hands the option matcher: ``dict.items()`` for synthetic goals, the list for
    human goals (rule ``values``: the dict's values)."""
    if isinstance(goal_options, dict):
        return list(goal_options.items()) if rule == "items" else list(goal_options.values())
    return list(goal_options)


def get_reward(purchased: dict, goal: dict, price: float, options: dict[str, str],
               rules: RewardRules = RewardRules(), nouns: Callable[[str], list[str]] | None = None,
               score: Callable | None = None) -> tuple[float, dict]:
    """``(total, details)`` for buying `purchased` with the chosen `options` ({name: value}) at `price`."""
    if nouns is None:
        nouns = heuristic_nouns
    score = score or fuzzy_scorer(rules.fuzzy)
    n_attrs, n_options = len(goal["attributes"]), len(goal["goal_options"])
    if n_attrs == 0 and rules.empty_attributes == "raise":
        raise ZeroDivisionError(f"goal for {goal.get('asin')} has no attributes: the original reward divides by zero "
                                "here; use RewardRules(empty_attributes='allow') to score it by the total formula")
    types = type_reward(purchased, goal, nouns, rules)
    r_price = price <= goal["price_upper"] if goal["price_upper"] > 0 else None
    attrs_matched = attribute_matches(purchased, goal["attributes"], score)
    options_matched = option_matches(list(options.values()), goal_option_list(goal["goal_options"], rules.goal_options),
                                     score, rules.color)
    denominator = n_attrs + n_options + 1
    total = (attrs_matched + options_matched + r_price) / denominator * types["r_type"]
    details = {**types, "r_att": attrs_matched / n_attrs if n_attrs else None, "w_att": n_attrs / denominator,
               "r_price": r_price, "w_price": 1 / denominator, "attrs_matched": attrs_matched,
               "options_matched": options_matched, "r_option": options_matched / n_options if n_options else None,
               "w_option": n_options / denominator}
    return total, details
