"""ImageChoice: the smallest env whose answer is visible only in the image.

Description
    One step. The frame is red or blue; red means the answer ``left``, blue means ``right`` (the rule is
    in the instruction). Both colours are equally likely across tasks (task ``k``'s colour comes from
    ``k``), and the text never tells which one is shown, so a policy beats chance (50 % among valid
    answers) only by reading the pixels. It exists for fast learning tests of vision policies on CPU with
    tiny random VLMs; ``blank=True`` shows a uniform grey frame instead (the control: nothing to read,
    success stays at chance). A colour, not a position (e.g. "which half is lit"), is the cue because a
    tiny random model reads a global colour within a few updates but a layout only much later.
Task text
    "the image is red or blue: say left for red, right for blue"
Action grammar
    ``<action>left</action>`` / ``<action>right</action>``; lenient like ``choice``: without an action tag,
    a text that names exactly one of ``left`` and ``right`` counts; naming both is invalid.
Observation
    Text: a fixed line. Image: ``info["image"]``, uint8 (56, 56, 3), on reset and step (the image
    convention of docs/vlm.md); after the step, the same frame.
Rewards
    1.0 for the side the colour names, 0.0 otherwise (invalid text included).
Termination vs truncation
    Terminates after one step.
Splits
    ``train`` and ``test`` hold the same two tasks (``splits_disjoint = False``).
Registered ids
    ``seedbench/ImageChoice-v0`` (alias ``image-choice``), ``seedbench/ImageChoiceBlank-v0``
    (``image-choice-blank``, ``blank=True``).
"""

from __future__ import annotations

import numpy as np

from seedbench.envs.choice import TwoChoiceEnv

SIZE = 56


COLOURS = {"left": (220, 30, 30), "right": (30, 30, 220)}


def frame(side: str, blank: bool = False) -> np.ndarray:
    """The (56, 56, 3) uint8 frame of `side` (red = left, blue = right), or uniform grey when `blank`."""
    colour = (128, 128, 128) if blank else COLOURS[side]
    image = np.broadcast_to(np.array(colour, dtype=np.uint8), (SIZE, SIZE, 3)).copy()
    # A black border, the same on every frame (so the blank control still carries no information), keeps the
    # frame from being a single colour, which the contract's "not blank" check rejects.
    image[:2], image[-2:], image[:, :2], image[:, -2:] = 0, 0, 0, 0
    return image


class ImageChoiceEnv(TwoChoiceEnv):
    image_shape = (SIZE, SIZE)
    instruction = "Look at the image: answer left if it is red, right if it is blue."

    def __init__(self, blank: bool = False, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        self.blank = bool(blank)

    def _info(self) -> dict:
        info = super()._info()
        info.update(task="the image is red or blue: say left for red, right for blue", task_type="image-choice",
                    image=frame(self.rewarded, self.blank))
        return info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.rewarded = ("left", "right")[(seed or 0) % 2]
        observation, info = super().reset(seed=seed, options=options)
        return "What colour is the image?", self._info()

    def render(self):
        return f"colour: {'grey (blank)' if self.blank else {'left': 'red', 'right': 'blue'}[self.rewarded]}"
