"""What the machine a run or benchmark ran on offers: the CPU, its bf16 flags, the threads and the OpenMP wait
policy in force.

Speed figures on CPUs mean little without these: the same update is ~2× faster in bf16 on a CPU with AMX or
AVX-512-BF16 and several times slower on an AVX2-only one, and the wait policy (`seedbench.threads`) changes a
pass by 10-30 %. `model.dtype=auto` decides on `has_native_bf16`; summary.json records `run_machine`, and the
benchmarks print and store `cpu_facts`.
"""

from __future__ import annotations

import os
from typing import Any

CPU_FLAGS = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512f", "avx2")
"""The /proc/cpuinfo flags that decide how bf16 runs: AMX tiles, AVX-512 with BF16, AVX2 only."""
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")
CPUINFO = "/proc/cpuinfo"


def read_cpuinfo(path: str = CPUINFO) -> tuple[str, set[str]]:
    """The first CPU's model name and flags in `path`; ("", empty set) where it cannot be read (not Linux)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as cpuinfo:
            text = cpuinfo.read()
    except OSError:
        return "", set()
    name, flags = "", set()
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip()
        if key == "flags" and not flags:
            flags = set(line.split(":", 1)[1].split())
        elif key == "model name" and not name:
            name = line.split(":", 1)[1].strip()
    return name, flags


def has_native_bf16(path: str = CPUINFO) -> bool:
    """Whether the CPU computes bf16 in hardware (AMX or AVX-512-BF16). Elsewhere bf16 is emulated, measured
    about 5× slower than fp32 (docs/performance.md), so `model.dtype=auto` picks fp32 there."""
    return any(flag in read_cpuinfo(path)[1] for flag in NATIVE_BF16_FLAGS)


def cpu_facts(path: str = CPUINFO) -> dict[str, Any]:
    """The CPU's model name and core count, its bf16-relevant flags (`CPU_FLAGS`), torch's CPU capability and
    thread count, and the OpenMP wait policy this process runs under."""
    import torch

    name, flags = read_cpuinfo(path)
    return {"model_name": name, "cpus": os.cpu_count(), **{flag: flag in flags for flag in CPU_FLAGS},
            "torch_capability": torch.backends.cpu.get_cpu_capability(), "torch_threads": torch.get_num_threads(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(runtime default)")}


def run_machine(policy: Any, path: str = CPUINFO) -> dict[str, Any]:
    """summary.json's ``machine``: `cpu_facts` plus how `policy` (`seedbench.models.policy.Policy`) computes:
    its device, the dtype of its training passes and ``model.bf16_compute``."""
    compute = getattr(policy, "compute_dtype", None)
    return {**cpu_facts(path), "device": str(getattr(policy, "device", "cpu")),
            "compute_dtype": str(compute).replace("torch.", "") if compute is not None else "float32",
            "bf16_compute": getattr(policy, "bf16_compute", None)}
