"""The WebShop purchase reward on hand-built goal/product pairs, expected totals worked out by hand.

total = r_type · (attributes matched + options matched + price ok) / (|attributes| + |options| + 1).
Each case names the trap it covers (docs/webshop.md, "Reward and its traps")."""

from __future__ import annotations

import pytest

pytest.importorskip("thefuzz", reason="the WebShop reward needs the [webshop] extra")

from seedbench.envs.webshop.nouns import heuristic_nouns, noun_extractor  # noqa: E402
from seedbench.envs.webshop.reward import RewardRules, get_reward, normalize_color  # noqa: E402

CAT = "Beauty & Personal Care › Hair Care › Shampoos"


def product(**over):
    p = {"asin": "B0SHAMPOO1", "name": "Lumo Organic Shampoo - Sulfate Free", "query": "shampoo",
         "product_category": CAT, "Title": "Lumo Organic Shampoo - Sulfate Free",
         "Attributes": ["sulfate free", "long lasting", "dry hair"],
         "BulletPoints": ["Gentle formula for a dry scalp", "Made in small batches"],
         "Description": "A daily shampoo with argan oil."}
    p.update(over)
    if "name" in over and "Title" not in over:
        p["Title"] = over["name"]
    return p


def goal(**over):
    g = {"asin": "B0SHAMPOO1", "name": "Lumo Organic Shampoo - Sulfate Free", "query": "shampoo",
         "product_category": CAT, "attributes": ["sulfate free", "long lasting"], "goal_options": {"size": "large"},
         "price_upper": 30.0}
    g.update(over)
    return g


