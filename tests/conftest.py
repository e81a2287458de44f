import os

import pytest

os.environ.setdefault("SEEDBENCH_PROGRESS", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def one_torch_thread():
    """One intra-op thread for the test: on two shared, oversubscribed cores the model-heavy tests
    (SEED, stage 1, VLMs) run many times faster with one. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from seedbench.models.tiny import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture(scope="session", autouse=True)
def alfworld_data(request, tmp_path_factory):
    """Point the ALFWorld env at a small generated test pool when no data is configured, so
    registry-generated tests can make `alfworld` on a fresh machine."""
    import importlib.util

    if os.environ.get("SEEDBENCH_ALFWORLD_DATA") or importlib.util.find_spec("alfworld") is None:
        return
    from seedbench.envs.alfworld.data import build_test_pool

    cache = getattr(request.config, "cache", None)
    root = cache.mkdir("alfworld") if cache is not None else tmp_path_factory.mktemp("alfworld")
    os.environ["SEEDBENCH_ALFWORLD_DATA"] = str(build_test_pool(root, workers=2))


BOXOBAN_TEST_LEVELS = """; 0
##########
##########
##  @ ####
##  $ ####
##    ####
##  . ####
##########
##########
##########
##########

; 1
##########
#.      ##
#  $    ##
#   @   ##
#       ##
# $    .##
#       ##
#       ##
#       ##
##########
"""
"""Two hand-written 10x10 levels in the Boxoban file format (tests/test_sokoban_vision.py parses more)."""


@pytest.fixture(scope="session", autouse=True)
def boxoban_levels(tmp_path_factory):
    """Point `sokoban-vision-boxoban` at a small hand-written level file when no Boxoban data is
    configured, so registry-generated tests can make it (seedbench never downloads the real levels)."""
    if os.environ.get("SEEDBENCH_BOXOBAN_LEVELS"):
        return
    path = tmp_path_factory.mktemp("boxoban") / "000.txt"
    path.write_text(BOXOBAN_TEST_LEVELS)
    os.environ["SEEDBENCH_BOXOBAN_LEVELS"] = str(path)
