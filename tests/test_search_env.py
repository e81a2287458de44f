"""Search-QA env: the protocol turn by turn, its options, the generated data, the oracle and the
no-search baseline, retrieval hit@k, the real-data loaders, and the prompt/stop hooks (small corpus)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bm25s", reason="Search-QA needs the [search] extra: pip install 'seedbench[search]'")

from seedbench.agents.seed.agent import current_observation  # noqa: E402
from seedbench.engines.base import env_stop  # noqa: E402
from seedbench.envs.checks import main as check_env_main  # noqa: E402
from seedbench.envs.search.data import load_dataset, main as data_main  # noqa: E402
from seedbench.envs.search.env import FORMAT_INSTRUCTION, INVALID_HINT, SearchQAEnv  # noqa: E402
from seedbench.envs.search.kb import KBSize, generate_kb  # noqa: E402
from seedbench.envs.search.loaders import per_dataset_scores, read_corpus, read_questions  # noqa: E402
from seedbench.envs.search.metrics import play, retrieval_metrics  # noqa: E402
from seedbench.envs.search.retrieval import BM25Retriever, passages_to_string  # noqa: E402
from seedbench.rollout.prompting import FORMAT_INSTRUCTION as ACTION_FORMAT, build_user_content  # noqa: E402

SMALL = {"kb_size": "small"}


def small_env(**kwargs) -> SearchQAEnv:
    return SearchQAEnv(**{**SMALL, **kwargs})


def first_of_kind(env, kind, split="test"):
    for seed, q in enumerate(env.data.questions[split]):
        if q["kind"] == kind:
            return seed, q
    raise AssertionError(kind)


def test_search_turn_returns_search_r1_information_block():
    env = small_env()
    seed, q = first_of_kind(env, "single-hop")
    obs, info = env.reset(seed=seed, options={"split": "test"})
    assert obs == f"Question: {q['question']}" and info["task"] == q["question"] and info["admissible_actions"] is None
    obs, reward, terminated, truncated, info = env.step(f"<think>look up</think><search>{q['gold_titles'][0]}</search>")
    assert obs.startswith("<information>Doc 1(Title: ") and obs.endswith("</information>")
    assert obs.count("Doc ") == 3 and f'(Title: "{q["gold_titles"][0]}")' in obs  # topk 3, wiki-18 titles
    assert (reward, terminated, truncated, info["action_valid"], info["gold_retrieved"]) == (0.0, False, False, True, 1.0)
    obs, reward, terminated, _, info = env.step(f"<answer>{q['golden_answers'][0].upper()}!</answer>")
    assert (reward, terminated, info["won"]) == (1.0, True, True)


def test_invalid_turn_gets_the_hint_and_counts():
    env = small_env()
    env.reset(seed=0, options={"split": "test"})
    obs, reward, terminated, truncated, info = env.step("I will answer Paris")
    assert obs == INVALID_HINT and not info["action_valid"] and (reward, terminated, truncated) == (0.0, False, False)


def test_final_turn_disables_search_and_the_reference_extractor_scores_beijing():
    """4 turns + 1 search-disabled turn; a model that never answers is scored on the prompt's Beijing."""
    env = small_env()
    env.reset(seed=0, options={"split": "test"})
    env.question = {**env.question, "golden_answers": ["Beijing"]}  # make the quirk visible as a reward
    for _ in range(4):
        obs, reward, terminated, truncated, _ = env.step("<search>anything</search>")
        assert obs.startswith("<information>Doc 1") and not (terminated or truncated)
    obs, reward, terminated, truncated, info = env.step("<search>anything</search>")
    assert obs == "" and truncated and not terminated  # Search-R1 drops the final turn's observation
    assert reward == 1.0 and info["won"]  # extracted "Beijing" from the prompt
    env = small_env(extraction="response")  # ours: no answer, no reward
    env.reset(seed=0, options={"split": "test"})
    env.question = {**env.question, "golden_answers": ["Beijing"]}
    results = [env.step("<search>anything</search>") for _ in range(5)]
    assert results[-1][3] and results[-1][1] == 0.0


def test_without_the_final_turn_the_episode_is_max_turns_long():
    env = small_env(final_answer_turn=False, max_turns=2)
    assert env.max_steps == 2
    env.reset(seed=0, options={"split": "test"})
    assert not env.step("<search>x</search>")[3]
    obs, _, _, truncated, _ = env.step("<search>x</search>")
    assert truncated and obs.startswith("<information>Doc 1")  # the last turn still searches