REF = RewardRules()
CASES = [
    # (id, product overrides, goal overrides, price, bought options, rules, expected total)
    ("exact purchase: (2 attrs + 1 option + price) / 4",
     {}, {}, 20.0, {"size": "large"}, REF, 4 / 4),
    ("price above the limit: (2 + 1 + 0) / 4",
     {}, {}, 35.0, {"size": "large"}, REF, 3 / 4),
    ("price equal to the limit counts (<=)",
     {}, {}, 30.0, {"size": "large"}, REF, 4 / 4),
    ("no option chosen: (2 + 0 + 1) / 4",
     {}, {}, 20.0, {}, REF, 3 / 4),
    ("thefuzz preprocessing: 'sulfate-free' ~ 'sulfate free' scores 100",
     {}, {"attributes": ["sulfate-free", "long lasting"]}, 20.0, {"size": "large"}, REF, 4 / 4),
    ("raw rapidfuzz: 'sulfate-free' vs 'sulfate free' scores 58 and the raw substring misses; the option tuple's "
     "str \"('size', 'large')\" keeps its quotes, so 'large' misses too: (1 + 0 + 1) / 4",
     {}, {"attributes": ["sulfate-free", "long lasting"]}, 20.0, {"size": "large"}, RewardRules(fuzzy="rapidfuzz"), 2 / 4),
    ("thefuzz deletes Latin-1 letters: 'crème' → 'crme' vs 'creme' = 89 > 85, a match: (1 + 0 + 1) / 2",
     {"Attributes": ["creme"]}, {"attributes": ["crème"], "goal_options": {}}, 20.0, {}, REF, 2 / 2),
    ("raw rapidfuzz keeps 'è': 'crème' vs 'creme' = 80, no match: (0 + 0 + 1) / 2",
     {"Attributes": ["creme"]}, {"attributes": ["crème"], "goal_options": {}}, 20.0, {}, RewardRules(fuzzy="rapidfuzz"), 1 / 2),
    ("rounding: 20 vs 27 letters sharing a prefix score 2·20/47 = 85.1, thefuzz rounds to 85, not > 85: (0+0+1)/2",
     {"Attributes": ["fragrancefreeformulaclassic"]}, {"attributes": ["fragrancefreeformula"], "goal_options": {}},
     20.0, {}, REF, 1 / 2),
    ("raw rapidfuzz keeps 85.1 > 85, a match: (1 + 0 + 1) / 2",
     {"Attributes": ["fragrancefreeformulaclassic"]}, {"attributes": ["fragrancefreeformula"], "goal_options": {}},
     20.0, {}, RewardRules(fuzzy="rapidfuzz"), 2 / 2),
    ("attribute found as a substring of the bullet points: (1 + 0 + 1) / 2",
     {}, {"attributes": ["gentle formula"], "goal_options": {}}, 20.0, {}, REF, 2 / 2),
    ("the substring test is case-sensitive on the goal side: 'Gentle formula' is not in the lower-cased bullets",
     {}, {"attributes": ["Gentle formula"], "goal_options": {}}, 20.0, {}, REF, 1 / 2),
    ("attribute found in the description; one of three attributes missing: (2 + 0 + 1) / 4",
     {}, {"attributes": ["argan oil", "dry hair", "vegan"], "goal_options": {}}, 20.0, {}, REF, 3 / 4),
    ("(name, value) items: bought 'white' matches goal ('color', 'black and white'): (2 + 1 + 1) / 4",
     {}, {"goal_options": {"color": "black and white"}}, 20.0, {"color": "white"}, REF, 4 / 4),
    ("values only: goal 'black and white' normalises to 'black', bought 'white' misses: (2 + 0 + 1) / 4",
     {}, {"goal_options": {"color": "black and white"}}, 20.0, {"color": "white"}, RewardRules(goal_options="values"), 3 / 4),
    ("two options, one right: ('color','red') matches 'red', ('size','small') misses 'medium': (2 + 1 + 1) / 5",
     {}, {"goal_options": {"color": "red", "size": "small"}}, 20.0, {"color": "red", "size": "medium"}, REF, 4 / 5),
    ("colour substring trap: bought 'standard' normalises to 'tan' and misses goal ('size','standard'): 3 / 4",
     {}, {"goal_options": {"size": "standard"}}, 20.0, {"size": "standard"}, REF, 3 / 4),
    ("whole-word colours leave 'standard' alone, so it matches: 4 / 4",
     {}, {"goal_options": {"size": "standard"}}, 20.0, {"size": "standard"}, RewardRules(color="word"), 4 / 4),
    ("human goal (list of values): 'rose gold' normalises to 'gold' (g before r), so bought 'gold' matches",
     {}, {"goal_options": ["rose gold"]}, 20.0, {"color": "gold"}, REF, 4 / 4),
    ("title duplicates: goal nouns [lumo, bottle×4, shampoo] = 6, shared {shampoo}: 1/6 = 0.17, no query or "
     "category match → r_type 0.5: 0.5 · 4/4",
     {"name": "Zed Shampoo", "query": "hair care", "product_category": "Beauty › Skin Care › Face"},
     {"name": "Lumo Bottle Bottle Bottle Bottle Shampoo"}, 20.0, {"size": "large"}, REF, 0.5),
    ("title as a set: 1/3 > 0.2 → r_type 1: 4/4",
     {"name": "Zed Shampoo", "query": "hair care", "product_category": "Beauty › Skin Care › Face"},
     {"name": "Lumo Bottle Bottle Bottle Bottle Shampoo"}, 20.0, {"size": "large"}, RewardRules(title_denominator="set"), 1.0),
    ("title score 1/11 < 0.1 → r_type 0.1 even with the same query: 0.1 · 4/4",
     {"name": "Zed Box"}, {"name": "Kit Kit Kit Kit Kit Kit Kit Kit Kit Kit Box"}, 20.0, {"size": "large"}, REF, 0.1),
    ("no shared title noun → r_type 0 whatever else matches",
     {"name": "Zed Lamp"}, {}, 20.0, {"size": "large"}, REF, 0.0),
    ("category match (2 shared levels) with title score 1/6 keeps r_type 1",
     {"name": "Zed Shampoo", "query": "hair care", "product_category": "Beauty & Personal Care › Hair Care › Conditioners"},
     {"name": "Lumo Bottle Bottle Bottle Bottle Shampoo"}, 20.0, {"size": "large"}, REF, 1.0),
    ("one shared category level is not a match: r_type 0.5",
     {"name": "Zed Shampoo", "query": "hair care", "product_category": "Beauty & Personal Care › Skin Care › Face"},
     {"name": "Lumo Bottle Bottle Bottle Bottle Shampoo"}, 20.0, {"size": "large"}, REF, 0.5),
    ("goal title without nouns scores 0.2, not > 0.2: needs the query match (here: none) → 0.5",
     {"query": "hair care", "product_category": "Beauty › Skin Care › Face"}, {"name": "Organic, 12 Free"},
     20.0, {"size": "large"}, REF, 0.5),
    ("goal without attributes, allowed: (0 + 1 + 1) / (0 + 1 + 1)",
     {}, {"attributes": []}, 20.0, {"size": "large"}, RewardRules(empty_attributes="allow"), 1.0),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0][:60] for c in CASES])
