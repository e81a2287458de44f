"""WebShop env: generated catalogue, official-format loader, pages and their text, the expert, the pool."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("bm25s", reason="WebShop needs the [webshop] extra")
pytest.importorskip("thefuzz", reason="WebShop needs the [webshop] extra")

from seedbench.envs.webshop import catalogue as cat  # noqa: E402
from seedbench.envs.webshop.env import WebShopEnv, parse_command  # noqa: E402
from seedbench.envs.webshop.goals import split_indices  # noqa: E402
from seedbench.envs.webshop.products import load_catalogue, parse_pricing  # noqa: E402


def act(payload: str) -> str:
    return f"<think>ok</think><action>{payload}</action>"


def play_expert(env: WebShopEnv, **reset) -> dict:
    _, info = env.reset(**reset)
    while True:
        _, _, terminated, truncated, info = env.step(act(env.expert_plan()[0]))
        if terminated or truncated:
            return info


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A generated 60-product catalogue (306 synthetic goals)."""
    return cat.generate(tmp_path_factory.mktemp("ws60"), num_products=60, seed=0)


# ----------------------------------------------------------------------------------------------------
# Hand-made data in the official format


OFFICIAL_PRODUCTS = [
    {"asin": "B0AAAAAAA1", "name": "Lumo Shampoo for Dry Hair", "category": "beauty", "query": "Shampoo ",
     "product_category": "Beauty & Personal Care › Hair Care › Shampoos", "pricing": "$10.99 - $15.00",
     "customization_options": {"Size": [{"value": "Small", "image": None}, {"value": "Large/XL", "image": None}],
                               "Scent": None},
     "small_description": ["Sulfate free", "For dry hair"], "full_description": "A gentle shampoo.",
     "images": ["https://img/1.jpg"]},
    {"asin": "nan", "name": "broken", "category": "beauty", "query": "x", "product_category": "a › b",
     "pricing": None, "customization_options": None, "small_description": "", "full_description": "", "images": [""]},
    {"asin": "B0AAAAAAA1", "name": "Duplicate", "category": "beauty", "query": "x", "product_category": "a › b",
     "pricing": None, "customization_options": None, "small_description": "", "full_description": "", "images": [""]},
    {"asin": "B0BBBBBBB2", "name": "Zed Conditioner", "category": "beauty", "query": "conditioner",
     "product_category": "Beauty & Personal Care › Hair Care › Conditioners", "pricing": None,
     "customization_options": None, "small_description": "Softens hair", "full_description": "Rich and creamy.",
     "images": ["https://img/2.jpg"]},
]
OFFICIAL_ATTRIBUTES = {"B0AAAAAAA1": {"attributes": ["sulfate free", "dry hair"], "instruction": "i need a sulfate free shampoo",
                                      "instruction_attributes": ["sulfate free"]}}
OFFICIAL_HUMAN = {
    "B0AAAAAAA1": [
        {"instruction": "i want a shampoo for dry hair in large size.", "instruction_attributes": ["dry hair"],
         "instruction_options": ["large | xl"]},
        {"instruction": "a sulfate free shampoo, small one", "instruction_attributes": ["sulfate free"],
         "instruction_options": ["small"]},
        {"instruction": "skipped: no attributes", "instruction_attributes": [], "instruction_options": []},
        {"instruction": "shampoo for dry hair please", "instruction_attributes": ["dry hair"], "instruction_options": []},
    ],
    "B0BBBBBBB2": [{"instruction": "a conditioner that softens hair", "instruction_attributes": ["softens hair"],
                    "instruction_options": []}],
}


@pytest.fixture()
def official(tmp_path):
    (tmp_path / "items_shuffle_4.json").write_text(json.dumps(OFFICIAL_PRODUCTS))
    (tmp_path / "items_ins_v2_4.json").write_text(json.dumps(OFFICIAL_ATTRIBUTES))
    (tmp_path / "items_human_ins.json").write_text(json.dumps(OFFICIAL_HUMAN))
    return tmp_path


