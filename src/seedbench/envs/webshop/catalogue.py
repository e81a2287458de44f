"""Generate the offline WebShop catalogue in the original's file formats (`seedbench data webshop`).

Writes two files in exactly the schema of the public WebShop data, so the one loader
(`seedbench.envs.webshop.products`) reads generated and official data alike:

- ``items_shuffle_<n>.json``: a list of products, each with ``asin``, ``name``, ``category``, ``query``,
  ``product_category`` (``A › B › C``), ``pricing`` (``"$12.99"`` or ``"$10.00 - $15.00"``),
  ``customization_options`` (``{"Color": [{"value": "Navy Blue", "image": null}, ...]}``),
  ``small_description`` (bullet points), ``full_description``, ``images``, ``average_rating``;
- ``items_ins_v2_<n>.json``: ``{asin: {"attributes": [...], "instruction": "...",
  "instruction_attributes": [...]}}``, the synthetic-goal annotations (instruction attributes are a
  subset of the product's attributes, as in the original).

Words come from `seedbench.envs.webshop.vocabulary`. Products are made in chunks of `CHUNK` with a
random stream seeded by ``(seed, chunk)``; each chunk is written atomically with a sha256 sidecar, so an
interrupted generation resumes from the last complete chunk and gives byte-identical files. The merged
files' sha256 and the catalogue checksum go into ``manifest.json``, which the env records as provenance.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
from pathlib import Path

from seedbench.envs.webshop.vocabulary import (BRAND_SYLLABLES, CATEGORIES, DESCRIPTION_SENTENCES,
                                               INSTRUCTION_OPENERS, OPTION_VALUES)
from seedbench.paths import cache_dir

GENERATOR_VERSION = "1"
DEFAULT_PRODUCTS = 1000  # the papers' subset size (items_shuffle_1000.json)
DEFAULT_SEED = 0
CHUNK = 100
MANIFEST = "manifest.json"
OPTION_DISPLAY = {"color": "Color", "size": "Size", "style": "Style", "flavor name": "Flavor Name", "scent": "Scent"}
RESERVED_VALUES = frozenset({"search", "back to search", "< prev", "next >", "description", "features", "reviews",
                             "buy now", "attributes"})


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_dir(num_products: int = DEFAULT_PRODUCTS, seed: int = DEFAULT_SEED) -> Path:
    return cache_dir("webshop", f"generated-n{num_products}-s{seed}-v{GENERATOR_VERSION}")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _dump(obj) -> bytes:
    return json.dumps(obj, indent=None, ensure_ascii=False, sort_keys=False).encode()


# ----------------------------------------------------------------------------------------------------
# One product


def _brand(rng: random.Random) -> str:
    return "".join(rng.choice(BRAND_SYLLABLES) for _ in range(rng.choice((2, 3)))).capitalize()


def _asin(rng: random.Random, used: set[str]) -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
    while True:
        asin = "B0" + "".join(rng.choice(alphabet) for _ in range(8))
        if asin not in used:
            used.add(asin)
            return asin


def _options(rng: random.Random, option_types: tuple[str, ...]) -> dict[str, list[str]]:
    """Each option type the product type allows is offered with probability 0.7, with 2-4 values; values
    never repeat across a product's option types (the page addresses a radio button by its value)."""
    options: dict[str, list[str]] = {}
    taken: set[str] = set()
    for option in option_types:
        if rng.random() >= 0.7:
            continue
        pool = [v for v in OPTION_VALUES[option] if v not in taken and v not in RESERVED_VALUES]
        values = rng.sample(pool, rng.randint(2, min(4, len(pool))))
        taken.update(values)
        options[option] = values
    return options


def _instruction(rng: random.Random, type_name: str, attributes: list[str], used: set[str]) -> tuple[str, list[str]]:
    """An instruction naming 1-3 of the product's attributes and its type; unique across the catalogue
    (two goals with the same text would be the same task in two splits)."""
    for _ in range(50):
        chosen = rng.sample(attributes, rng.randint(1, min(3, len(attributes))))
        opener = rng.choice(INSTRUCTION_OPENERS)
        article = "" if type_name.endswith("s") else " a"
        text = f"{opener}{article} {' and '.join(chosen)} {type_name}"
        if text not in used:
            used.add(text)
            return text, chosen
    raise RuntimeError(f"could not find a new instruction for {type_name!r}; enlarge the vocabulary")


