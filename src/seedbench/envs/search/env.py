"""Search-QA: answer a question by searching a corpus, in Search-R1's protocol (Jin et al., 2025).

Description
    Each episode is one question. Every turn the model reasons in ``<think>…</think>`` and then either
    searches (``<search>query</search>``: the env returns the top-k passages inside
    ``<information>…</information>``) or answers (``<answer>…</answer>``: the episode ends and is scored
    by exact match after Search-R1's answer normalisation). Up to ``max_turns`` turns (4, the SEED
    paper's protocol; Search-R1's scripts use 2-10), then, as in Search-R1, one more turn with search
    disabled (``final_answer_turn``). ``max_turns=0`` with the final turn is the closed-book (no-search)
    setting: one turn, search disabled.
Task text
    The question itself (``info["task"]``), ended with "?" when it lacks one (``question_mark``, as
    Search-R1's data processing); the observation after reset is ``Question: …``.
Action grammar
    ``<search>query</search>`` or ``<answer>text</answer>``, anywhere in the response, case-sensitive.
    Reference rule (``response_cut="reference"``): the response is cut at its first ``</search>`` (else
    at its first ``</answer>``) and the first of the two tags left is the action; the run's generation
    stops at those closing tags (``stop_strings``), so the trained tokens are the cut response as in
    Search-R1. ``"none"``: the whole response counts and its last tag is the action. A response with
    neither tag is invalid: the env answers with a hint and the turn is used up.
Observation
    ``Question: …`` after reset; ``<information>Doc 1(Title: …) …</information>`` after a search
    (Search-R1's passage format); the hint after an invalid turn. The final, search-disabled turn gets
    none: Search-R1 discards that turn's observation, so nothing follows the last response in the text it
    scores (``final_observation="reference"``); ``"appended"`` returns and appends it (an empty
    ``<information></information>`` for a search, the hint for an invalid turn).
Rewards
    0 until the episode ends; then ``reward`` (`seedbench.envs.search.rewards`): ``em`` (default, Search-R1's
    ``compute_score_em``) ``score`` (1) for an exact match, ``format_score`` (0) for a wrong answer, 0
    without one; ``subem`` the same with a substring match; ``em_format`` Search-R1's format-aware reward
    (``structure_format_score`` 0.2, ``final_format_score`` 0.1, ``retrieval_score`` 0: its format runs'
    values). ``extraction="reference"`` scores the trajectory text (the Search-R1 prompt, every cut
    response and every information block) with Search-R1's extractor, which needs two ``<answer>``
    matches and takes the last: the prompt's own "<answer> and </answer>" and "<answer> Beijing
    </answer>" are two, so an episode without an answer is scored on "Beijing", and an answer written
    inside the reasoning counts. ``extraction="response"`` scores only the answer action's payload.
    ``normalization`` picks ASCII-only punctuation stripping (reference) or Unicode. ``em_format``'s
    format check runs, as Search-R1's, on the text after the ``<|im_start|>assistant`` marker of the
    decoded sequence: the env writes ``response_marker`` (ChatML's generation prompt, the template of
    Qwen2.5 and SmolLM2; ``""`` for a model without one) between the question and the responses, and a
    sequence without the marker is invalid (``missing_marker="invalid"``; ``"ignored"`` checks the whole
    text). The trainer subtracts ``invalid_action_penalty`` (0.01) from invalid turns.
Termination vs truncation
    Terminates on an answer (``info["won"]`` = exact match). Truncates after ``max_steps`` =
    ``max_turns`` (+1 with ``final_answer_turn``) turns; the reference extractor still scores it.
Registered ids
    ``seedbench/SearchQA-v0`` (``search``): the fictional corpus, splits train / test (in-domain) / ood
    (other templates *and* entities). ``seedbench/SearchQA-Countries-v0`` (``search-countries``): real
    facts from countryinfo. ``seedbench/SearchQA-Files-v0`` (``search-files``): the user's Search-R1
    question files and wiki-18 style corpus (kwargs ``test_file``, ``train_file``, ``corpus_file``).
    Retrieval: ``retriever="bm25"`` (bm25s in process) or ``"http"`` with ``retriever_url`` (a Search-R1
    retrieval server, or ``seedbench serve-retriever``); ``topk`` 3 (Search-R1's default).
Data source
    `seedbench.envs.search.data`: generated from ``kb_seed`` (synthetic, countryinfo) or read from files;
    ``provenance()`` carries the dataset's checksum. Question ``k`` of split ``s`` is ``reset(seed=k,
    options={"split": s})`` (modulo the split's size); ``info["task_id"]`` is the question id.
"""

