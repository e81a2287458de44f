"""The word lists the offline catalogue is generated from (seedbench's own, not WebShop's data).

Modelled on the *shape* of the public WebShop data (five top-level categories, Amazon-like
``A › B › C`` category paths, short lower-case attribute phrases such as "long lasting" or "easy to
clean", option types ``color`` / ``size`` / ``style`` / ``flavor name`` / ``scent`` with 2-6 values each),
written here from scratch. Nothing is copied from ``items_ins_v2_1000.json``.

Every product type carries its own head noun(s), so the deterministic noun heuristic
(`seedbench.envs.webshop.nouns`) knows which title words are nouns; ``ADJECTIVES`` lists the non-noun
title words the generator uses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProductType:
    name: str  # the noun phrase used in titles and instructions ("hair dryer")
    query: str  # the search query the product was "scraped" with, as in the original's `query` field
    path: tuple[str, str]  # the two levels of product_category under the category root
    options: tuple[str, ...]  # option types this kind of product may offer


@dataclass(frozen=True)
class Category:
    name: str  # the `category` field
    root: str  # first level of product_category
    types: tuple[ProductType, ...]
    attributes: tuple[str, ...]  # attribute phrases products of this category may have
    materials: tuple[str, ...]  # title decorations (adjective-like, never counted as nouns)


def _t(name: str, query: str, a: str, b: str, *options: str) -> ProductType:
    return ProductType(name, query, (a, b), tuple(options))


CATEGORIES: tuple[Category, ...] = (
    Category(
        "beauty", "Beauty & Personal Care",
        (
            _t("shampoo", "shampoo", "Hair Care", "Shampoos", "scent", "size"),
            _t("conditioner", "hair conditioner", "Hair Care", "Conditioners", "scent", "size"),
            _t("hair dryer", "hair dryer", "Hair Care", "Styling Tools", "color"),
            _t("face serum", "face serum", "Skin Care", "Face", "size"),
            _t("body lotion", "body lotion", "Skin Care", "Body", "scent", "size"),
            _t("lip balm", "lip balm", "Skin Care", "Lips", "flavor name"),
            _t("nail polish", "nail polish", "Foot, Hand & Nail Care", "Nail Polish", "color"),
            _t("makeup brush set", "makeup brushes", "Tools & Accessories", "Makeup Brushes", "color"),
            _t("deodorant", "deodorant", "Personal Care", "Deodorants", "scent"),
            _t("eye shadow palette", "eyeshadow", "Makeup", "Eyes", "color"),
        ),
        ("long lasting", "paraben free", "sulfate free", "cruelty free", "natural ingredients", "dry skin",
         "sensitive skin", "dry hair", "easy to use", "travel size", "fine mist", "alcohol free", "vitamin c",
         "hyaluronic acid", "high quality", "non toxic"),
        ("organic", "gentle", "daily", "professional", "hydrating", "nourishing", "lightweight", "premium"),
    ),
    Category(
        "electronics", "Electronics",
        (
            _t("wireless earbuds", "earbuds", "Headphones", "Earbud Headphones", "color"),
            _t("phone case", "iphone case", "Cell Phones & Accessories", "Cases", "color", "style"),
            _t("usb cable", "usb c cable", "Computers & Accessories", "Cables", "color", "size"),
            _t("bluetooth speaker", "portable speaker", "Portable Audio", "Speakers", "color"),
            _t("screen protector", "screen protector", "Cell Phones & Accessories", "Screen Protectors", "style"),
            _t("wall charger", "fast charger", "Cell Phones & Accessories", "Chargers", "color"),
            _t("hdmi cable", "hdmi cable", "Television & Video", "Cables", "size"),
            _t("tablet stand", "tablet stand", "Computers & Accessories", "Stands", "color"),
            _t("security camera", "security camera", "Camera & Photo", "Surveillance", "style"),
            _t("remote control", "tv remote", "Television & Video", "Remote Controls", "style"),
        ),
        ("noise cancelling", "fast charging", "high definition", "easy to install", "water resistant",
         "long battery life", "high speed", "heavy duty", "plug and play", "wireless charging", "dual band",
         "hands free", "shock absorbing", "easy carry", "high resolution", "usb port"),
        ("compact", "portable", "slim", "rugged", "ultra", "smart", "universal", "magnetic"),
    ),
    Category(
        "fashion", "Clothing, Shoes & Jewelry",
        (
            _t("t-shirt", "men's t-shirts", "Men", "Shirts", "color", "size"),
            _t("sneaker", "women's sneakers", "Women", "Shoes", "color", "size"),
            _t("hoodie", "hoodies", "Men", "Sweatshirts", "color", "size"),
            _t("dress", "summer dresses", "Women", "Dresses", "color", "size"),
            _t("jeans", "men's jeans", "Men", "Pants", "color", "size"),
            _t("sandal", "sandals for women", "Women", "Sandals", "color", "size"),
            _t("baseball cap", "baseball caps", "Men", "Hats & Caps", "color"),
            _t("leggings", "yoga leggings", "Women", "Activewear", "color", "size"),
            _t("rain jacket", "rain jacket", "Women", "Coats & Jackets", "color", "size"),
            _t("wrist watch", "watches for men", "Men", "Watches", "color", "style"),
        ),
        ("machine wash", "slim fit", "relaxed fit", "button closure", "elastic waistband", "long sleeve",
         "short sleeve", "non slip", "rubber sole", "quick dry", "high waist", "moisture wicking", "soft material",
         "everyday wear", "stainless steel", "hand wash"),
        ("classic", "casual", "stretch", "vintage", "breathable", "athletic", "cozy", "lightweight"),
    ),
    Category(
        "food", "Grocery & Gourmet Food",
        (
            _t("green tea", "green tea", "Beverages", "Tea", "flavor name", "size"),
            _t("coffee beans", "whole bean coffee", "Beverages", "Coffee", "flavor name", "size"),
            _t("protein bar", "protein bars", "Snack Foods", "Bars", "flavor name", "size"),
            _t("trail mix", "trail mix", "Snack Foods", "Nuts & Seeds", "flavor name"),
            _t("olive oil", "extra virgin olive oil", "Pantry Staples", "Oils", "size"),
            _t("pasta sauce", "pasta sauce", "Pantry Staples", "Sauces", "flavor name"),
            _t("beef jerky", "beef jerky", "Meat & Seafood", "Jerky", "flavor name", "size"),
            _t("dark chocolate", "dark chocolate bar", "Candy & Chocolate", "Chocolate Bars", "flavor name"),
            _t("granola", "granola cereal", "Breakfast Foods", "Cereals", "flavor name", "size"),
            _t("hot sauce", "hot sauce", "Pantry Staples", "Condiments", "flavor name"),
        ),
        ("gluten free", "sugar free", "non gmo", "low carb", "keto friendly", "high protein", "plant based",
         "individually wrapped", "ready to eat", "dairy free", "natural flavor", "certified organic",
         "zero sugar", "resealable bag", "low calorie", "kosher certified"),
        ("organic", "roasted", "crunchy", "savory", "artisan", "gourmet", "wholesome", "classic"),
    ),
    Category(
        "furniture", "Home & Kitchen",
        (
            _t("office chair", "office chair", "Furniture", "Home Office Furniture", "color", "style"),
            _t("bookshelf", "bookcase", "Furniture", "Living Room Furniture", "color", "size"),
            _t("coffee table", "coffee table", "Furniture", "Living Room Furniture", "color", "style"),
            _t("bed frame", "platform bed", "Furniture", "Bedroom Furniture", "color", "size"),
            _t("bar stool", "bar stools", "Furniture", "Kitchen Furniture", "color"),
            _t("throw pillow", "throw pillow covers", "Home Decor", "Pillows", "color", "size"),
            _t("area rug", "area rug", "Home Decor", "Rugs", "color", "size"),
            _t("shower curtain", "shower curtain", "Bath", "Shower Curtains", "color", "size"),
            _t("desk lamp", "desk lamp", "Lighting", "Lamps", "color", "style"),
            _t("storage ottoman", "storage ottoman", "Furniture", "Living Room Furniture", "color"),
        ),
        ("easy assembly", "solid wood", "living room", "dining room", "space saving", "height adjustable",
         "non slip", "easy clean", "memory foam", "metal frame", "mid century", "lumbar support",
         "high density", "storage space", "assembly required", "wood finish"),
        ("modern", "rustic", "sturdy", "elegant", "minimalist", "upholstered", "foldable", "industrial"),
    ),
)

OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "color": ("black", "white", "navy blue", "dark grey", "red", "beige", "olive green", "pink", "brown",
              "light blue", "multicolor", "silver", "gold", "rose gold", "burgundy", "charcoal", "ivory",
              "teal", "khaki", "purple", "mint", "walnut", "espresso", "natural wood"),
    "size": ("small", "medium", "large", "x-large", "xx-large", "one size", "6 ounce", "12 ounce",
             "16 ounce", "3 feet", "6 feet", "5x7", "8x10", "queen", "king", "twin", "pack of 2", "pack of 6"),
    "style": ("classic", "modern", "with arms", "armless", "clear", "matte", "sport", "leather band",
              "mesh band", "wall mount", "indoor", "outdoor"),
    "flavor name": ("original", "vanilla", "chocolate", "peanut butter", "honey", "spicy", "sea salt",
                    "mixed berry", "mint", "caramel", "smoked", "garlic herb"),
    "scent": ("unscented", "lavender", "coconut", "citrus", "fresh", "rose", "eucalyptus", "vanilla"),
}

BRAND_SYLLABLES = ("lu", "mo", "ra", "ve", "ki", "no", "sa", "to", "zen", "qua", "bri", "dex", "flo", "mar",
                   "vo", "ny", "tel", "ka", "pi", "ro")
"""Brand names are two or three syllables: proper nouns to spaCy, counted as nouns by the heuristic."""

INSTRUCTION_OPENERS = ("i need", "i am looking for", "i want", "find me", "i would like", "i'm searching for",
                       "get me", "i am shopping for")

DESCRIPTION_SENTENCES = (
    "Designed for everyday use and built to last.",
    "Our team tests every batch for quality before it ships.",
    "Backed by a 30-day satisfaction guarantee.",
    "A thoughtful gift for friends and family.",
    "Please allow small differences in colour due to lighting.",
    "Simple to care for and easy to store.",
)

ADJECTIVES = frozenset(
    {word for category in CATEGORIES for word in category.materials}
    | {"long", "free", "dry", "sensitive", "easy", "fine", "high", "non", "natural", "toxic", "fast", "wireless",
       "water", "resistant", "heavy", "dual", "quick", "slim", "relaxed", "elastic", "short", "soft", "low",
       "plant", "based", "ready", "zero", "solid", "adjustable", "mid", "metal", "stainless", "certified",
       "individually", "wrapped", "cancelling", "absorbing", "charging", "lasting", "required", "saving",
       "new", "best", "great", "perfect", "small", "large", "extra", "virgin", "whole", "portable", "hands",
       "plug", "play", "density", "gluten", "sugar", "dairy", "friendly", "resealable", "kosher"}
)
"""Non-noun words that occur in generated titles (plus common shop adjectives); the heuristic noun tagger
skips them. Some ("water", "plant", "hands") are nouns to a POS tagger in other contexts: the heuristic is
a documented approximation, see docs/webshop.md."""
