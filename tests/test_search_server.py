"""`seedbench serve-retriever` on loopback: Search-R1's request/response shapes, the env's HTTP retriever
against it, and a server killed mid-episode: the episode is dropped and counted, the rollout goes on."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

pytest.importorskip("bm25s", reason="Search-QA needs the [search] extra: pip install 'seedbench[search]'")

from seedbench.engines.base import Generation, SamplingParams  # noqa: E402
from seedbench.envs.batch import LocalEnvs  # noqa: E402
from seedbench.envs.search.env import SearchQAEnv  # noqa: E402
from seedbench.envs.search.retrieval import HttpRetriever, RetrieverUnavailable  # noqa: E402
from seedbench.rollout.lockstep import run_episodes  # noqa: E402
from seedbench.rollout.types import TaskRef  # noqa: E402


def start_server():
    process = subprocess.Popen([sys.executable, "-m", "seedbench.cli", "serve-retriever", "--port", "0",
                                "--kb-size", "small"], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()  # "seedbench retriever: POST http://127.0.0.1:<port>/retrieve (...)"
    url = line.split()[3]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/retrieve"), line
    return process, url


@pytest.fixture(scope="module")
def shared_server():
    process, url = start_server()
    yield url
    process.kill()
    process.wait(timeout=10)


@pytest.fixture
def server():
    process, url = start_server()
    yield process, url
    process.kill()
    process.wait(timeout=10)


def post(url, payload):
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_request_and_response_shapes_match_search_r1(shared_server):
    url = shared_server
    with_scores = post(url, {"queries": ["a", "b"], "topk": 2, "return_scores": True})["result"]
    assert len(with_scores) == 2 and all(len(hits) == 2 for hits in with_scores)
    assert set(with_scores[0][0]) == {"document", "score"} and set(with_scores[0][0]["document"]) == {"id", "contents"}
    bare = post(url, {"queries": ["a"]})["result"]  # no topk: the server's default (3), no scores
    assert len(bare[0]) == 3 and set(bare[0][0]) == {"id", "contents"}
    with pytest.raises(urllib.error.HTTPError) as err:
        post(url, {"query": "wrong field"})
    assert err.value.code == 422


def test_http_env_sees_what_the_in_process_env_sees(shared_server):
    url = shared_server
    local, remote = SearchQAEnv(kb_size="small"), SearchQAEnv(kb_size="small", retriever="http", retriever_url=url)
    for env in (local, remote):
        env.reset(seed=2, options={"split": "test"})
    query = f"<search>{local.question['gold_titles'][0]}</search>"
    assert remote.step(query)[0] == local.step(query)[0]


def test_dead_server_raises_retriever_unavailable():
    with pytest.raises(RetrieverUnavailable, match="retrieval server"):
        HttpRetriever("http://127.0.0.1:9/retrieve", timeout_s=2).search(["q"], 3)


class KillingEngine:
    """Searches every turn and kills the retrieval server before the second turn's step."""

    name = "fake"

    def __init__(self, process):
        self.process, self.calls = process, 0

    def generate(self, prompts, params):
        self.calls += 1
        if self.calls == 2:
            self.process.kill()
            self.process.wait(timeout=10)
        return [Generation(token_ids=[5], logprobs=[-1.0], text="<think>t</think><search>anything</search>")
                for _ in prompts]

    def sync_weights(self):
        pass


def test_server_killed_mid_episode_drops_and_counts_the_episodes(server, tiny_tokenizer):
    process, url = server
    make = lambda: SearchQAEnv(kb_size="small", retriever="http", retriever_url=url, retriever_timeout_s=5)  # noqa: E731
    envs = LocalEnvs(make, 2)
    trajectories, _ = run_episodes(envs, make(), KillingEngine(process), tiny_tokenizer, [TaskRef("test", 0)],
                                   group_size=2, params=SamplingParams(), history_length=4, max_steps=5)
    assert [t.dropped for t in trajectories] == [True, True] and envs.dropped_episodes == 2
    assert all(len(t.steps) == 1 and t.steps[0].observation.startswith("Question:") for t in trajectories)
    # the slots are usable again after a reset (an in-process retriever now)
    envs.envs[0].retriever_kind, envs.envs[0]._retriever = "bm25", None
    envs.reset(0, 0, {"split": "test"})
    assert envs.step_many([(0, "<search>x</search>")])[0][0].startswith("<information>Doc 1")