def test_official_loader_normalises_like_the_original(official):
    catalogue = load_catalogue(official)
    assert catalogue.source == "official" and catalogue.has_human_goals
    assert [p["asin"] for p in catalogue.products] == ["B0AAAAAAA1", "B0BBBBBBB2"]  # nan and duplicate skipped
    shampoo, conditioner = catalogue.products
    assert shampoo["options"] == {"size": ["small", "large | xl"]}  # lower case, "/" → " | ", None option dropped
    assert shampoo["pricing"] == [10.99, 15.0] and shampoo["Price"] == "$10.99 to $15.0"
    assert shampoo["query"] == "shampoo" and shampoo["Rating"] == "N.A." and shampoo["Reviews"] == []
    assert conditioner["Attributes"] == ["DUMMY_ATTR"] and conditioner["BulletPoints"] == ["Softens hair"]
    assert conditioner["Price"] == "$100.0" and conditioner["instruction_text"] is None
    assert parse_pricing("$7.5") == ([7.5], "$7.5")


def test_official_pages_render_as_the_original_text_env(official):
    env = WebShopEnv(data=official, goals="human", split_bounds=(1, 2))
    assert len(env.shop.goals) == 4  # the instruction without attributes is skipped
    goal_index = next(g["index"] for g in env.shop.goals if g["instruction_text"].startswith("i want a shampoo"))
    obs, info = env.reset(options={"task_id": f"goal-{goal_index}"})
    instruction = info["task"]
    assert re.fullmatch(r"i want a shampoo for dry hair in large size, and price lower than \d0\.00 dollars", instruction)
    assert obs == f"WebShop [SEP] Instruction: [SEP] {instruction} [SEP] Search"
    assert info["admissible_actions"] == ["search[<your query>]"]

    obs, *_, info = env.step(act("search[Shampoo]"))
    head = f"Instruction: [SEP] {instruction} [SEP] Back to Search"
    assert obs == f"{head} [SEP] Page 1 (Total results: 1) [SEP] Next > [SEP] B0AAAAAAA1 [SEP] Lumo Shampoo for Dry Hair [SEP] $10.99 to $15.0"
    assert info["admissible_actions"] == ["click[back to search]", "click[next >]", "click[b0aaaaaaa1]"]

    obs, *_, info = env.step(act("click[B0AAAAAAA1]"))  # the argument is lower-cased, as in the original
    assert obs == (f"{head} [SEP] < Prev [SEP] size [SEP] small [SEP] large | xl [SEP] Lumo Shampoo for Dry Hair "
                   "[SEP] Price: $10.99 to $15.0 [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now")
    assert info["admissible_actions"] == ["click[back to search]", "click[< prev]", "click[description]", "click[features]",
                                          "click[reviews]", "click[buy now]", "click[small]", "click[large | xl]"]
    obs, *_ = env.step(act("click[features]"))
    assert obs == f"{head} [SEP] < Prev [SEP] Sulfate free [SEP] For dry hair"
    obs, *_ = env.step(act("click[reviews]"))  # not on a sub page: invalid, nothing changes
    assert obs == f"{head} [SEP] < Prev [SEP] Sulfate free [SEP] For dry hair"
    obs, *_ = env.step(act("click[< prev]"))
    assert obs.startswith(f"{head} [SEP] < Prev [SEP] size")
    env.step(act("click[large | xl]"))
    obs, reward, terminated, truncated, info = env.step(act("click[buy now]"))
    assert terminated and not truncated and info["won"] and info["score"] == 1.0 and reward == 10.0
    assert obs.startswith("Thank you for shopping with us! [SEP] Your code:")
    assert '{"size": "large | xl"}' in obs and "Your score (min 0.0, max 1.0) [SEP] 1.0" in obs


def test_human_goals_and_data_from_the_environment_variable(official, monkeypatch):
    monkeypatch.setenv("SEEDBENCH_WEBSHOP_DATA", str(official))
    env = WebShopEnv(goals="human", split_bounds=(1, 2))
    assert env.provenance()["data_source"] == "official"
    scores = [play_expert(env, options={"task_id": f"goal-{i}"})["score"] for i in range(len(env.shop.goals))]
    assert scores == [1.0] * 4
    with pytest.raises(FileNotFoundError, match="items_human_ins.json"):
        monkeypatch.setenv("SEEDBENCH_WEBSHOP_DATA", str(official / "items_shuffle_4.json"))
        (official / "items_human_ins.json").unlink()
        WebShopEnv(goals="human", split_bounds=(1, 2), price_seed=1)


# ----------------------------------------------------------------------------------------------------
# Generated catalogue


