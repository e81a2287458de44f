"""Goals (instructions) and splits, built the way the original `get_goals` and the baseline's env do.

- **Prices** (`product_prices`): one price per product, its single price or a uniform draw between the
  two ends of a range. The original draws from the unseeded global `random`; here from
  ``random.Random(price_seed)``, so a catalogue always gives the same prices and goals.
- **Synthetic goals** (`synthetic_goals`): one goal per product with an instruction, *per combination
  of option values* (``itertools.product`` over the sorted option names), with text
  ``"<instruction> with <name>: <value>, and <name>: <value>, and price lower than <P> dollars"``.
  ``price_upper`` is the larger of two distinct draws among the first four multiples of 10 above the
  product's price (no price clause and 1,000,000 when fewer than two exist). ``weight`` is the mean
  inverse frequency of the goal's attributes.
- **Human goals** (`human_goals`): one goal per human instruction (``items_human_ins.json``), skipping
  those without attributes; the options are the instruction's option values (a list).
- **Order and splits**: goals are shuffled with ``random.Random(233)`` — the permutation the original's
  ``random.seed(233); random.shuffle(goals)`` gives — and split as the baseline splits them: test =
  goals 0-499, eval = 500-1499, train = the rest. A catalogue with fewer than 2,000 goals (small test
  catalogues) is split in the same proportions instead: test the first quarter, eval the next quarter,
  train the rest.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

PRICE_RANGE = [10.0 * i for i in range(1, 100)]
NO_PRICE_LIMIT = 1000000
SHUFFLE_SEED = 233
SPLITS = ("train", "eval", "test")
REFERENCE_BOUNDS = (500, 1500)  # test = [0, 500), eval = [500, 1500), train = [1500, ...)


def product_prices(products: list[dict], rng: random.Random) -> dict[str, float]:
    prices = {}
    for product in products:
        pricing = product["pricing"]
        if not pricing:
            price = 100.0
        elif len(pricing) == 1:
            price = pricing[0]
        else:
            price = rng.uniform(*pricing[:2])
        prices[product["asin"]] = price
    return prices


def price_clause(price: float, rng: random.Random) -> tuple[float, str]:
    """(price_upper, text) for a product at `price`."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) >= 2:
        _, upper = sorted(rng.sample(candidates, 2))
        return upper, f", and price lower than {upper:.2f} dollars"
    return NO_PRICE_LIMIT, ""


def _goal(product: dict, instruction: str, attributes: list[str], options, price_upper: float) -> dict:
    return {"asin": product["asin"], "category": product["category"], "query": product["query"],
            "name": product["Title"], "product_category": product["product_category"],
            "instruction_text": instruction, "attributes": attributes, "price_upper": price_upper,
            "goal_options": options}


def synthetic_goals(products: list[dict], prices: dict[str, float], rng: random.Random) -> list[dict]:
    goals: list[dict] = []
    counts: dict[str, int] = defaultdict(int)
    for product in products:
        if product.get("instruction_text") is None:
            continue
        attributes = product["instruction_attributes"]
        if not attributes:
            raise ValueError(f"product {product['asin']} has a synthetic instruction without attributes")
        price_upper, price_text = price_clause(prices[product["asin"]], rng)
        names = sorted(product["options"])
        for combination in itertools.product(*(product["options"][n] for n in names)):
            options = dict(zip(names, combination))
            option_text = ", and ".join(f"{k}: {v}" for k, v in options.items())
            option_text = f" with {option_text}" if option_text else ""
            goals.append(_goal(product, f"{product['instruction_text']}{option_text}{price_text}", attributes,
                               options, price_upper))
            for attribute in attributes:
                counts[attribute] += 1
    for goal in goals:
        goal["weight"] = sum(1.0 / counts[a] for a in goal["attributes"]) / len(goal["attributes"])
    return goals


def human_goals(products: list[dict], prices: dict[str, float], rng: random.Random) -> list[dict]:
    goals = []
    for product in products:
        for entry in product.get("instructions") or []:
            attributes = entry["instruction_attributes"]
            if not attributes:
                continue
            price_upper, price_text = price_clause(prices[product["asin"]], rng)
            goals.append(_goal(product, entry["instruction"].strip(".") + price_text, attributes,
                               list(entry.get("instruction_options") or []), price_upper))
    for goal in goals:
        goal["weight"] = 1
    return goals


def build_goals(products: list[dict], source: str = "synthetic", price_seed: int = 0
                ) -> tuple[list[dict], dict[str, float]]:
    """(shuffled goals, product prices) for `source` ``synthetic`` or ``human``."""
    rng = random.Random(price_seed)
    prices = product_prices(products, rng)
    if source == "synthetic":
        goals = synthetic_goals(products, prices, rng)
    elif source == "human":
        goals = human_goals(products, prices, rng)
    else:
        raise ValueError(f"goals: unknown source {source!r}; choose synthetic or human")
    random.Random(SHUFFLE_SEED).shuffle(goals)
    for index, goal in enumerate(goals):
        goal["index"] = index
    return goals, prices


def split_bounds(num_goals: int) -> tuple[int, int]:
    """(end of test, end of eval) over the shuffled goal list (see the module docstring)."""
    if num_goals >= 2000:
        return REFERENCE_BOUNDS
    return num_goals // 4, num_goals // 2


def split_indices(num_goals: int, bounds: tuple[int, int] | None = None) -> dict[str, range]:
    test_end, eval_end = bounds or split_bounds(num_goals)
    if not 0 < test_end < eval_end < num_goals:
        raise ValueError(f"split bounds {test_end}, {eval_end} do not leave three non-empty splits of "
                         f"{num_goals} goals; use a larger catalogue")
    return {"test": range(0, test_end), "eval": range(test_end, eval_end), "train": range(eval_end, num_goals)}