def make_product(rng: random.Random, used_asins: set[str], used_instructions: set[str]) -> tuple[dict, dict]:
    """One product record (items_shuffle schema) and its annotation (items_ins_v2 schema)."""
    category = rng.choice(CATEGORIES)
    ptype = rng.choice(category.types)
    asin = _asin(rng, used_asins)
    attributes = rng.sample(category.attributes, rng.randint(3, 5))
    material = rng.choice(category.materials)
    brand = _brand(rng)
    in_title = attributes[: rng.randint(1, 2)]
    title = f"{brand} {material.title()} {ptype.name.title()} - {', '.join(a.title() for a in in_title)}"
    low = round(rng.uniform(2.0, 150.0), 2)
    pricing = f"${low:.2f}" if rng.random() < 0.75 else f"${low:.2f} - ${low * rng.uniform(1.1, 1.6):.2f}"
    options = _options(rng, ptype.options)
    bullets = [f"{a.upper()}: this {ptype.name} is {a}, as the {category.name} shoppers asked for."
               for a in attributes[1:]]
    bullets.append(f"WHAT YOU GET: one {brand} {ptype.name} and our friendly customer service.")
    description = " ".join([f"The {brand} {ptype.name} is {material}."] + rng.sample(DESCRIPTION_SENTENCES, 2))
    instruction, instruction_attributes = _instruction(rng, ptype.name, attributes, used_instructions)
    product = {
        "asin": asin,
        "name": title,
        "category": category.name,
        "query": ptype.query,
        "product_category": " › ".join((category.root, *ptype.path)),
        "pricing": pricing,
        "customization_options": {OPTION_DISPLAY[k]: [{"value": v.title(), "image": None} for v in values]
                                  for k, values in options.items()} or None,
        "small_description": bullets,
        "full_description": description,
        "images": [f"https://images.invalid/{asin}.jpg"],
        "average_rating": round(rng.uniform(3.0, 5.0), 1),
        "brand": brand,
    }
    annotation = {"attributes": attributes, "instruction": instruction,
                  "instruction_attributes": instruction_attributes}
    return product, annotation


# ----------------------------------------------------------------------------------------------------
# Chunks, resumable


def _chunk_path(root: Path, index: int) -> Path:
    return root / "parts" / f"chunk_{index:04d}.json"


def _read_chunk(root: Path, index: int) -> dict | None:
    """A chunk written by an earlier (possibly interrupted) run, if it is complete and intact."""
    path = _chunk_path(root, index)
    sidecar = path.with_suffix(".sha256")
    if not path.exists() or not sidecar.exists():
        return None
    data = path.read_bytes()
    if sha256_bytes(data) != sidecar.read_text().strip():
        return None
    return json.loads(data)


def _make_chunk(seed: int, index: int, size: int, used_asins: set[str], used_instructions: set[str]) -> dict:
    rng = random.Random(f"webshop-catalogue:{seed}:{index}")
    products, annotations = [], {}
    for _ in range(size):
        product, annotation = make_product(rng, used_asins, used_instructions)
        products.append(product)
        annotations[product["asin"]] = annotation
    return {"products": products, "annotations": annotations}


def generate(out_dir: str | Path | None = None, num_products: int = DEFAULT_PRODUCTS, seed: int = DEFAULT_SEED,
             verbose: bool = False) -> Path:
    """Generate (or finish generating) the catalogue in `out_dir`; returns the directory. Idempotent: a
    complete catalogue is left as it is."""
    if num_products < 1:
        raise ValueError(f"num_products must be >= 1, got {num_products}")
    root = Path(out_dir) if out_dir is not None else default_dir(num_products, seed)
    manifest_path = root / MANIFEST
    if manifest_path.exists() and json.loads(manifest_path.read_text()).get("complete"):
        return root
    (root / "parts").mkdir(parents=True, exist_ok=True)
    used_asins: set[str] = set()
    used_instructions: set[str] = set()
    products: list[dict] = []
    annotations: dict[str, dict] = {}
    for index in range((num_products + CHUNK - 1) // CHUNK):
        size = min(CHUNK, num_products - index * CHUNK)
        chunk = _read_chunk(root, index)
        if chunk is None or len(chunk["products"]) != size:
            chunk = _make_chunk(seed, index, size, set(used_asins), set(used_instructions))
            data = _dump(chunk)
            _write_atomic(_chunk_path(root, index), data)
            _write_atomic(_chunk_path(root, index).with_suffix(".sha256"), sha256_bytes(data).encode())
            if verbose:
                print(f"webshop: chunk {index} ({size} products) written", flush=True)
        for product in chunk["products"]:
            used_asins.add(product["asin"])
            used_instructions.add(chunk["annotations"][product["asin"]]["instruction"])
        products.extend(chunk["products"])
        annotations.update(chunk["annotations"])
    files = {f"items_shuffle_{num_products}.json": _dump(products),
             f"items_ins_v2_{num_products}.json": _dump(annotations)}
    for name, data in files.items():
        _write_atomic(root / name, data)
    digests = {name: sha256_bytes(data) for name, data in files.items()}
    manifest = {"format": "webshop-items-v1", "generator": "seedbench.envs.webshop.catalogue",
                "generator_version": GENERATOR_VERSION, "seed": seed, "num_products": num_products,
                "files": digests, "checksum": sha256_bytes(_dump(digests))[:16], "complete": True}
    _write_atomic(manifest_path, json.dumps(manifest, indent=2).encode())
    return root


def main(argv: list[str] | None = None) -> int:
    """`seedbench data webshop [--products N] [--seed S] [--out DIR]`."""
    parser = argparse.ArgumentParser(prog="seedbench data webshop",
                                     description="Generate the offline WebShop catalogue (original file schema).")
    parser.add_argument("--products", type=int, default=DEFAULT_PRODUCTS, help="number of products (default 1000)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="generator seed (default 0)")
    parser.add_argument("--out", default=None, help="output directory (default: the seedbench cache)")
    args = parser.parse_args(argv)
    root = generate(args.out, args.products, args.seed, verbose=True)
    manifest = json.loads((root / MANIFEST).read_text())
    print(f"webshop: {manifest['num_products']} products in {root} (checksum {manifest['checksum']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
