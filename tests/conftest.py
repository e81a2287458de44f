import os

import pytest

os.environ.setdefault("SEEDBENCH_PROGRESS", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from seedbench.tiny_model import tiny_tokenizer

    return tiny_tokenizer()
