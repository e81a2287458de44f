"""EZPoints and Points24: RL4VLM's gym-cards arithmetic card games, in text and image.

Description
    A deal of cards is shown; the agent builds a formula one token per step (a card's number, an
    operator, a parenthesis) and submits it with ``=``. EZPoints (two cards, ``+`` and ``*``, target
    12) and Points24 (four cards, ``+ - * / ( )``, target 24) reproduce gym-cards' ``EZPointEnv`` and
    ``Point24Env`` (Zhai et al., 2024, "Fine-Tuning Large Vision-Language Models as Decision-Making
    Agents via RL", github.com/RL4VLM/RL4VLM, ``gym-cards/gym_cards/envs/``): the same action list, the
    same validity rule, rewards and termination, the same deal distribution, the same evaluation of the
    formula (Python's arithmetic on the concatenated tokens, so ``*`` ``*`` is a power and a float
    result must equal the target exactly). The card art is ours, drawn with Pillow (gym-cards' PNGs carry
    no licence).
Task text
    "build a formula from the cards that equals 12" (24 for Points24).
Action grammar
    ``<action>TOKEN</action>`` after a ``<think>…</think>`` block (``projection="reference"``; ``"seedbench"``
    needs no think block and takes the last tag), TOKEN one of gym-cards' actions: ``1`` … ``10`` (``1`` …
    ``13`` for Points24 with ``treat_face_cards_as_10=False``), the operators (``+ *`` for EZPoints,
    ``+ - * / ( )`` for Points24) and ``=`` (submit). Numbers stand for card values: A = 1, J, Q and K
    count as 10 (gym-cards' rule; Points24 can keep them as 11-13). A number is valid while the hand holds
    a card of that value not yet used; operators and ``=`` are always valid. ``info["admissible_actions"]``
    lists the tokens valid now (the values of the unused cards, the operators, ``=``).
Observation
    Text: the cards (rank, suit and value), the formula so far (tokens joined without spaces, as RL4VLM's
    prompt shows it) and the target. Image: ``info["image"]``, a 300x300 uint8 RGB frame (gym-cards'
    canvas size) with the cards drawn in a row on green felt (rank and suit as text) and the formula
    below them, on every reset and step.
Rewards
    gym-cards': +10 when ``=`` submits a formula that uses every card and evaluates to the target, -1
    when it does not (or does not parse), -1 for an invalid step (a number the hand does not hold, or
    text that is not an action: a space is appended to the formula, as gym-cards does, so the formula
    length still grows), 0 otherwise. The env's -1 is the invalid-step cost, so ``invalid_action_penalty``
    is 0.
Termination vs truncation
    ``=`` terminates (``info["won"]`` is True when the reward was +10). gym-cards truncates with reward
    -1 at the step after the formula has grown past 5 tokens (EZPoints) or 20 tokens (Points24); every
    step but ``=`` adds one token, so that is the step cap: ``max_steps`` 7 and 22.
Registered ids
    ``seedbench/EZPoints-v0`` (alias ``ezpoints``), ``seedbench/Points24-v0`` (``points24``, J/Q/K = 10,
    solvable deals only). Kwargs: ``treat_face_cards_as_10``, ``solvable_only`` (Points24), ``projection``.
Data source
    Procedural; no files. Deal ``{game}-{split}-{seed}`` is drawn with gym-cards' distribution from a
    generator seeded with (seed, split name). The splits are disjoint sets of deals: a hash of the deal
    (EZPoints: ranks, suits and order; Points24: the sorted card values, so a test deal is a new puzzle,
    not a reshuffle) picks its split and the generator redraws until they agree.

Deviations from gym-cards (docs/method.md §9): the deal comes from the env's seeded generator, not the
global ``random`` module; Points24 deals only solvable hands by default (gym-cards deals any four cards,
26.9 % of which have no solution; ``solvable_only=False`` restores that); text that is not an
action is an invalid step here (RL4VLM's projection plays a random action instead); a power whose
exponent exceeds 1000 (which gym-cards' ``eval`` would compute for minutes) counts as a wrong formula.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import operator
import re
import zlib
from fractions import Fraction

import numpy as np

from seedbench.envs.action_parsing import check_projection, project_action
from seedbench.envs.text_env import TextEnv

SUITS = ("H", "S", "D", "C")
SUIT_NAMES = {"H": "hearts", "S": "spades", "D": "diamonds", "C": "clubs"}
RANK_NAMES = {1: "A", 10: "10", 11: "J", 12: "Q", 13: "K"}  # gym-cards files 10 as "T"; we show "10"
REWARD_CORRECT, REWARD_WRONG, REWARD_INVALID = 10.0, -1.0, -1.0
MAX_EXPONENT = 1000
CANVAS = 300  # gym-cards' canvas, square
FELT = (0x35, 0x65, 0x4D)  # gym-cards' background colour
_ALL_NUMBERS = tuple(str(n) for n in range(1, 14))
_TASK_ID_RE = re.compile(r"^(?P<game>ezpoints|points24)-(?P<split>[A-Za-z0-9_]+)-(?P<seed>\d+)$")


# ----------------------------------------------------------------------------------------------------
# Formulas: evaluation with Python's semantics, and the solver


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _evaluate_node(node: ast.AST):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate_node(node.left), _evaluate_node(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise OverflowError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate_node(node.operand))
    raise ValueError(f"not arithmetic: {ast.dump(node)}")


def evaluate_formula(formula: str):
    """What gym-cards' ``eval(formula)`` gives, or None where it raises (bad syntax, division by zero).

    The formula is parsed by Python and only integer literals and ``+ - * / // **`` are evaluated, with
    Python's own operators, so the value is eval's (``1/3*3`` is a float, ``2**3`` is 8) without eval."""
    try:
        tree = ast.parse(formula, mode="eval")
        return _evaluate_node(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError, RecursionError):
        return None


_FRACTION_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
FORMULAS_PER_VALUE = 4  # formulas kept per (sub-hand, exact value): enough to survive float rounding


@functools.lru_cache(maxsize=65536)
def _expressions(values: tuple[int, ...], ops: tuple[str, ...]) -> tuple[tuple[str, Fraction, int], ...]:
    """Expressions over all of the sorted `values` (each once) with binary `ops`, written with the fewest
    parentheses: ``(formula, exact value, precedence of its top operator)``, at most
    `FORMULAS_PER_VALUE` per value (memoised on the sub-hand, so a 4-card search takes milliseconds)."""
    if len(values) == 1:
        return ((str(values[0]), Fraction(values[0]), 3),)
    kept: dict[Fraction, list[tuple[str, Fraction, int]]] = {}
    indices = range(len(values))
    for size in range(1, len(values)):
        for left_idx in itertools.combinations(indices, size):
            left_vals = tuple(values[i] for i in left_idx)
            right_vals = tuple(values[i] for i in indices if i not in left_idx)
            for (ls, lv, lp), (rs, rv, rp) in itertools.product(_expressions(left_vals, ops),
                                                                _expressions(right_vals, ops)):
                for op in ops:
                    if op == "/" and rv == 0:
                        continue
                    prec = 1 if op in "+-" else 2
                    left = ls if lp >= prec else f"({ls})"
                    right = rs if rp > prec or (rp == prec and op in "+*") else f"({rs})"
                    value = _FRACTION_OPS[op](lv, rv)
                    bucket = kept.setdefault(value, [])
                    formula = f"{left}{op}{right}"
                    if len(bucket) < FORMULAS_PER_VALUE and all(f != formula for f, _, _ in bucket):
                        bucket.append((formula, value, prec))
    return tuple(item for bucket in kept.values() for item in bucket)


def tokenize(formula: str) -> list[str]:
    """``"(10+2)*2"`` → ``["(", "10", "+", "2", ")", "*", "2"]``: the action tokens that type it."""
    return re.findall(r"\d+|[^\d\s]", formula)


@functools.lru_cache(maxsize=4096)
def solutions(values: tuple[int, ...], target: int, ops: tuple[str, ...]) -> tuple[str, ...]:
    """Formulas over all card `values` that gym-cards scores as correct, shortest first.

    Candidates are searched with exact fractions, then kept only when the formula string evaluates to
    `target` under gym-cards' float arithmetic (``8/(3-8/3)`` is 23.99999999999999 there, so 3 3 8 8
    has no solution). Cached: a Points24 deal is one of 715 value multisets."""
    exprs = _expressions(tuple(sorted(values)), ops)
    found = [s for s, v, _ in exprs if v == target and evaluate_formula(s) == target]
    return tuple(sorted(found, key=lambda s: (len(tokenize(s)), s)))


# ----------------------------------------------------------------------------------------------------
# Drawing


def _require_pillow() -> None:
    try:
        import PIL  # noqa: F401
    except ImportError as err:
        raise ImportError("the card frames are drawn with Pillow: pip install 'pillow>=10.1'") from err


@functools.lru_cache(maxsize=8)
def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)  # Pillow's bundled font: the same pixels on every machine


@functools.lru_cache(maxsize=256)
def draw_card(card: str, width: int, height: int):
    """A card face: white, rounded, rank top-left and large in the middle, suit name below (red for
    hearts and diamonds). `card` is gym-cards' name, suit letter then rank (``"H10"``, ``"SK"``)."""
    from PIL import Image, ImageDraw

    suit, rank = card[0], card[1:]
    colour = (200, 0, 0) if suit in "HD" else (0, 0, 0)
    image = Image.new("RGB", (width, height), FELT)
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((0, 0, width - 1, height - 1), radius=max(2, width // 12), fill="white",
                           outline=(60, 60, 60), width=2)
    small, big = _font(max(8, width // 5)), _font(max(10, width // 2))
    draw.text((width * 0.08, height * 0.04), rank, fill=colour, font=small)
    draw.text((width / 2, height * 0.45), rank, fill=colour, font=big, anchor="mm")
    draw.text((width / 2, height * 0.8), SUIT_NAMES[suit], fill=colour, font=_font(max(8, width // 6)), anchor="mm")
    return image


def draw_table(cards: list[str], formula: str) -> np.ndarray:
    """The 300x300 frame: gym-cards' layout (cards 90 % of an equal share of the width, 5:7, centred
    vertically, 5 px margin, 10 % gaps) with the formula written under them."""
    from PIL import Image, ImageDraw

    canvas = Image.new("RGB", (CANVAS, CANVAS), FELT)
    card_width = int(CANVAS / len(cards) * 0.9)
    card_height = int(card_width * 7 / 5)
    for i, card in enumerate(cards):
        canvas.paste(draw_card(card, card_width, card_height),
                     (5 + int(i * card_width * 1.1), int((CANVAS - card_height) / 2)))
    draw = ImageDraw.Draw(canvas)
    font = _font(16)
    top = min(CANVAS * 0.78, (CANVAS + card_height) / 2 + 8)
    draw.text((10, top), "Formula:", fill="white", font=font)
    draw.text((10, top + 22), " ".join(tokenize(formula)) if formula.strip() else "", fill="white", font=font)
    return np.asarray(canvas, dtype=np.uint8).copy()


# ----------------------------------------------------------------------------------------------------
# The env


class _CardsEnv(TextEnv):
    """Shared rules of EZPoints and Points24 (gym-cards' two classes differ only in the constants)."""

    game = ""
    num_cards = 0
    target_points = 0
    operators: tuple[str, ...] = ()
    max_formula_length = 0  # gym-cards truncates at the step after the formula grew past this
    image_shape = (CANVAS, CANVAS)
    history_length = 2
    invalid_action_penalty = 0.0  # the env's own reward already gives an invalid step -1
    splits = ("train", "test")
    eval_split = "test"
    generator_version = "1"

    def __init__(self, treat_face_cards_as_10: bool = True, projection: str = "reference",
                 render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        _require_pillow()
        self.projection = check_projection(projection)
        if projection != "reference":  # the class-level rule is the reference one
            self.parse_action = functools.partial(type(self).parse_action, projection=self.projection)
        self.treat_face_cards_as_10 = bool(treat_face_cards_as_10)
        self.numbers = tuple(str(n) for n in range(1, 11 if self.treat_face_cards_as_10 else 14))
        self.actions = self.numbers + self.operators + ("=",)
        self.cards: list[str] = []
        self.values: list[int] = []
        self.formula: list[str] = []
        self.used: list[int] = []
        self._split, self._task_id, self._won = self.splits[0], "", False
        faces = "J, Q and K count as 10" if self.treat_face_cards_as_10 else "J is 11, Q 12, K 13"
        target = self.target_points
        self.instruction = (
            f"You are playing a card game. Build a formula that equals {target} using the value of every card "
            f"exactly once. A is 1; {faces}. Each action appends one token to the formula: a card value, an "
            f"operator ({' '.join(self.operators)}), or = to submit the formula. A submitted formula that equals "
            f"{target} wins 10 points; a wrong one, or a number you do not hold, costs 1 point. Answer with "
            f"exactly one token in the form <action>TOKEN</action>, for example <action>{self.numbers[1]}</action>.")

    # -- text protocol --------------------------------------------------------------------------------

    @classmethod
    def parse_action(cls, text: str, projection: str = "reference") -> tuple[str, bool]:
        """The token of the action tag when it is one of the game's tokens (numbers 1-13, the operators,
        ``=``); whether the hand holds that number is the step's business (gym-cards' validity rule)."""
        payload = project_action(text, projection)
        if payload is None:
            return "", False
        payload = payload.strip()
        return payload, payload in cls.operators + ("=",) or payload in _ALL_NUMBERS

    def _observation(self) -> str:
        shown = ", ".join(f"{self._rank(c)} of {SUIT_NAMES[c[0]]} (value {v})" for c, v in zip(self.cards, self.values))
        formula = "".join(self.formula)
        return (f"Cards: {shown}.\nCurrent formula: {formula if formula.strip() else '(empty)'}\n"
                f"Target: {self.target_points}.")

    @staticmethod
    def _rank(card: str) -> str:
        return card[1:]

    def _info(self) -> dict:
        return {"task": f"build a formula from the cards that equals {self.target_points}",
                "admissible_actions": self.admissible_actions(), "won": self._won, "task_id": self._task_id,
                "task_type": self.game, "split": self._split, "image": self.render_image()}

    def admissible_actions(self) -> list[str]:
        """The tokens valid now: the values of the cards not used yet, every operator, and ``=``."""
        held = [n for n in self.numbers if self.values and self._holds(int(n))]
        return held + list(self.operators) + ["="]

    def render_image(self) -> np.ndarray:
        return draw_table(self.cards, "".join(self.formula))

    def render(self) -> str:
        return self._observation() if self.cards else ""

    # -- deals ----------------------------------------------------------------------------------------

    def _card_name(self, rank: int, suit: str) -> str:
        return suit + RANK_NAMES.get(rank, str(rank))

    def _draw_deal(self, rng: np.random.Generator) -> tuple[list[int], list[str]]:
        raise NotImplementedError

    def _deal_key(self, ranks: list[int], cards: list[str], values: list[int]) -> bytes:
        raise NotImplementedError

    def _acceptable(self, values: list[int]) -> bool:
        return True

    def deal(self, split: str, seed: int) -> tuple[list[str], list[int]]:
        """The deal ``{game}-{split}-{seed}``: ``(card names, card values)``. Pure in (split, seed, kwargs)."""
        split_index = self.splits.index(self._check_split(split))
        rng = np.random.default_rng([int(seed), zlib.crc32(split.encode()), zlib.crc32(self.game.encode())])
        for _ in range(10_000):
            ranks, suits = self._draw_deal(rng)
            cards = [self._card_name(r, s) for r, s in zip(ranks, suits)]
            values = [min(r, 10) if self.treat_face_cards_as_10 else r for r in ranks]
            key = self._deal_key(ranks, cards, values)
            if int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little") % len(self.splits) != split_index:
                continue
            if self._acceptable(values):
                return cards, values
        raise RuntimeError(f"could not deal a {self.game} hand for split {split!r}")

    def _parse_cards(self, names) -> tuple[list[str], list[int]]:
        ranks = {v: k for k, v in RANK_NAMES.items()} | {str(n): n for n in range(2, 10)}
        cards, values = [], []
        for name in names:
            name = str(name)
            if len(name) < 2 or name[0] not in SUITS or name[1:] not in ranks:
                raise ValueError(f"bad card {name!r}: a suit letter (H, S, D, C) then A, 2-10, J, Q or K")
            rank = ranks[name[1:]]
            cards.append(name)
            values.append(min(rank, 10) if self.treat_face_cards_as_10 else rank)
        if len(cards) != self.num_cards:
            raise ValueError(f"{self.game} deals {self.num_cards} cards, got {len(cards)}")
        return cards, values

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        split = self._check_split(options.get("split", self.splits[0]))
        if "cards" in options:  # a hand-made deal, gym-cards' names: suit letter then rank ("H6", "SK")
            self.cards, self.values = self._parse_cards(options["cards"])
            task_id = f"{self.game}-deal-{'-'.join(self.cards)}"
        else:
            if "task_id" in options:
                match = _TASK_ID_RE.match(str(options["task_id"]))
                if match is None or match["game"] != self.game:
                    raise ValueError(f"bad task_id {options['task_id']!r}; expected '{self.game}-<split>-<seed>'")
                split, deal_seed = self._check_split(match["split"]), int(match["seed"])
            elif seed is not None:
                deal_seed = int(seed)
            else:
                deal_seed = int(self.np_random.integers(2**31))
            self.cards, self.values = self.deal(split, deal_seed)
            task_id = f"{self.game}-{split}-{deal_seed}"
        self.formula, self.used, self._won = [], [], False
        self._split, self._task_id = split, task_id
        return self._observation(), self._info()

    # -- dynamics (gym-cards' step) -------------------------------------------------------------------

    def _holds(self, number: int) -> bool:
        used = self.used + [number]
        return all(used.count(x) <= self.values.count(x) for x in used)

    def _apply_action(self, command: str, valid: bool):
        if len(self.formula) > self.max_formula_length:
            return self._observation(), REWARD_WRONG, False, valid  # the template truncates this step
        if valid and command not in self.actions or command in self.numbers and not self._holds(int(command)):
            valid = False  # 11-13 while face cards count 10, or a number the hand does not hold
        if not valid:
            self.formula.append(" ")
            return self._observation(), REWARD_INVALID, False, False
        if command in self.numbers:
            self.used.append(int(command))
        if command == "=":
            value = evaluate_formula("".join(self.formula))
            self._won = len(self.used) == self.num_cards and value == self.target_points
            return self._observation(), REWARD_CORRECT if self._won else REWARD_WRONG, True, True
        self.formula.append(command)
        return self._observation(), 0.0, False, True

    # -- expert ---------------------------------------------------------------------------------------

    def expert_plan(self) -> list[str] | None:
        """The tokens of the shortest solution that continues the current formula, then ``=``; None when
        the formula so far is no prefix of a solution (tokens cannot be taken back)."""
        if not self.cards:
            raise RuntimeError("expert_plan() called before reset()")
        for formula in solutions(tuple(self.values), self.target_points, self.operators_for_solver()):
            tokens = tokenize(formula)
            if tokens[:len(self.formula)] == self.formula and len(tokens) <= self.max_formula_length:
                return tokens[len(self.formula):] + ["="]
        return None

    def operators_for_solver(self) -> tuple[str, ...]:
        return tuple(op for op in self.operators if op not in "()")


class EZPointsEnv(_CardsEnv):
    """EZPoints: two cards, ``+`` and ``*``, make 12 (spec sheet: the module docstring)."""

    game = "ezpoints"
    num_cards = 2
    target_points = 12
    operators = ("+", "*")
    max_formula_length = 5
    max_steps = 7  # max_formula_length + 2: gym-cards' length rule is the step cap (module docstring)

    def _draw_deal(self, rng):
        """gym-cards' EZPoints deal: a first card 2-K, then the card that makes 12 with it by ``*`` (with
        probability 1/2 when its value divides 12) or by ``+``, then a coin flip for the order."""
        first = int(rng.integers(2, 14))
        suits = [SUITS[rng.integers(4)]]
        value = min(first, 10)
        if value in (1, 2, 3, 4, 6) and rng.random() <= 0.5:
            second = 12 // value
        else:
            second = 12 - value
        suits.append(SUITS[rng.integers(4)])
        ranks = [first, second]
        if rng.random() <= 0.5:
            ranks, suits = ranks[::-1], suits[::-1]
        return ranks, suits

    def _deal_key(self, ranks, cards, values):
        return ",".join(cards).encode()


class Points24Env(_CardsEnv):
    """Points24: four cards, ``+ - * / ( )``, make 24 (spec sheet: the module docstring)."""

    game = "points24"
    num_cards = 4
    target_points = 24
    operators = ("+", "-", "*", "/", "(", ")")
    max_formula_length = 20
    max_steps = 22  # max_formula_length + 2

    def __init__(self, treat_face_cards_as_10: bool = True, solvable_only: bool = True, projection: str = "reference",
                 render_mode: str | None = None):
        self.solvable_only = bool(solvable_only)
        super().__init__(treat_face_cards_as_10=treat_face_cards_as_10, projection=projection,
                         render_mode=render_mode)

    def _draw_deal(self, rng):
        """gym-cards' Points24 deal: four independent cards A-K with random suits."""
        ranks = [int(r) for r in rng.integers(1, 14, size=4)]
        suits = [SUITS[i] for i in rng.integers(4, size=4)]
        return ranks, suits

    def _deal_key(self, ranks, cards, values):
        return ",".join(map(str, sorted(values))).encode()

    def _acceptable(self, values):
        return not self.solvable_only or bool(solutions(tuple(values), self.target_points, self.operators_for_solver()))
