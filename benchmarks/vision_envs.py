"""Vision envs: speed, frame size and Qwen2.5-VL image tokens of every registered env with frames.

    python benchmarks/vision_envs.py [--tasks 50] [--steps 200] [--out benchmarks/results/vision_envs.json]

For each registered env whose instances declare an ``image_shape`` (`seedbench.envs.text_env`), made
with its catalogue kwargs:

- reset and step time (ms; steps are random admissible actions, resetting when an episode ends) — frames
  included, since a vision env draws one per call;
- frame render time (ms): the env's ``frame()`` when it has one, else ``render()`` under
  ``render_mode="rgb_array"``;
- frame size (H×W), its PNG size in a run directory (KB, mean over the frames seen), and the number of
  image tokens Qwen2.5-VL's default processor gives it: transformers' ``Qwen2VLImageProcessor`` built
  from its defaults (its PIL variant where the default one needs torchvision), else the processor's
  documented ``smart_resize`` rule (sides rounded to multiples of 28, pixels kept within
  [56·56, 28·28·1280]; tokens = (H'/28)·(W'/28));
- success of the scripted expert (``expert_plan``) and of a seeded random agent on ``--tasks`` tasks of
  the eval split, for contrast.

Envs that cannot be made here (a missing extra or data) are listed with the reason. Everything runs
offline: the processor is built from its class defaults, never from the hub.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import random
import time
from pathlib import Path

QWEN_FACTOR = 28  # patch 14 × merge 2
QWEN_MIN_PIXELS = 56 * 56
QWEN_MAX_PIXELS = 28 * 28 * 1280


def smart_resize(height: int, width: int, factor: int = QWEN_FACTOR, min_pixels: int = QWEN_MIN_PIXELS,
                 max_pixels: int = QWEN_MAX_PIXELS) -> tuple[int, int]:
    """Qwen2-VL / Qwen2.5-VL's resize rule: the nearest multiples of `factor`, scaled into the pixel range."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def rule_tokens(height: int, width: int) -> int:
    """Image tokens by the `smart_resize` rule: one per 28×28 block of the resized frame."""
    h_bar, w_bar = smart_resize(height, width)
    return (h_bar // QWEN_FACTOR) * (w_bar // QWEN_FACTOR)


def qwen_processor():
    """``(processor, name)`` of Qwen2.5-VL's default image processor built offline, or ``(None, reason)``."""
    try:
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil as cls
    except ImportError:
        try:
            from transformers import Qwen2VLImageProcessor as cls
        except ImportError as err:
            return None, f"no Qwen2VLImageProcessor ({err})"
    try:
        return cls(), f"transformers {cls.__name__}() defaults"
    except Exception as err:  # noqa: BLE001 - any failure falls back to the documented rule
        return None, f"{cls.__name__}() failed: {err}"


def processor_tokens(processor, frame) -> int:
    grid = processor(images=[frame], return_tensors="np")["image_grid_thw"][0]
    merge = getattr(processor, "merge_size", 2)
    return int(grid[0] * grid[1] * grid[2]) // (merge * merge)


def png_kb(frame) -> float:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="PNG")
    return len(buffer.getvalue()) / 1024


def timed(fn, repeats: int) -> float:
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats * 1000


def act(command: str) -> str:
    return f"<think>t</think><action>{command}</action>"


def success(env, tasks: int, choose) -> float:
    wins = 0
    for seed in range(tasks):
        _, info = env.reset(seed=seed, options={"split": env.eval_split})
        for _ in range(env.max_steps):
            command = choose(env, info)
            if command is None:
                break
            _, _, terminated, truncated, info = env.step(act(command))
            if terminated or truncated:
                break
        wins += bool(info["won"])
    return wins / tasks


def expert_choice(env, info):
    plan = env.expert_plan()
    return plan[0] if plan else None