from __future__ import annotations

import importlib.util
import threading

from seedbench.envs.search.answers import (EXTRACTIONS, NORMALIZATIONS, RESPONSE_CUTS, check_option, command_text,
                                           cut_response, extract_solution, parse_turn)
from seedbench.envs.search.data import Dataset, load_dataset
from seedbench.envs.search.rewards import MISSING_MARKER_RULES, REWARDS, search_reward
from seedbench.envs.search.retrieval import BM25_HINT, BM25Retriever, HttpRetriever, passages_to_string
from seedbench.envs.text_env import TextEnv
from seedbench.provenance import digest

# Search-R1's prompt (scripts/data_process/nq_search.py, make_prefix), word for word: its "as many times as
# your want" included. It holds the two details that change scores: the two complete <answer> tags the
# reference extractor counts, and the "Beijing" example. `wording="seedbench"` reads "as you want".
INSTRUCTION = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you "
    "get new information. After reasoning, if you find you lack some knowledge, you can call a search engine "
    "by <search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge "
    "needed, you can directly provide the answer inside <answer> and </answer>, without detailed "
    "illustrations. For example, <answer> Beijing </answer>."
)
WORDINGS = {"reference": INSTRUCTION, "seedbench": INSTRUCTION.replace("as many times as your want",
                                                                        "as many times as you want")}
FINAL_OBSERVATIONS = ("reference", "appended")
CHATML_RESPONSE_MARKER = "<|im_start|>assistant\n"
"""What a ChatML template (Qwen2.5's, SmolLM2's) writes between the user's message and the response."""
FORMAT_INSTRUCTION = (
    "Now it's your turn. Reason inside <think> </think> first, then either search with <search> query "
    "</search> or give the final answer between the answer tags."
)
INVALID_HINT = ("My previous action is invalid. If I want to search, I should put the query between <search> and "
                "</search>. If I want to give the final answer, I should put the answer between <answer> and "
                "</answer>. Let me try again.")
"""Search-R1's hint, word for word (search_r1/llm_agent/generation.py)."""
RETRIEVERS = ("bm25", "http")
_DEFAULT_SCORING = {"reward": "em", "question_mark": True, "reward_scores": {
    "score": 1.0, "format_score": 0.0, "structure_format_score": 0.2, "final_format_score": 0.1, "retrieval_score": 0.0},
    "wording": "reference", "final_observation": "reference", "missing_marker": "invalid",
    "response_marker": CHATML_RESPONSE_MARKER}
_INDEXES: dict[tuple, BM25Retriever] = {}  # one bm25 index per process and corpus
_INDEX_LOCK = threading.Lock()