def test_an_answer_inside_the_reasoning_is_the_action_under_the_reference_cut():
    """Search-R1 takes the first tag of the cut response, even one inside <think>; without the cut the
    last tag (the search) is the action."""
    env = small_env()
    env.reset(seed=0, options={"split": "test"})
    gold = env.question["golden_answers"][0]
    text = f"<think>maybe <answer>{gold}</answer>, let me check</think> <search>x</search>"
    _, reward, terminated, _, _ = env.step(text)
    assert (reward, terminated) == (1.0, True)
    env = small_env(response_cut="none")
    env.reset(seed=0, options={"split": "test"})
    obs, reward, terminated, _, _ = env.step(text)
    assert (reward, terminated) == (0.0, False) and obs.startswith("<information>")


def test_response_cut_option_changes_the_action():
    text = "<search>q</search><information>made up</information><answer>x</answer>"
    assert SearchQAEnv.parse_action(text) == ("<search>q</search>", True)
    env = small_env(response_cut="none")
    assert env.parse_action(text) == ("<answer>x</answer>", True)
    assert env_stop(small_env()) == {"stop": ["</search>", "</answer>"]} and env_stop(env) == {"stop": []}


def test_normalisation_option_reaches_the_reward():
    for normalization, expected in (("reference", 0.0), ("unicode", 1.0)):
        env = small_env(normalization=normalization)
        env.reset(seed=0, options={"split": "test"})
        assert env.step(f"<answer>“{env.question['golden_answers'][0]}”</answer>")[1] == expected


def test_prompt_uses_the_env_format_instruction_hook():
    env = small_env()
    content = build_user_content(task="q?", observation="Question: q?", step=0, history=[], history_length=4,
                                 instruction=env.instruction, format_instruction=env.format_instruction)
    assert content.endswith(FORMAT_INSTRUCTION) and ACTION_FORMAT not in content
    assert current_observation(content) == "Question: q?"  # SEED finds the observation's end by FORMAT_MARKER
    default = build_user_content(task="t", observation="o", step=0, history=[], history_length=1)
    assert default.endswith(ACTION_FORMAT)


def test_kb_is_seeded_and_domains_are_disjoint():
    size = KBSize(countries=3, cities=6, organisations=6, people=20)
    a, b = generate_kb(1, size), generate_kb(1, size)
    assert [(e.id, e.name, e.facts) for e in a.entities.values()] == [(e.id, e.name, e.facts) for e in b.entities.values()]
    assert [e.name for e in generate_kb(2, size).entities.values()] != [e.name for e in a.entities.values()]
    assert len({e.name for e in a.entities.values()}) == len(a.entities)  # names are unique keys
    for e in a.entities.values():  # relations stay inside a domain
        assert all(a.entities[v].domain == e.domain for k, v in e.facts.items() if isinstance(v, str) and "-" in v)


def test_splits_differ_by_template_and_entities():
    data = load_dataset("synthetic", 0, "small")
    train_templates = {q["template"] for q in data.questions["train"]}
    assert train_templates == {q["template"] for q in data.questions["test"]}
    assert not train_templates & {q["template"] for q in data.questions["ood"]}
    in_gold = {g for s in ("train", "test") for q in data.questions[s] for g in q["gold"]}
    assert all(g.startswith("in-") for g in in_gold)
    assert all(g.startswith("out-") for q in data.questions["ood"] for g in q["gold"])
    assert not {q["id"] for q in data.questions["train"]} & {q["id"] for q in data.questions["test"]}


def test_oracle_is_perfect_and_no_search_guessing_is_not():
    env = small_env()
    for split in ("test", "ood"):
        result = play(env, split, 10**6, "oracle")
        assert result["em"] == 1.0 and result["episodes"] == len(env.data.questions[split])
        guess = play(env, split, 10**6, "no-search")
        assert guess["per_kind"]["single-hop"] < 0.2 and guess["em"] < 0.4
        assert 0.2 < guess["per_kind"]["comparison"] < 0.8  # one of two names