def measure(alias: str, tasks: int, steps: int, processor) -> dict:
    from seedbench.registry import make_env

    env = make_env(alias)
    split, rng = env.splits[0], random.Random(0)
    seeds = iter(range(10**6))
    reset_ms = timed(lambda: env.reset(seed=next(seeds), options={"split": split}), 20)
    _, info = env.reset(seed=0, options={"split": split})
    frames, step_s = [info["image"]], 0.0
    for _ in range(steps):
        command = act(rng.choice(info["admissible_actions"] or ["look"]))
        t0 = time.perf_counter()
        _, _, terminated, truncated, info = env.step(command)
        step_s += time.perf_counter() - t0
        frames.append(info["image"])
        if terminated or truncated:
            _, info = env.reset(seed=rng.randrange(10**6), options={"split": split})
    if hasattr(env, "frame"):
        render_ms, how = timed(env.frame, 200), "frame()"
    else:
        drawn = make_env(alias, render_mode="rgb_array")
        drawn.reset(seed=0, options={"split": split})
        render_ms, how = timed(drawn.render, 200), "render()"
    height, width = env.image_shape
    row = {
        "env": alias, "image_shape": [height, width], "reset_ms": reset_ms, "step_ms": step_s / steps * 1000,
        "render_ms": render_ms, "render_by": how, "png_kb": sum(png_kb(f) for f in frames[:50]) / len(frames[:50]),
        "qwen_tokens_rule": rule_tokens(height, width), "qwen_resized": list(smart_resize(height, width)),
        "qwen_tokens_processor": processor_tokens(processor, frames[0]) if processor is not None else None,
        "tasks": tasks,
    }
    row["expert_success"] = success(env, tasks, expert_choice) if hasattr(env, "expert_plan") else None
    row["random_success"] = success(env, tasks, lambda e, i: rng.choice(i["admissible_actions"] or ["look"]))
    env.close()
    return row


def vision_aliases() -> tuple[list[str], dict[str, str]]:
    """Registered envs whose instances have an image_shape, and the ones that could not be made (why)."""
    from seedbench.registry import env_entries, make_env

    aliases, skipped = [], {}
    for alias in sorted(env_entries()):
        try:
            env = make_env(alias)
        except Exception as err:  # noqa: BLE001 - listed, not fatal: a missing extra or data set
            skipped[alias] = " ".join(f"{type(err).__name__}: {err}".split())[:160]
            continue
        if env.image_shape is not None:
            aliases.append(alias)
        env.close()
    return aliases, skipped


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=50, help="eval-split tasks for the expert and random success")
    parser.add_argument("--steps", type=int, default=200, help="random steps timed per env")
    parser.add_argument("--out", default="benchmarks/results/vision_envs.json")
    args = parser.parse_args(argv)

    processor, how = qwen_processor()
    aliases, skipped = vision_aliases()
    rows = [measure(alias, args.tasks, args.steps, processor) for alias in aliases]
    print(f"image tokens: {how}; rule: smart_resize(factor 28, min 56*56, max 28*28*1280)")
    print("| env | frame | reset ms | step ms | render ms | PNG KB | Qwen2.5-VL tokens (resized) | expert | random |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tokens = r["qwen_tokens_processor"] if r["qwen_tokens_processor"] is not None else r["qwen_tokens_rule"]
        expert = "—" if r["expert_success"] is None else f"{r['expert_success']:.0%}"
        print(f"| {r['env']} | {r['image_shape'][0]}×{r['image_shape'][1]} | {r['reset_ms']:.2f} | {r['step_ms']:.3f} | "
              f"{r['render_ms']:.3f} | {r['png_kb']:.1f} | {tokens} ({r['qwen_resized'][0]}×{r['qwen_resized'][1]}) | "
              f"{expert} | {r['random_success']:.0%} |")
    for alias, reason in skipped.items():
        print(f"skipped {alias}: {reason}")
    mismatched = [r["env"] for r in rows if r["qwen_tokens_processor"] not in (None, r["qwen_tokens_rule"])]
    if mismatched:
        print(f"warning: processor and rule disagree on {', '.join(mismatched)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"token_counter": how, "rows": rows, "skipped": skipped}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