class SearchQAEnv(TextEnv):
    history_length = 4
    max_steps = 5  # max_turns 4 + the final, search-disabled turn
    invalid_action_penalty = 0.01
    splits = ("train", "test", "ood")
    eval_split = "test"
    instruction = INSTRUCTION
    format_instruction = FORMAT_INSTRUCTION
    stop_strings: tuple[str, ...] | None = ("</search>", "</answer>")
    generator_version = "1"
    seed_rule = "reset(seed=k, options={'split': s}) asks question k mod len(s) of split s"

    def __init__(self, dataset: str = "synthetic", max_turns: int = 4, final_answer_turn: bool = True,
                 topk: int = 3, retriever: str = "bm25", retriever_url: str | None = None,
                 retriever_timeout_s: float = 30.0, extraction: str = "reference", response_cut: str = "reference",
                 normalization: str = "reference", reward: str = "em", score: float = 1.0,
                 format_score: float = 0.0, structure_format_score: float = 0.2, final_format_score: float = 0.1,
                 retrieval_score: float = 0.0, question_mark: bool = True, wording: str = "reference",
                 final_observation: str = "reference", missing_marker: str = "invalid",
                 response_marker: str = CHATML_RESPONSE_MARKER, kb_seed: int = 0, kb_size: str = "default",
                 train_file: str | None = None, test_file: str | None = None, corpus_file: str | None = None,
                 render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        self.extraction = check_option("extraction", extraction, EXTRACTIONS)
        self.response_cut = check_option("response_cut", response_cut, RESPONSE_CUTS)
        self.normalization = check_option("normalization", normalization, NORMALIZATIONS)
        self.reward = check_option("reward", reward, REWARDS)
        self.reward_scores = {"score": float(score), "format_score": float(format_score),
                              "structure_format_score": float(structure_format_score),
                              "final_format_score": float(final_format_score), "retrieval_score": float(retrieval_score)}
        self.question_mark = bool(question_mark)
        self.wording = check_option("wording", wording, tuple(WORDINGS))
        self.instruction = WORDINGS[self.wording]
        self.final_observation = check_option("final_observation", final_observation, FINAL_OBSERVATIONS)
        self.missing_marker = check_option("missing_marker", missing_marker, MISSING_MARKER_RULES)
        self.response_marker = str(response_marker)
        self.retriever_kind = check_option("retriever", retriever, RETRIEVERS)
        if retriever == "http" and not retriever_url:
            raise ValueError("retriever='http' needs retriever_url, e.g. http://127.0.0.1:8000/retrieve "
                             "(start one with `seedbench serve-retriever`)")
        if retriever == "bm25" and importlib.util.find_spec("bm25s") is None:
            raise ImportError(BM25_HINT)  # at make time, not at the first search of a run
        if topk < 1 or max_turns < 0 or max_turns + int(final_answer_turn) < 1:
            raise ValueError(f"topk must be >= 1 and max_turns >= 1 (>= 0 with final_answer_turn: closed book), "
                             f"got topk={topk}, max_turns={max_turns}")
        self.max_turns, self.final_answer_turn, self.topk = int(max_turns), bool(final_answer_turn), int(topk)
        self.max_steps = self.max_turns + int(self.final_answer_turn)
        self.retriever_url, self.retriever_timeout_s = retriever_url, float(retriever_timeout_s)
        self.data_key = (dataset, int(kb_seed), kb_size, train_file, test_file, corpus_file)
        self.data: Dataset = load_dataset(*self.data_key)
        self.splits = tuple(self.data.questions)
        self.eval_split = "test"
        self._by_id = {q["id"]: (split, q) for split, qs in self.data.questions.items() for q in qs}
        if response_cut != "reference":
            self.stop_strings = ()  # nothing to stop at: the whole response is parsed
            self.parse_action = lambda text: self._parse(text, self.response_cut)
        self._retriever = None
        self.question: dict | None = None
        self._split, self._transcript, self._searched, self._retrieved = "", "", [], set()
        self._answer: str | None = None
        self._won = False

    # ------------------------------------------------------------------ text protocol

    @staticmethod
    def _parse(text: str, cut: str) -> tuple[str, bool]:
        turn = parse_turn(text, cut)
        return (command_text(*turn), True) if turn else ("", False)

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        """``("<search>q</search>" | "<answer>a</answer>", True)`` or ``("", False)``, reference cut; an env
        made with ``response_cut="none"`` replaces it on the instance."""
        return SearchQAEnv._parse(text, "reference")

    def retriever(self):
        if self._retriever is None:
            if self.retriever_kind == "http":
                self._retriever = HttpRetriever(self.retriever_url, self.retriever_timeout_s)
            else:
                with _INDEX_LOCK:
                    if self.data_key not in _INDEXES:
                        _INDEXES[self.data_key] = BM25Retriever(self.data.corpus)
                    self._retriever = _INDEXES[self.data_key]
        return self._retriever

    def _info(self) -> dict:
        q = self.question or {}
        gold = q.get("gold") or []
        return {"task": self._asked(), "admissible_actions": None, "won": self._won,
                "task_id": q.get("id", ""), "task_type": q.get("kind", ""), "split": self._split,
                "searches": len(self._searched),
                "gold_retrieved": sum(g in self._retrieved for g in gold) / len(gold) if gold else 0.0}

    # ------------------------------------------------------------------ episodes

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "task_id" in options:
            if options["task_id"] not in self._by_id:
                raise ValueError(f"unknown Search-QA task_id {options['task_id']!r}")
            self._split, self.question = self._by_id[options["task_id"]]
        else:
            self._split = self._check_split(options.get("split", self.splits[0]))
            questions = self.data.questions[self._split]
            index = int(seed) if seed is not None else int(self.np_random.integers(len(questions)))
            self.question = questions[index % len(questions)]
        self._transcript = f"{self.instruction} Question: {self._asked()}\n"
        self._prompt_chars = len(self._transcript)
        self._searched, self._retrieved, self._answer, self._won = [], set(), None, False
        return f"Question: {self._asked()}", self._info()

    def _asked(self) -> str:
        """The question as the model sees it: with ``question_mark`` (Search-R1's data processing,
        nq_search.py) stripped and ended with "?" when it does not end with one."""
        text = (self.question or {}).get("question", "")
        if self.question_mark and text:
            text = text.strip()
            text = text if text.endswith("?") else text + "?"
        return text

    def step(self, action: str):
        self._response = action  # the raw text, for the reference extractor's transcript
        return super().step(action)

    def _apply_action(self, command: str, valid: bool):
        final_turn = self._steps >= self.max_steps - 1  # the template counts this step after us
        search_enabled = not (self.final_answer_turn and self._steps >= self.max_turns)
        self._transcript += cut_response(self._response, self.response_cut)
        turn = parse_turn(command, "reference") if valid else None
        if turn is None:
            observation = INVALID_HINT
        elif turn[0] == "answer":
            self._answer = turn[1]
            return "", self._score(), True, True
        elif search_enabled:
            hits = self.retriever().search([turn[1]], self.topk)[0]
            self._searched.append(turn[1])
            self._retrieved.update(hit["document"]["id"] for hit in hits)
            observation = f"<information>{passages_to_string(hits).strip()}</information>"
        else:
            observation = "<information></information>"
        if not search_enabled and self.final_observation == "reference":
            observation = ""  # Search-R1 runs the last turn's step for its flags and drops what it returns
        else:
            self._transcript += f"\n\n{observation}\n\n" if turn else f"\n{observation}\n"
        return observation, self._score() if final_turn else 0.0, False, valid

    def _score(self) -> float:
        """The ``reward`` of the extracted answer (sets ``won``: the answer matches, exactly or, for
        ``subem``, as a substring)."""
        answer = extract_solution(self._transcript) if self.extraction == "reference" else self._answer
        sequence = self.response_marker + self._transcript[self._prompt_chars:]  # what follows the question
        value, self._won = search_reward(self.reward, answer, self.question["golden_answers"], sequence,
                                         normalization=self.normalization, missing_marker=self.missing_marker,
                                         **self.reward_scores)
        return value

    # ------------------------------------------------------------------ expert, provenance

    def expert_plan(self) -> list[str]:
        """Search each gold passage's title not searched yet (as many as the remaining search turns
        allow), then answer with the first gold answer."""
        if self.question is None:
            raise RuntimeError("expert_plan() called before reset()")
        search_turns = max(0, (self.max_turns if self.final_answer_turn else self.max_steps - 1) - self._steps)
        todo = [t for t in self.question["gold_titles"] if t not in self._searched][:search_turns]
        return [command_text("search", t) for t in todo] + [command_text("answer", self.question["golden_answers"][0])]

    def provenance(self) -> dict[str, str]:
        options = {k: getattr(self, k) for k in ("extraction", "response_cut", "normalization", "max_turns",
                                                  "final_answer_turn", "topk", "retriever_kind")}
        # the scoring options enter only when changed, so the default protocol keeps its checksum
        scoring = {"reward": self.reward, "reward_scores": self.reward_scores, "question_mark": self.question_mark,
                   **{k: getattr(self, k) for k in ("wording", "final_observation", "missing_marker", "response_marker")}}
        options.update({k: v for k, v in scoring.items() if v != _DEFAULT_SCORING[k]})
        return {"data_source": self.data.data_source, "generator_version": self.generator_version,
                "manifest_checksum": digest({"data": self.data.checksum, "options": options})}
