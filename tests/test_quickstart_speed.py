"""benchmarks/quickstart_speed.py runs each variant as its own `seedbench run`, with the variant's switches
and wait policy, and prices them against each other."""

import json

from tests.benchmark_loader import load_benchmark


def test_variants_run_with_their_switches_and_ratios_come_from_the_iterations(tmp_path, capsys):
    bench = load_benchmark("quickstart_speed")
    out = tmp_path / "qs.json"
    argv = ["--agent", "grpo", "--env", "choice", "--model", "tiny", "--config", "", "--variants", "plain", "optimised",
            "--set", "rollout.tasks_per_batch=1", "rollout.group_size=2", "rollout.max_new_tokens=3",
            "eval.num_tasks=1", "--out", str(out)]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    plain, optimised = result["variants"]["plain"], result["variants"]["optimised"]
    assert plain["sets"] == bench.PLAIN and optimised["sets"] == [] and plain["wait_policy"] == "passive"
    assert len(plain["iterations"]) == 1 and plain["iterations"][0]["samples"] == 2
    expected = plain["iterations"][0]["time/iteration_s"] / optimised["iterations"][0]["time/iteration_s"]
    assert abs(result["ratios"]["plain_over_optimised"] - expected) < 1e-12
    assert "plain_over_optimised: x" in capsys.readouterr().out


def test_a_failing_run_names_the_variant_and_shows_its_error(tmp_path):
    bench = load_benchmark("quickstart_speed")
    try:
        bench.main(["--env", "no-such-env", "--model", "tiny", "--config", "", "--variants", "optimised",
                    "--out", str(tmp_path / "x.json")])
    except SystemExit as err:
        assert "optimised: seedbench run exited" in str(err) and "no-such-env" in str(err)
    else:
        raise AssertionError("an unknown env must stop the benchmark")