def test_generation_is_deterministic_resumable_and_checksummed(small, tmp_path):
    manifest = json.loads((small / cat.MANIFEST).read_text())
    assert manifest["complete"] and manifest["num_products"] == 60
    items = json.loads((small / "items_shuffle_60.json").read_text())
    annotations = json.loads((small / "items_ins_v2_60.json").read_text())
    product = items[0]
    assert set(product) >= {"asin", "name", "category", "query", "product_category", "pricing",
                            "customization_options", "small_description", "full_description", "images"}
    assert product["product_category"].count(" › ") == 2
    for p in items:  # instruction attributes are a subset of the product's attributes
        assert set(annotations[p["asin"]]["instruction_attributes"]) <= set(annotations[p["asin"]]["attributes"])
    # an interrupted run: the last chunk and the merged files are missing, another chunk is corrupt
    other = tmp_path / "again"
    cat.generate(other, num_products=250, seed=0)
    reference = (other / "items_shuffle_250.json").read_bytes()
    (other / cat.MANIFEST).unlink()
    (other / "items_shuffle_250.json").unlink()
    (other / "parts" / "chunk_0002.json").unlink()
    (other / "parts" / "chunk_0001.json").write_text("{}")
    cat.generate(other, num_products=250, seed=0)
    assert (other / "items_shuffle_250.json").read_bytes() == reference
    assert json.loads((other / cat.MANIFEST).read_text())["complete"]
    assert cat.generate(tmp_path / "seed1", num_products=250, seed=1) and \
        (tmp_path / "seed1" / "items_shuffle_250.json").read_bytes() != reference


def test_every_generated_goal_is_solved_by_the_expert(small):
    env = WebShopEnv(data=small)
    assert {k: len(v) for k, v in env.shop.splits.items()} == {"test": 76, "eval": 77, "train": 153}
    for index in range(len(env.shop.goals)):
        info = play_expert(env, options={"task_id": f"goal-{index}"})
        assert info["won"] and info["score"] == 1.0, index


def test_expert_scores_100_on_the_default_test_split():
    """The default 1,000-product catalogue (built once, ~1 s): all 500 test goals at score 100."""
    env = WebShopEnv()
    assert len(env.shop.splits["test"]) == 500 and len(env.shop.splits["eval"]) == 1000
    scores = [play_expert(env, seed=s, options={"split": "test"})["score"] for s in range(500)]
    assert min(scores) == 1.0


def test_invalid_actions_are_counted_no_ops(small):
    env = WebShopEnv(data=small)
    obs, _ = env.reset(seed=3, options={"split": "test"})
    for text in (act("click[search]"), act("click[buy now]"), act("jump[now]"), act("search[]"), "search[no tags]"):
        new_obs, reward, terminated, truncated, info = env.step(text)
        assert (new_obs, reward, terminated, info["action_valid"]) == (obs, 0.0, False, False), text
    assert info["step"] == 5
    obs, *_, info = env.step(act("search[shampoo]"))
    assert info["action_valid"] and info["page"] == "results"
    for _ in range(9):
        *_, truncated, info = env.step(act("click[next >]"))
    assert truncated and not info["won"] and info["step"] == 15


def test_paging_and_search_from_any_page(small):
    env = WebShopEnv(data=small)
    env.reset(seed=0, options={"split": "train"})
    obs, *_ = env.step(act("search[shoppers asked]"))  # every generated first bullet says it
    assert "Page 1 (Total results: 50)" in obs and "< Prev" not in obs
    first = re.findall(r"B0[A-Z0-9]{8}", obs)
    assert len(first) == 10
    obs, *_ = env.step(act("click[next >]"))
    assert "Page 2" in obs and "< Prev [SEP] Next >" in obs and set(re.findall(r"B0[A-Z0-9]{8}", obs)).isdisjoint(first)
    obs, *_ = env.step(act("click[< prev]"))
    assert re.findall(r"B0[A-Z0-9]{8}", obs) == first
    env.step(act(f"click[{first[0].lower()}]"))
    obs, *_, info = env.step(act("search[white]"))  # the original searches from any page
    assert info["action_valid"] and "Page 1" in obs
    obs, *_, info = env.step(act("click[back to search]"))
    assert obs.startswith("WebShop [SEP] Instruction:") and info["page"] == "search"