def test_retrieval_metrics_on_a_hand_made_corpus():
    corpus = [{"id": "a", "contents": '"Alden Voss"\nAlden Voss was born in Karsholm.'},
              {"id": "b", "contents": '"Karsholm"\nKarsholm is a city in Veltria.'},
              {"id": "c", "contents": '"Mira Tal"\nMira Tal is a painter.'}]
    retriever = BM25Retriever(corpus)
    assert passages_to_string(retriever.search(["Mira Tal"], 1)[0]) == 'Doc 1(Title: "Mira Tal") Mira Tal is a painter.\n'
    questions = [{"question": "Where was Alden Voss born?", "gold": ["a"], "gold_titles": ["Alden Voss"]},
                 {"question": "In which country is the city where Alden Voss was born?", "gold": ["a", "b"],
                  "gold_titles": ["Alden Voss", "Karsholm"]}]
    metrics = retrieval_metrics(retriever, questions, ks=(1, 2))
    assert metrics["question_hit@1"] == 1.0 and metrics["title_recall@1"] == 1.0
    assert metrics["question_recall@1"] == pytest.approx((1 + 0.5) / 2)  # the bridge's 2nd hop is not top-1


def test_check_env_passes_on_the_small_corpus(capsys):
    assert check_env_main(["search", "--kwarg", "kb_size=small", "--seeds", "4"]) == 0
    assert "passed" in capsys.readouterr().out


def test_countryinfo_set():
    pytest.importorskip("countryinfo")
    env = SearchQAEnv(dataset="countryinfo")
    assert env.splits == ("train", "test") and len(env.data.corpus) > 200
    france = next(q for q in env.data.questions["train"] + env.data.questions["test"] if q["question"] == "What is the capital of France?")
    assert france["golden_answers"] == ["Paris"]
    assert play(env, "test", 40, "oracle")["em"] == 1.0


