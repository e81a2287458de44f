"""The shop's pages: the original site's state machine and the text its text env renders.

Pages and what is clickable on each (`clickables`, lower-case, in page order as the original collects
them: buttons, then product links, then option values):

==========  ====================================================================================
search      ``search`` (the search box; the env plays it as ``search[query]``)
results     ``back to search``, ``< prev`` (from page 2), ``next >`` (always, as in the original,
            even past the last result), then the asin of each of the 10 products of the page
item        ``back to search``, ``< prev``, ``description``, ``features``, ``reviews``,
            (``attributes`` when ``show_attrs``), ``buy now``, then every option value
sub page    ``back to search``, ``< prev`` (back to the item page, options kept)
done        nothing: the episode is over
==========  ====================================================================================

Transitions follow the original server's ``receive``: a search (allowed from any page, as in the
original) shows results page 1 and forgets the product and options; ``< prev`` on an item page re-runs
the search at the current page and also forgets them; clicking an option value records it under its
option name (a later click of another value of the same option replaces it).

Rendering (`render`) gives the original's ``text`` observation mode: the page's visible strings, each
stripped, empty ones dropped, joined with `` [SEP] ``, e.g.
``WebShop [SEP] Instruction: [SEP] i need ... [SEP] Search``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

PRODUCT_WINDOW = 10
SEP = " [SEP] "
END_BUTTON, NEXT_PAGE, PREV_PAGE, BACK_TO_SEARCH = "buy now", "next >", "< prev", "back to search"
SUB_PAGES = {"description": "Description", "features": "Features", "reviews": "Reviews", "attributes": "Attributes"}


@dataclass
class Session:
    """One shopper's state on the site (the original's ``user_sessions[session_id]``)."""

    instruction: str
    page: str = "search"  # search | results | item | sub | done
    keywords: list[str] | None = None
    page_number: int = 1
    results: list[dict] = field(default_factory=list)  # the search's top products (up to 50)
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str | None = None
    show_attrs: bool = False
    purchase: dict | None = None  # asin, options, reward, details once bought

    # -- what can be clicked -------------------------------------------------------------------------

    def page_products(self) -> list[dict]:
        start = (self.page_number - 1) * PRODUCT_WINDOW
        return self.results[start:start + PRODUCT_WINDOW]

    def option_values(self, product: dict) -> dict[str, str]:
        """Option value → option name (a value shared by two options maps to the later, as the
        original's dict of radio buttons does)."""
        return {value: name for name, values in product["options"].items() for value in values}

    def clickables(self, product: dict | None) -> list[str]:
        if self.page == "search":
            return ["search"]
        if self.page == "results":
            buttons = [BACK_TO_SEARCH] + ([PREV_PAGE] if self.page_number > 1 else []) + [NEXT_PAGE]
            return buttons + [p["asin"].lower() for p in self.page_products()]
        if self.page == "item":
            subs = ["description", "features", "reviews"] + (["attributes"] if self.show_attrs else [])
            buttons = [BACK_TO_SEARCH, PREV_PAGE, *subs, END_BUTTON]
            return buttons + [v for v in self.option_values(product) if v not in buttons]
        if self.page == "sub":
            return [BACK_TO_SEARCH, PREV_PAGE]
        return []

    # -- transitions ---------------------------------------------------------------------------------

    def go_search_page(self) -> None:
        self.page, self.keywords, self.page_number, self.results = "search", None, 1, []
        self.asin, self.options, self.sub_page = None, {}, None

    def search(self, keywords: list[str], run_search: Callable[[list[str]], list[dict]], page: int = 1) -> None:
        self.keywords, self.page_number = keywords, page
        self.results = run_search(keywords)
        self.page, self.asin, self.options, self.sub_page = "results", None, {}, None

    def click(self, name: str, product_of: Callable[[str], dict], run_search: Callable) -> bool:
        """Apply a click on an admissible `name`; True when it was ``buy now`` (the caller scores it)."""
        if name == END_BUTTON:
            self.page = "done"
            return True
        if name == BACK_TO_SEARCH:
            self.go_search_page()
        elif name == NEXT_PAGE and self.page == "results":
            self.search(self.keywords, run_search, self.page_number + 1)
        elif name == PREV_PAGE and self.page == "results":
            self.search(self.keywords, run_search, self.page_number - 1)
        elif name == PREV_PAGE and self.page == "sub":
            self.page, self.sub_page = "item", None
        elif name == PREV_PAGE and self.page == "item":
            self.search(self.keywords, run_search, self.page_number)
        elif name in SUB_PAGES:
            self.page, self.sub_page = "sub", SUB_PAGES[name]
        elif self.page == "results":
            self.page, self.asin = "item", name.upper()
        else:  # an option value on the item page
            self.options[self.option_values(product_of(self.asin))[name]] = name
        return False


def render(session: Session, product: dict | None) -> str:
    """The page as the original text env shows it (see the module docstring)."""
    head = ["Instruction:", session.instruction, "Back to Search"]
    if session.page == "search":
        texts = ["WebShop", "Instruction:", session.instruction, "Search"]
    elif session.page == "results":
        texts = head + [f"Page {session.page_number} (Total results: {len(session.results)})"]
        texts += (["< Prev"] if session.page_number > 1 else []) + ["Next >"]
        for item in session.page_products():
            texts += [item["asin"], item["Title"], item["Price"]]
    elif session.page == "item":
        texts = head + ["< Prev"]
        for name, values in product["options"].items():
            texts += [name, *values]
        texts += [product["Title"], f"Price: {product['Price']}", f"Rating: {product['Rating']}",
                  "Description", "Features", "Reviews"] + (["Attributes"] if session.show_attrs else []) + ["Buy Now"]
    elif session.page == "sub":
        texts = head + ["< Prev"] + _sub_page_texts(session.sub_page, product)
    else:
        texts = _done_texts(session)
    return SEP.join(t.strip() for t in texts if t is not None and str(t).strip())


def _sub_page_texts(sub_page: str | None, product: dict) -> list[str]:
    if sub_page == "Description":
        return [product["Description"]]
    if sub_page == "Features":
        return list(product["BulletPoints"])
    if sub_page == "Reviews":
        texts: list[str] = []
        for review in product["Reviews"]:
            texts += [f'"{review.get("title", "")}"', str(review.get("score", "")), review.get("body", "")]
        return texts
    return [*product["Attributes"], product["category"], product["query"], product["product_category"]]


def _done_texts(session: Session) -> list[Any]:
    """The done page's strings; the original renders its hidden purchase/target block too, with the
    fields the text env never passes shown as ``None``."""
    purchase = session.purchase or {}
    return ["Thank you for shopping with us!", "Your code:", "None", "(Paste it in your MTurk interface.)",
            "Purchased", "asin", purchase.get("asin"),
            "options", json.dumps(purchase.get("options", {}), sort_keys=True),
            "attrs", "None", "category", "None", "query", "None", "product category", "None",
            "Target", "asin", "options", "attrs", "price upper", "instuction text", "category", "product category",
            "query", "Goal", "None", "Reward", "Your score (min 0.0, max 1.0)", str(purchase.get("reward")),
            "Reward Details", "None"]