def test_search_is_shared_and_returns_at_most_50_matches(small):
    a, b = WebShopEnv(data=small), WebShopEnv(data=small, reward="score")
    assert a.shop.index is b.shop.index
    assert 0 < len(a.shop.index.search("black large")) <= 50
    assert a.shop.index.search("zzzz qqqq") == []


def test_parse_command_and_projection():
    assert parse_command(act("click[Buy Now]")) == ("click[buy now]", True)
    assert parse_command("<action>click[x]</action>") == ("", False)  # the reference projection wants <think>
    assert parse_command("<action>click[x]</action>", "seedbench") == ("click[x]", True)
    assert parse_command(act("buy[it]"))[1] is False


def test_score_reward_variant_and_provenance(small):
    env = WebShopEnv(data=small, reward="score")
    _, info = env.reset(seed=1, options={"split": "test"})
    env.step(act(env.expert_plan()[0]))
    asin = env.goal["asin"].lower()
    env.step(act(f"click[{asin}]"))
    _, reward, terminated, _, info = env.step(act("click[buy now]"))  # no options chosen
    goal = env.goal
    expected = (len(goal["attributes"]) + 0 + 1) / (len(goal["attributes"]) + len(goal["goal_options"]) + 1)
    assert terminated and reward == pytest.approx(expected) == info["score"]
    assert info["won"] == (not goal["goal_options"])
    prov = env.provenance()
    assert prov["data_source"] == "generated" and len(prov["manifest_checksum"]) == 16
    assert WebShopEnv(data=small, price_seed=5).provenance()["manifest_checksum"] != prov["manifest_checksum"]


def test_split_bounds_follow_the_baseline():
    assert split_indices(4303) == {"test": range(0, 500), "eval": range(500, 1500), "train": range(1500, 4303)}
    assert split_indices(100) == {"test": range(0, 25), "eval": range(25, 50), "train": range(50, 100)}


def test_runs_in_the_worker_pool(small):
    from seedbench.envs.pool import EnvPool

    local = WebShopEnv(data=small)
    with EnvPool(("webshop", {"data": str(small)}), num_envs=2, num_workers=2) as pool:
        resets = pool.reset_many([(0, 4, {"split": "test"}), (1, 5, {"split": "test"})])
        assert resets[0] == local.reset(seed=4, options={"split": "test"})
        steps = pool.step_many([(0, act("search[black]")), (1, act("click[nowhere]"))])
    assert steps[0] == local.step(act("search[black]"))
    assert steps[1][4]["action_valid"] is False


def test_protocol_card_matches_the_default_catalogue():
    import yaml

    from seedbench.provenance import task_list_hash

    card = yaml.safe_load((Path(__file__).resolve().parent.parent / "configs" / "webshop_protocol.yaml").read_text())
    env = WebShopEnv()
    assert card["data"]["data_checksum"] == env.provenance()["manifest_checksum"]
    assert card["data"]["product_files_sha256"] == env.shop.catalogue.files
    assert card["splits"]["train"] == [1500, len(env.shop.goals)]
    ids = [f"goal-{k}" for k in range(card["tasks"]["num_tasks"])]
    assert ids == [env.reset(seed=k, options={"split": "test"})[1]["task_id"] for k in range(128)]
    assert card["tasks"]["task_list_hash"] == task_list_hash(ids, card["data"]["data_checksum"])


def test_data_command_generates_the_catalogue(tmp_path, capsys):
    from seedbench.envs.data_command import main

    assert main(["webshop", "--products", "30", "--seed", "2", "--out", str(tmp_path)]) == 0
    manifest = json.loads((tmp_path / cat.MANIFEST).read_text())
    assert manifest["num_products"] == 30 and manifest["seed"] == 2
    assert f"checksum {manifest['checksum']}" in capsys.readouterr().out


def test_prompt_lists_the_admissible_actions(small):
    from seedbench.rollout.prompting import build_user_content

    env = WebShopEnv(data=small)
    env.reset(seed=0, options={"split": "test"})
    obs, *_, info = env.step(act(env.expert_plan()[0]))
    content = build_user_content(task=info["task"], observation=obs, step=1, history=[], history_length=2,
                                 admissible_actions=info["admissible_actions"], instruction=env.instruction)
    assert "'click[back to search]', 'click[next >]'" in content and "WebShop e-commerce" in content
