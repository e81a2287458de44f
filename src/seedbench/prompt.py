"""A prompt as engines and the trainer take it: token ids, plus the images a vision prompt's placeholders stand for.

The pipeline is token-in/token-out (`seedbench.engines.base`): a text prompt is a plain ``list[int]`` of token
ids. A vision prompt is a `Prompt`: its ids (each image placeholder already expanded to one ``<|image_pad|>``
per merged vision patch), the frames, and the image processor's ``pixel_values`` / ``image_grid_thw`` for them,
computed once when the prompt is rendered (`seedbench.models.vision.VisionRenderer`) and reused by every
forward, so old, reference, teacher and current log-probs all see exactly the images the sampler saw.

A `Prompt` is a read-only ``Sequence[int]`` of its ids, so everything that only needs ids (batching, length
sorting, prefix packing) takes either kind; what needs the images asks for them by type
(`seedbench.models.vision.prompt_images`), never by probing attributes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True, eq=False)
class Prompt(Sequence):
    """Token ids and the images they show (``images`` empty: a text prompt in this form).

    ``pixel_values`` [patches, C·T·P·P] and ``image_grid_thw`` [images, 3] are the image processor's outputs for
    ``images`` in order. Equality compares the ids only (as a list of ids does); `image_key` tells two prompts
    with equal ids but different frames apart."""

    ids: tuple[int, ...]
    images: tuple = ()
    pixel_values: Any = None
    image_grid_thw: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", tuple(self.ids))
        object.__setattr__(self, "images", tuple(self.images))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        """An id, or for a slice the ids as a list (a slice carries no images)."""
        if isinstance(index, slice):
            return list(self.ids[index])
        return self.ids[index]

    def __iter__(self):
        return iter(self.ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prompt):
            return self.ids == other.ids
        if isinstance(other, (list, tuple)):
            return list(self.ids) == list(other)
        return NotImplemented

    __hash__ = None  # a prompt is a value of mutable parts (tensors); key on `tuple(prompt)` and `image_key`

    def image_key(self) -> str:
        """Digest of the frames (order included): two prompts with equal ids but different images differ."""
        return frames_digest(self.images)


PromptLike = Union[list[int], Prompt]
"""What a prompt builder returns and an engine accepts: plain ids for a text prompt, a `Prompt` for one with images."""


def frame_id(frame: Any) -> str:
    """The run-directory id of a frame: sha1 of the array bytes, first 16 hex (the image convention)."""
    return hashlib.sha1(frame.tobytes()).hexdigest()[:16]


def frames_digest(frames: Sequence[Any]) -> str:
    """One key for an ordered set of frames (their ids joined)."""
    return "+".join(frame_id(frame) for frame in frames)