def test_reward_on_hand_built_pairs(case):
    _, p_over, g_over, price, options, rules, expected = case
    total, details = get_reward(product(**p_over), goal(**g_over), price, options, rules)
    assert total == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= total <= 1.0 and details["r_type"] in (0.0, 0.1, 0.5, 1.0)


def test_there_are_at_least_20_cases():
    assert len(CASES) >= 20


def test_goal_without_attributes_raises_by_default():
    with pytest.raises(ZeroDivisionError, match="no attributes"):
        get_reward(product(), goal(attributes=[]), 20.0, {"size": "large"})


def test_colour_normaliser_reference_rules():
    assert normalize_color("dark brown") == "brown"  # list order, not position in the string
    assert normalize_color("Navy") == "Navy"  # case-sensitive
    assert normalize_color(("color", "navy")) == "navy"  # a tuple: membership, not substring
    assert normalize_color(("color", "navy blue")) == ("color", "navy blue")
    assert normalize_color("washed") == "ash" and normalize_color("washed", "word") == "washed"


def test_heuristic_nouns():
    assert heuristic_nouns("Lumo Organic Shampoo - Sulfate Free") == ["lumo", "shampoo", "sulfate"]
    assert heuristic_nouns("Men's T-Shirt, 2 Pack, Washable") == ["men", "shirt", "pack"]
    assert heuristic_nouns("Kit Kit Box") == ["kit", "kit", "box"]  # duplicates kept


def test_spacy_path_fails_with_the_install_line_when_the_model_is_missing():
    import importlib.util

    if importlib.util.find_spec("en_core_web_sm") is None:
        with pytest.raises(OSError, match="python -m spacy download en_core_web_sm"):
            noun_extractor("spacy")
    else:  # the model is installed: the original's tagger is used
        assert "shampoo" in noun_extractor("spacy")("Lumo Organic Shampoo")


def test_unknown_rules_are_refused():
    with pytest.raises(ValueError, match="choose one of thefuzz, rapidfuzz"):
        RewardRules(fuzzy="levenshtein")


def test_details_name_every_part_whether_or_not_the_goal_has_options():
    keys = {"r_type", "query_match", "category_match", "title_score", "r_att", "w_att", "r_price", "w_price",
            "attrs_matched", "options_matched", "r_option", "w_option"}
    _, with_options = get_reward(product(), goal(), 20.0, {"size": "large"})
    _, without = get_reward(product(), goal(goal_options={}), 20.0, {})
    assert keys <= set(with_options) and set(with_options) == set(without)
    assert (without["r_option"], without["w_option"], without["options_matched"]) == (None, 0.0, 0)
    assert with_options["w_option"] > 0 and with_options["r_option"] is not None
