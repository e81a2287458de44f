"""WebShop (text): buy the product an instruction describes, in a simulated online shop.

Description
    The WebShop benchmark (Yao et al., 2022) as a plain gymnasium env: the original site's page state
    machine (`seedbench.envs.webshop.pages`), its BM25 search over the catalogue (top 50, 10 per page;
    `seedbench.envs.webshop.search`) and its purchase reward, reproduced exactly
    (`seedbench.envs.webshop.reward`). No server, no Java, no network.
Task text
    The goal's instruction, e.g. "i need a sulfate free shampoo with scent: lavender, and price lower than
    30.00 dollars" (``info["task"]``).
Action grammar
    ``<think>…</think><action>search[query]</action>`` or ``<action>click[value]</action>``, ``value`` one of
    the page's clickables (``info["admissible_actions"]`` lists ``click[...]`` for each, and
    ``search[<your query>]`` when the page has the search box). As in the original, the argument is
    lower-cased, a search is executed from any page, and ``click[search]`` is refused. With
    ``projection="reference"`` (default) a think block is required and the first action tag counts; with
    ``"seedbench"`` the last action tag counts (`seedbench.envs.action_parsing`).
Observation
    The page's visible text joined with `` [SEP] ``, as the original's ``text`` observation mode; history
    (the last 2 steps) is added by the prompt builder.
Rewards
    On ``click[buy now]`` the purchase is scored (``info["score"]``, the original's total in [0, 1]);
    ``reward="success"`` (default, the SEED/verl-agent setting) pays 10 when the score is 1, else 0;
    ``reward="score"`` pays the score itself. ``info["won"]`` = score == 1.
Invalid actions
    Text the projection rejects, an unknown verb, an empty search or a click on something not on the page:
    the page does not change, ``info["action_valid"]`` is False, and the step counts.
Termination vs truncation
    Terminated by ``buy now``; truncated at ``max_steps`` (15).
Splits
    ``test`` (shuffled goals 0-499), ``eval`` (500-1499), ``train`` (the rest), the original baseline's
    split (`seedbench.envs.webshop.goals`). ``reset(seed=s, options={"split": name})`` plays goal
    ``s % len(split)`` of the split; ``options={"task_id": "goal-<i>"}`` a goal by its shuffled index.
Registered ids
    ``seedbench/WebShop-v0`` (alias ``webshop``), ``seedbench/WebShop-Score-v0`` (``webshop-score``:
    reward = score).
Data source
    ``data`` (a folder with the original's ``items_shuffle*.json`` and ``items_ins_v2*.json``, optionally
    ``items_human_ins.json``; ``goals="human"`` uses the human instructions), else
    ``$SEEDBENCH_WEBSHOP_DATA``, else the catalogue `seedbench data webshop` generates (1,000 products,
    made on first use in the seedbench cache; `seedbench.envs.webshop.catalogue`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from seedbench.envs.action_parsing import check_projection, project_action
from seedbench.envs.text_env import TextEnv
from seedbench.envs.webshop.catalogue import GENERATOR_VERSION
from seedbench.envs.webshop.goals import SPLITS, build_goals, split_indices
from seedbench.envs.webshop.nouns import noun_extractor
from seedbench.envs.webshop.pages import END_BUTTON, Session, render
from seedbench.envs.webshop.products import Catalogue, WebShopDataError, load_catalogue
from seedbench.envs.webshop.reward import RewardRules, fuzzy_scorer, get_reward
from seedbench.envs.webshop.search import SearchIndex, shared_index
from seedbench.provenance import digest

ACTION = re.compile(r"(.+)\[(.+)\]")
SEARCH_PLACEHOLDER = "search[<your query>]"
WIN_REWARD = 10.0
INSTRUCTION = ("You are an expert autonomous agent operating in the WebShop e-commerce game environment. "
               "Act with search[your query] on a page with a search box, or click[value] with a value from the "
               "admissible actions; buy the product that matches the task with click[buy now].")


@dataclass
class Shop:
    """Everything episodes share: products, goals, prices, search index (one per process and data)."""

    catalogue: Catalogue
    goals: list[dict]
    prices: dict[str, float]
    by_asin: dict[str, dict]
    index: SearchIndex
    splits: dict[str, range]
    checksum: str


_SHOPS: dict[tuple, Shop] = {}


def open_shop(data: str | None, goals: str, num_products: int | None, products: int, seed: int, price_seed: int,
              bounds: tuple[int, int] | None) -> Shop:
    key = (str(data) if data is not None else os.environ.get("SEEDBENCH_WEBSHOP_DATA"), goals, num_products,
           products, seed, price_seed, tuple(bounds) if bounds else None)
    if key not in _SHOPS:
        catalogue = load_catalogue(data, num_products=num_products, generate_products=products, seed=seed)
        if goals == "human" and not catalogue.has_human_goals:
            raise WebShopDataError(f"goals='human' needs items_human_ins.json in {catalogue.root}")
        goal_list, prices = build_goals(catalogue.products, goals, price_seed)
        checksum = digest({"catalogue": catalogue.checksum, "goals": goals, "price_seed": price_seed,
                           "splits": {k: [r.start, r.stop] for k, r in split_indices(len(goal_list), bounds).items()},
                           "generator_version": GENERATOR_VERSION})
        _SHOPS[key] = Shop(catalogue, goal_list, prices, catalogue.by_asin,
                           shared_index(catalogue.checksum, catalogue.products),
                           split_indices(len(goal_list), bounds), checksum)
    return _SHOPS[key]


def parse_command(text: str, projection: str = "reference") -> tuple[str, bool]:
    """``("search[<query>]" | "click[<value>]", well_formed)``, the argument lower-cased as the original."""
    payload = project_action(text, projection)
    match = ACTION.match(payload or "")
    if match is None or match.group(1) not in ("search", "click"):
        return payload or "", False
    return f"{match.group(1)}[{match.group(2).lower()}]", True


class WebShopEnv(TextEnv):
    history_length = 2
    max_steps = 15
    invalid_action_penalty = 0.1
    splits = SPLITS
    eval_split = "test"
    instruction = INSTRUCTION
    generator_version = GENERATOR_VERSION

    def __init__(self, data: str | os.PathLike | None = None, goals: str = "synthetic", num_products: int | None = None,
                 products: int = 1000, seed: int = 0, price_seed: int = 0, reward: str = "success",
                 nouns: str = "heuristic", spacy_model: str = "en_core_web_sm", fuzzy: str = "thefuzz",
                 goal_options: str = "items", color: str = "substring", title_denominator: str = "list",
                 empty_attributes: str = "raise", show_attrs: bool = False, split_bounds: tuple[int, int] | None = None,
                 max_steps: int = 15, projection: str = "reference", render_mode: str | None = None):
        """`data`: official or generated data folder (default: see the module docstring); `products`/`seed`:
        the generated catalogue's size and seed; `num_products`: keep only the first N products of the
        files (the original's ``num_products``); `goals`: ``synthetic`` or ``human``; `price_seed`: seeds
        the product prices and goal price limits; `reward`: ``success`` or ``score``; `nouns`, `fuzzy`,
        `goal_options`, `color`, `title_denominator`, `empty_attributes`: the reward's documented options
        (`RewardRules`, `seedbench.envs.webshop.nouns`)."""
        super().__init__(render_mode=render_mode)
        if reward not in ("success", "score"):
            raise ValueError(f"reward: unknown {reward!r}; choose success or score")
        if max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        self.max_steps, self.reward_mode, self.show_attrs = max_steps, reward, show_attrs
        self.projection = check_projection(projection)
        if projection != "reference":
            self.parse_action = lambda text: parse_command(text, self.projection)
        self.rules = RewardRules(fuzzy=fuzzy, goal_options=goal_options, color=color,
                                 title_denominator=title_denominator, empty_attributes=empty_attributes)
        self._nouns = noun_extractor(nouns, spacy_model)
        self._score = fuzzy_scorer(fuzzy)
        self.shop = open_shop(None if data is None else str(data), goals, num_products, products, seed, price_seed,
                              split_bounds)
        self.goal: dict[str, Any] = {}
        self.session = Session("")
        self._split = "test"
        self._score_value = 0.0
        self._won = False
        self._query_failed = False

    # -- Gymnasium API -----------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        self.goal, self._split = self._select(seed, options)
        self.session = Session(self.goal["instruction_text"], show_attrs=self.show_attrs)
        self._score_value, self._won, self._query_failed = 0.0, False, False
        return self._observation(), self._info()

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        """Syntax only (``search[...]`` / ``click[...]`` inside the reference projection's tags);
        whether the click is on the page is checked when it is played."""
        return parse_command(text, "reference")

    def _apply_action(self, command: str, valid: bool):
        session = self.session
        name, _, arg = command.partition("[")
        arg = arg[:-1]
        if valid and name == "search" and arg.strip():
            session.search(arg.split(" "), self._run_search)
        elif valid and name == "click" and arg != "search" and arg in session.clickables(self._product()):
            if session.click(arg, self.shop.by_asin.__getitem__, self._run_search):
                return self._buy()
        else:
            valid = False
        return self._observation(), 0.0, False, valid

    def render(self):
        return self._observation()

    # -- the purchase ------------------------------------------------------------------------------

    def _buy(self):
        session, asin = self.session, self.session.asin
        total, details = get_reward(self.shop.by_asin[asin], self.goal, self.shop.prices[asin], session.options,
                                    self.rules, self._nouns, self._score)
        session.purchase = {"asin": asin, "options": dict(session.options), "reward": total, "details": details}
        self._score_value, self._won = float(total), total == 1
        reward = (WIN_REWARD if self._won else 0.0) if self.reward_mode == "success" else float(total)
        return self._observation(), reward, True, True

    # -- the scripted expert -----------------------------------------------------------------------

    def expert_plan(self) -> list[str]:
        """Search with the instruction (without its price clause), page to the goal's product, choose the
        goal's option values, buy. When the product is not among the search's results the expert goes
        back and searches its title instead. Score 1 on every generated goal (tests/test_webshop_env.py)."""
        session, goal = self.session, self.goal
        target = goal.get("asin")
        if not target or session.page == "done" or self._done:
            return []
        if session.page == "search":
            query = goal["name"] if self._query_failed else goal["instruction_text"].split(", and price lower than")[0]
            return [f"search[{query.lower()}]"]
        if session.page == "results":
            asins = [p["asin"] for p in session.results]
            if target not in asins:
                self._query_failed = True
                return ["click[back to search]"]
            page = asins.index(target) // 10 + 1
            if page == session.page_number:
                return [f"click[{target.lower()}]"]
            return ["click[next >]" if page > session.page_number else "click[< prev]"]
        if session.page == "sub" or session.asin != target:
            return ["click[< prev]"]
        values = self.shop.by_asin[target]["options"]
        wanted = goal["goal_options"] if isinstance(goal["goal_options"], dict) else {
            name: value for value in goal["goal_options"] for name, vs in values.items() if value in vs}
        missing = [f"click[{v}]" for name, v in wanted.items() if session.options.get(name) != v]
        return missing + [f"click[{END_BUTTON}]"]

    # -- extras ------------------------------------------------------------------------------------

    def provenance(self) -> dict[str, str]:
        return {"data_source": self.shop.catalogue.source, "manifest_checksum": self.shop.checksum,
                "generator_version": GENERATOR_VERSION}

    def task_ids(self, split: str) -> list[str]:
        return [f"goal-{i}" for i in self.shop.splits[self._check_split(split)]]

    # -- internals ---------------------------------------------------------------------------------

    def _select(self, seed: int | None, options: dict) -> tuple[dict, str]:
        if "task_id" in options:
            text = str(options["task_id"])
            index = int(text.removeprefix("goal-")) if text.removeprefix("goal-").isdigit() else -1
            if not 0 <= index < len(self.shop.goals):
                raise ValueError(f"unknown WebShop task_id {text!r}; ids are goal-0 .. goal-{len(self.shop.goals) - 1}")
            split = next(s for s, r in self.shop.splits.items() if index in r)
            return self.shop.goals[index], split
        split = self._check_split(options.get("split", self.splits[0]))
        indices = self.shop.splits[split]
        position = seed if seed is not None else int(self.np_random.integers(len(indices)))
        return self.shop.goals[indices[position % len(indices)]], split

    def _run_search(self, keywords: list[str]) -> list[dict]:
        return self.shop.index.top_products(keywords, self.np_random)

    def _product(self) -> dict | None:
        return self.shop.by_asin.get(self.session.asin) if self.session.asin else None

    def _observation(self) -> str:
        return render(self.session, self._product())

    def _info(self) -> dict[str, Any]:
        session = self.session
        clickables = session.clickables(self._product())
        actions = ([SEARCH_PLACEHOLDER] if "search" in clickables else []) + [
            f"click[{c}]" for c in clickables if c != "search"]
        return {"task": self.goal["instruction_text"], "admissible_actions": actions, "won": self._won,
                "task_id": f"goal-{self.goal['index']}", "task_type": self.goal["category"], "split": self._split,
                "score": self._score_value, "page": session.page, "step": self._steps}
