"""Load WebShop product files (official or generated) the way the original `load_products` does.

Reads ``items_shuffle*.json`` (products), ``items_ins_v2*.json`` (attributes and synthetic instructions)
and, when present, ``items_human_ins.json`` (human instructions), and normalises each product as the
original engine does: ``Title`` = name, ``Description`` = full_description, ``BulletPoints`` =
small_description as a list, ``pricing`` parsed into one or two floats and ``Price`` rendered from it
(``$100.0`` when missing), option names and values lower-cased with ``/`` → `` | ``, ``Attributes`` from
the attribute file (``["DUMMY_ATTR"]`` when the product has none), ``Reviews`` empty and ``Rating``
``N.A.`` (the original never loads its review file), ``query`` lower-cased and stripped. Products with
asin ``nan`` or longer than 10 characters, and repeated asins, are skipped.

Where the data comes from (`resolve_data_dir`): the ``data`` argument (a directory, or the products file
itself), else ``$SEEDBENCH_WEBSHOP_DATA``, else the generated catalogue in the seedbench cache (made on
first use: ~1 s for 1,000 products).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from seedbench.envs.webshop.catalogue import MANIFEST, generate, sha256_bytes

ENV_VAR = "SEEDBENCH_WEBSHOP_DATA"
HUMAN_FILE = "items_human_ins.json"


class WebShopDataError(FileNotFoundError):
    """The WebShop data is missing or not in the original format; the message says what to do."""


@dataclass
class Catalogue:
    """The loaded products, in file order, and where they came from."""

    products: list[dict[str, Any]]
    source: str  # "generated" or "official"
    root: Path
    checksum: str  # 16 hex digits over the files read
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    has_human_goals: bool = False

    @property
    def by_asin(self) -> dict[str, dict[str, Any]]:
        return {p["asin"]: p for p in self.products}


def _pick(root: Path, pattern: str, num_products: int | None) -> Path | None:
    """The file for `pattern` (``items_shuffle`` ...): ``<pattern>_<n>.json`` for the catalogue size if
    present, then ``<pattern>.json``, then the first other match in name order."""
    candidates = sorted(root.glob(f"{pattern}*.json"))
    if not candidates:
        return None
    preferred = [root / f"{pattern}_{num_products}.json"] if num_products else []
    preferred += [root / f"{pattern}_1000.json", root / f"{pattern}.json"]
    for path in preferred:
        if path.exists():
            return path
    return candidates[0]


def resolve_data_dir(data: str | os.PathLike | None, num_products: int, seed: int) -> tuple[Path, str]:
    """(directory, source) of the data to load; generates the default catalogue when nothing is given."""
    data = data if data is not None else (os.environ.get(ENV_VAR) or None)
    if data is None:
        return generate(num_products=num_products, seed=seed), "generated"
    root = Path(data).expanduser()
    if root.is_file():
        root = root.parent
    if not root.is_dir():
        raise WebShopDataError(f"WebShop data {root} does not exist; pass a directory holding items_shuffle*.json "
                               f"(data=... or ${ENV_VAR}), or generate one with `seedbench data webshop --out DIR`")
    manifest = root / MANIFEST
    return root, "generated" if manifest.exists() else "official"


def load_catalogue(data: str | os.PathLike | None = None, num_products: int | None = None,
                   generate_products: int = 1000, seed: int = 0) -> Catalogue:
    """Load products and their annotations. `num_products` keeps the first N products (the original's
    ``num_products``: its product files are pre-shuffled); `generate_products`/`seed` choose the generated
    catalogue used when no data is given."""
    root, source = resolve_data_dir(data, generate_products, seed)
    items = _pick(root, "items_shuffle", num_products)
    attrs = _pick(root, "items_ins_v2", num_products)
    if items is None or attrs is None:
        raise WebShopDataError(f"{root} holds no items_shuffle*.json and items_ins_v2*.json (the WebShop data "
                               "format); point data=... at the folder with both")
    human = root / HUMAN_FILE
    read = {p.name: p.read_bytes() for p in (items, attrs, human) if p.exists()}
    raw_products = json.loads(read[items.name])
    attributes = json.loads(read[attrs.name])
    human_ins = json.loads(read[HUMAN_FILE]) if HUMAN_FILE in read else {}
    if num_products is not None:
        raw_products = raw_products[:num_products]
    products = normalise_products(raw_products, attributes, human_ins)
    if not products:
        raise WebShopDataError(f"{items} holds no usable products")
    files = {name: sha256_bytes(data) for name, data in sorted(read.items())}
    checksum = sha256_bytes(json.dumps({"files": files, "num_products": num_products}, sort_keys=True).encode())[:16]
    return Catalogue(products, source, root, checksum, files, has_human_goals=bool(human_ins))


def parse_pricing(pricing: str | None) -> tuple[list[float], str]:
    """``"$10.99 - $15.00"`` → ``([10.99, 15.0], "$10.99 to $15.0")``; missing → ``([100.0], "$100.0")``."""
    if not pricing:
        return [100.0], "$100.0"
    values = [float(Decimal(re.sub(r"[^\d.]", "", part))) for part in pricing.split("$")[1:]]
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def _options(customization: dict | None) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    for name, contents in (customization or {}).items():
        if contents is None:
            continue
        options[name.lower()] = [c["value"].strip().replace("/", " | ").lower() for c in contents]
    return options


def normalise_products(raw: list[dict], attributes: dict[str, dict], human_ins: dict[str, list]) -> list[dict]:
    """The original loader's per-product normalisation (see the module docstring)."""
    seen: set[str] = set()
    products = []
    for p in raw:
        asin = p["asin"]
        if asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        pricing, price_tag = parse_pricing(p.get("pricing"))
        bullets = p["small_description"]
        annotation = attributes.get(asin) or {}
        product = {
            "asin": asin,
            "name": p["name"],
            "category": p["category"],
            "query": p["query"].lower().strip(),
            "product_category": p["product_category"],
            "Title": p["name"],
            "Description": p["full_description"],
            "BulletPoints": bullets if isinstance(bullets, list) else [bullets],
            "Reviews": [],
            "Rating": "N.A.",
            "pricing": pricing,
            "Price": price_tag,
            "options": _options(p.get("customization_options")),
            "customization_options": p.get("customization_options") or {},
            "Attributes": annotation["attributes"] if "attributes" in annotation else ["DUMMY_ATTR"],
            "instruction_text": annotation.get("instruction"),
            "instruction_attributes": annotation.get("instruction_attributes"),
            "MainImage": (p.get("images") or [None])[0],
        }
        if asin in human_ins:
            product["instructions"] = human_ins[asin]
        products.append(product)
    return products