def test_data_command_writes_corpus_questions_and_checksums(tmp_path, capsys):
    assert data_main(["--kb-size", "small", "--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    data = load_dataset("synthetic", 0, "small")
    assert manifest["checksum"] == data.checksum == SearchQAEnv(**SMALL).data.checksum
    assert manifest["files"]["corpus.jsonl"]["rows"] == len(data.corpus)
    assert read_corpus(tmp_path / "corpus.jsonl") == data.corpus
    assert [q["golden_answers"] for q in read_questions(tmp_path / "test.jsonl")] == \
           [q["golden_answers"] for q in data.questions["test"]]
    assert small_env().provenance()["manifest_checksum"] != small_env(kb_seed=1).provenance()["manifest_checksum"]


def _search_r1_rows():
    prompt = "Answer the given question. ... For example, <answer> Beijing </answer>. Question: who wrote hamlet?\n"
    return [
        {"data_source": "nq", "id": None, "question": None, "golden_answers": None, "prompt": [{"role": "user", "content": prompt}], "ability": "fact-reasoning",
         "reward_model": {"style": "rule", "ground_truth": {"target": ["William Shakespeare", "Shakespeare"]}},
         "extra_info": {"split": "test", "index": 0}},
        {"data_source": "hotpotqa", "id": "h1", "question": "Which is older, A or B?", "golden_answers": ["A"],
         "prompt": [{"role": "user", "content": "x"}], "reward_model": {"style": "rule", "ground_truth": {"target": ["A"]}},
         "extra_info": {"split": "test", "index": 1}},
    ]


def test_loaders_read_search_r1_parquet_flashrag_jsonl_and_dataset_fields(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(_search_r1_rows()), tmp_path / "test.parquet")
    questions = read_questions(tmp_path / "test.parquet")
    assert [(q["kind"], q["question"], q["golden_answers"]) for q in questions] == [
        ("nq", "who wrote hamlet?", ["William Shakespeare", "Shakespeare"]), ("hotpotqa", "Which is older, A or B?", ["A"])]
    rows = [{"id": "1", "question": "q1", "golden_answers": ["x"]},  # FlashRAG
            {"question": "q2", "answer": {"value": "Y", "aliases": ["y1"]}},  # TriviaQA
            {"question": "q3", "possible_answers": '["z", "zz"]'},  # PopQA
            {"question": "q4", "answer": "w", "answer_aliases": ["w2"]},  # Musique
            {"Question": "q5", "Answer": "v"}]  # Bamboogle
    (tmp_path / "bamboogle_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = read_questions(tmp_path / "bamboogle_test.jsonl")
    assert [q["golden_answers"] for q in loaded] == [["x"], ["Y", "y1"], ["z", "zz"], ["w", "w2"], ["v"]]
    assert {q["kind"] for q in loaded} == {"bamboogle"}
    (tmp_path / "wiki.jsonl").write_text(json.dumps({"id": "0", "contents": '"Hamlet"\nHamlet is a tragedy by William Shakespeare.'})
                                         + "\n" + json.dumps({"id": "1", "title": "A", "text": "A is old."}) + "\n")
    env = SearchQAEnv(dataset="files", test_file=str(tmp_path / "test.parquet"), corpus_file=str(tmp_path / "wiki.jsonl"))
    assert env.splits == ("test",) and env.provenance()["data_source"] == "official"
    env.reset(seed=0, options={"split": "test"})
    obs = env.step("<search>hamlet</search>")[0]
    assert obs.startswith('<information>Doc 1(Title: "Hamlet") Hamlet is a tragedy')
    assert env.step("<answer>shakespeare</answer>")[1] == 1.0


def test_per_dataset_scores_average_the_datasets_not_the_questions():
    table = per_dataset_scores([("nq", 1), ("nq", 0), ("nq", 0), ("nq", 1), ("bamboogle", 1)])
    assert table == {"bamboogle": 1.0, "nq": 0.5, "average": 0.75}


# ----------------------------------------------------------------------------------------------------
# Search-R1's details, each the default with ours a named option (docs/method.md §9)


def test_the_instruction_is_search_r1s_word_for_word_and_ours_is_an_option():
    from seedbench.envs.search.env import INSTRUCTION

    assert "You can search as many times as your want. If you find" in INSTRUCTION
    env = small_env()
    assert env.instruction == INSTRUCTION
    env.reset(seed=0, options={"split": "test"})
    assert env._transcript.startswith(INSTRUCTION + " Question: ")
    ours = small_env(wording="seedbench")
    assert ours.instruction == INSTRUCTION.replace("as your want", "as you want")
    ours.reset(seed=0, options={"split": "test"})
    assert ours._transcript.startswith(ours.instruction + " Question: ")  # the reference extractor's text too
    assert ours.provenance()["manifest_checksum"] != env.provenance()["manifest_checksum"]


@pytest.mark.parametrize("final_observation, action, shown, appended", [
    ("reference", "<search>anything</search>", "", ""),
    ("reference", "no tags at all", "", ""),
    ("appended", "<search>anything</search>", "<information></information>", "\n\n<information></information>\n\n"),
    ("appended", "no tags at all", INVALID_HINT, f"\n{INVALID_HINT}\n"),
])
def test_the_final_turns_observation_is_dropped_as_search_r1_drops_it(final_observation, action, shown, appended):
    env = small_env(max_turns=1, final_observation=final_observation)
    env.reset(seed=0, options={"split": "test"})
    env.step("<search>anything</search>")
    before = env._transcript
    obs, _, terminated, truncated, _ = env.step(action)
    assert (obs, truncated, terminated) == (shown, True, False)
    assert env._transcript == before + action + appended


def test_the_invalid_hint_of_the_final_turn_no_longer_feeds_the_reference_extractor():
    """The hint holds "<answer> and </answer>": appended, the extractor scores "and"; dropped (Search-R1),
    it scores the prompt's "Beijing"."""
    for final_observation, won in (("reference", True), ("appended", False)):
        env = small_env(max_turns=0, final_observation=final_observation)
        env.reset(seed=0, options={"split": "test"})
        env.question = {**env.question, "golden_answers": ["Beijing"]}
        assert env.step("no tags at all")[4]["won"] is won


def test_a_sequence_without_the_assistant_marker_is_invalid_unless_the_option_ignores_it():
    answer = "<think>it is Paris</think>\n<answer>Paris</answer>"
    scores = {}
    for marker in ("<|im_start|>assistant\n", ""):
        for rule in ("invalid", "ignored"):
            env = small_env(reward="em_format", response_marker=marker, missing_marker=rule)
            env.reset(seed=0, options={"split": "test"})
            env.question = {**env.question, "golden_answers": ["Lyon"]}  # wrong answer: the format credit shows
            scores[(marker, rule)] = env.step(answer)[1]
    assert scores == {("<|im_start|>assistant\n", "invalid"): 0.2, ("<|im_start|>assistant\n", "ignored"): 0.2,
                      ("", "invalid"): 0.1, ("", "ignored"): 0.2}
