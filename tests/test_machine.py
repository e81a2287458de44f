"""The machine facts: bf16 flags read from /proc/cpuinfo decide `model.dtype=auto` on a CPU, and a run's
summary.json says which CPU, threads and wait policy its figures came from."""

import torch

from seedbench.machine import cpu_facts, has_native_bf16, read_cpuinfo, run_machine
from seedbench.models import policy as policy_module

AMX = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile
"""
AVX2_ONLY = """processor\t: 0
model name\t: AMD EPYC 7B12
flags\t\t: fpu sse2 avx avx2 fma
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_native_bf16_needs_amx_or_avx512_bf16(tmp_path):
    assert has_native_bf16(write(tmp_path, "amx", AMX))
    assert not has_native_bf16(write(tmp_path, "avx2", AVX2_ONLY))
    assert not has_native_bf16(str(tmp_path / "missing"))  # not Linux: fp32, the safe side
    avx512_bf16_only = AVX2_ONLY.replace("fma", "fma avx512f avx512_bf16")
    assert has_native_bf16(write(tmp_path, "avx512", avx512_bf16_only))


def test_read_cpuinfo_takes_the_first_cpus_name_and_flags(tmp_path):
    name, flags = read_cpuinfo(write(tmp_path, "amx", AMX))
    assert name == "Intel(R) Xeon(R) Platinum 8480+"
    assert flags == {"fpu", "sse2", "avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}
    assert read_cpuinfo(str(tmp_path / "missing")) == ("", set())


def test_auto_dtype_is_fp32_on_a_cpu_without_native_bf16_and_bf16_with_it(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setattr(policy_module, "has_native_bf16", lambda: False)
    assert policy_module.resolve_dtype("auto", cpu) == torch.float32
    monkeypatch.setattr(policy_module, "has_native_bf16", lambda: True)
    assert policy_module.resolve_dtype("auto", cpu) == torch.bfloat16
    assert policy_module.resolve_dtype("fp32", cpu) == torch.float32  # an explicit dtype is never overridden


def test_cpu_facts_and_run_machine_name_flags_threads_and_the_compute_path(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    facts = cpu_facts(write(tmp_path, "avx2", AVX2_ONLY))
    assert facts["model_name"] == "AMD EPYC 7B12"
    assert (facts["avx2"], facts["avx512_bf16"], facts["amx_bf16"]) == (True, False, False)
    assert facts["torch_threads"] == torch.get_num_threads() and facts["omp_wait_policy"] == "PASSIVE"

    class Bf16Policy:
        device, compute_dtype, bf16_compute = torch.device("cpu"), torch.bfloat16, "param_copy"

    machine = run_machine(Bf16Policy(), write(tmp_path, "amx", AMX))
    assert (machine["device"], machine["compute_dtype"], machine["bf16_compute"]) == ("cpu", "bfloat16", "param_copy")
    assert machine["amx_bf16"] is True
