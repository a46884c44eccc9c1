"""The taxonomies the sandbox marketplaces ship: a deterministic generator per marketplace kind.

The shipped taxonomies are generated from a seed (platform, revision, size), so the repository carries no large
data files: the same inputs always give byte-identical categories, ids and schemas. The sandbox checks listings
against them (`off_api_requirements`); `marketsync admin taxonomy import --platform P1` loads them into the
catalogue the way a real marketplace's taxonomy file would be loaded, into each site (country) of the kind.

A revision above 1 changes the schema of a deterministic subset of leaves (about 3 %) and always of the
anchor "T-Shirts", so a re-import of revision N+1 gives exactly those categories a new ProductTypeViewId.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache

from marketsync.catalog.taxonomy import (
    MAX_DEPTH,
    PATH_SEPARATOR,
    PLATFORMS,
    AllowedValue,
    AttributeSpec,
    AttributeType,
    CategorySpec,
    Taxonomy,
)
from marketsync.kinds import SANDBOX_KINDS, home_site

DEFAULT_SIZES = {"P1": 6000, "P2": 5000, "P3": 4000, "P4": 3500}
# Each sandbox marketplace ships one tree, loaded into every site (country) of its kind; a kind's home site is where
# `marketsync admin taxonomy import --platform P1` loads it when no site of the kind is known yet (the demo's sites).
HOME_COUNTRIES = {platform: home_site(platform) for platform in SANDBOX_KINDS}


def anchor(taxonomy: Taxonomy, name: str) -> CategorySpec:
    """A hand-written leaf present in every size and revision (tests and demos use these)."""
    category = taxonomy.get(ANCHOR_IDS[taxonomy.platform][name])
    assert category is not None, name
    return category


# --------------------------------------------------------------------------------------------------
# Vocabulary (small, hand-written; the generator combines it into thousands of plausible names)

DEPARTMENTS: dict[str, list[str]] = {
    "Clothing, Shoes & Accessories": [
        "Men's Clothing",
        "Women's Clothing",
        "Kids' Clothing",
        "Shoes",
        "Bags & Handbags",
        "Hats & Caps",
        "Scarves & Wraps",
        "Belts",
        "Sunglasses",
        "Uniforms & Workwear",
    ],
    "Electronics": [
        "Mobile Phones",
        "Computers & Tablets",
        "Audio",
        "TV & Video",
        "Wearable Tech",
        "Smart Home",
        "Networking",
        "Cables & Adapters",
        "Batteries & Power",
        "Drones",
    ],
    "Home & Garden": [
        "Furniture",
        "Kitchen & Dining",
        "Bedding",
        "Bath",
        "Lighting",
        "Garden & Patio",
        "Home Decor",
        "Storage & Organisation",
        "Cleaning",
        "Heating & Cooling",
    ],
    "Toys & Games": [
        "Board Games",
        "Puzzles",
        "Building Toys",
        "Dolls",
        "Action Figures",
        "Outdoor Toys",
        "Educational Toys",
        "Model Kits",
        "Soft Toys",
        "Card Games",
    ],
    "Sports & Outdoors": [
        "Cycling",
        "Camping & Hiking",
        "Fitness",
        "Fishing",
        "Team Sports",
        "Water Sports",
        "Winter Sports",
        "Golf",
        "Running",
        "Climbing",
    ],
    "Health & Beauty": [
        "Skincare",
        "Hair Care",
        "Make-Up",
        "Fragrances",
        "Oral Care",
        "Vitamins & Supplements",
        "Shaving",
        "Nail Care",
        "Medical Supplies",
        "Massage",
    ],
    "Books & Magazines": [
        "Fiction",
        "Non-Fiction",
        "Children's Books",
        "Comics & Graphic Novels",
        "Textbooks",
        "Magazines",
        "Cookbooks",
        "Travel Guides",
        "Antiquarian Books",
        "Audiobooks",
    ],
    "Automotive": [
        "Car Parts",
        "Motorcycle Parts",
        "Car Care",
        "Tyres & Wheels",
        "Car Electronics",
        "Tools & Garage",
        "Interior Accessories",
        "Exterior Accessories",
        "Lighting & Bulbs",
        "Oils & Fluids",
    ],
    "Pet Supplies": [
        "Dog Supplies",
        "Cat Supplies",
        "Fish & Aquatics",
        "Bird Supplies",
        "Small Animals",
        "Reptiles",
        "Horse Supplies",
        "Pet Food",
        "Pet Beds",
        "Pet Toys",
    ],
    "Office Supplies": [
        "Writing Instruments",
        "Paper",
        "Desk Accessories",
        "Filing",
        "Printers & Ink",
        "Office Furniture",
        "Presentation",
        "Mailing",
        "Calendars",
        "Labels",
    ],
    "Baby & Toddler": [
        "Nursery",
        "Feeding",
        "Nappies & Changing",
        "Strollers",
        "Car Seats",
        "Baby Clothing",
        "Bathing",
        "Baby Safety",
        "Baby Toys",
        "Carriers",
    ],
    "Musical Instruments": [
        "Guitars",
        "Keyboards & Pianos",
        "Drums & Percussion",
        "Wind Instruments",
        "String Instruments",
        "Pro Audio",
        "DJ Equipment",
        "Sheet Music",
        "Amplifiers",
        "Instrument Accessories",
    ],
    "Tools & DIY": [
        "Power Tools",
        "Hand Tools",
        "Plumbing",
        "Electrical",
        "Building Materials",
        "Painting & Decorating",
        "Fixings & Fasteners",
        "Measuring Tools",
        "Safety Equipment",
        "Workshop Storage",
    ],
    "Arts & Crafts": [
        "Painting",
        "Drawing",
        "Sewing",
        "Knitting & Crochet",
        "Scrapbooking",
        "Jewellery Making",
        "Pottery",
        "Woodcraft",
        "Candle Making",
        "Beads",
    ],
    "Collectables": [
        "Coins",
        "Stamps",
        "Trading Cards",
        "Militaria",
        "Autographs",
        "Vintage Advertising",
        "Figurines",
        "Memorabilia",
        "Antiques",
        "Die-Cast Models",
    ],
    "Food & Drink": [
        "Tea",
        "Coffee",
        "Confectionery",
        "Snacks",
        "Baking",
        "Condiments",
        "Wine",
        "Beer",
        "Spirits",
        "Speciality Foods",
    ],
    "Video Games & Consoles": [
        "Consoles",
        "Games",
        "Controllers",
        "Headsets",
        "Console Accessories",
        "Retro Gaming",
        "PC Gaming",
        "Handheld Consoles",
        "Gaming Chairs",
        "Virtual Reality",
    ],
    "Cameras & Photography": [
        "Digital Cameras",
        "Film Cameras",
        "Lenses",
        "Tripods",
        "Flashes",
        "Camera Bags",
        "Memory Cards",
        "Drones & Aerial",
        "Studio Lighting",
        "Binoculars",
    ],
}

NOUNS: dict[str, list[str]] = {
    "Clothing, Shoes & Accessories": [
        "Shirts",
        "Jeans",
        "Jackets",
        "Coats",
        "Dresses",
        "Skirts",
        "Jumpers",
        "Hoodies",
        "Trainers",
        "Boots",
        "Sandals",
        "Socks",
        "Suits",
        "Shorts",
        "Swimwear",
        "Pyjamas",
        "Gloves",
        "Backpacks",
        "Wallets",
        "Leggings",
    ],
    "Electronics": [
        "Headphones",
        "Speakers",
        "Chargers",
        "Cases",
        "Screen Protectors",
        "Laptops",
        "Monitors",
        "Keyboards",
        "Mice",
        "Routers",
        "Smartwatches",
        "Projectors",
        "Soundbars",
        "Power Banks",
        "Microphones",
        "Webcams",
    ],
    "Home & Garden": [
        "Chairs",
        "Tables",
        "Lamps",
        "Rugs",
        "Cushions",
        "Curtains",
        "Mirrors",
        "Vases",
        "Planters",
        "Cookware",
        "Knives",
        "Towels",
        "Duvets",
        "Shelves",
        "Clocks",
        "Candles",
        "Hoses",
        "Barbecues",
    ],
    "Toys & Games": [
        "Puzzles",
        "Blocks",
        "Playsets",
        "Figures",
        "Vehicles",
        "Kites",
        "Balls",
        "Dolls",
        "Games",
        "Plush Toys",
        "Trains",
        "Robots",
        "Craft Kits",
        "Tents",
    ],
    "Sports & Outdoors": [
        "Bikes",
        "Helmets",
        "Tents",
        "Sleeping Bags",
        "Rods",
        "Reels",
        "Weights",
        "Mats",
        "Boards",
        "Skis",
        "Gloves",
        "Balls",
        "Rackets",
        "Bottles",
        "Rucksacks",
        "Harnesses",
    ],
    "Health & Beauty": [
        "Creams",
        "Serums",
        "Shampoos",
        "Conditioners",
        "Brushes",
        "Lipsticks",
        "Perfumes",
        "Toothbrushes",
        "Razors",
        "Tablets",
        "Oils",
        "Masks",
        "Lotions",
        "Polishes",
    ],
    "Books & Magazines": [
        "Novels",
        "Biographies",
        "Anthologies",
        "Guides",
        "Annuals",
        "Atlases",
        "Dictionaries",
        "Poetry",
        "Plays",
        "Essays",
        "Manuals",
        "Box Sets",
    ],
    "Automotive": [
        "Brakes",
        "Filters",
        "Mirrors",
        "Seat Covers",
        "Mats",
        "Bulbs",
        "Wipers",
        "Batteries",
        "Exhausts",
        "Spark Plugs",
        "Polishes",
        "Jacks",
        "Tyres",
        "Roof Boxes",
    ],
    "Pet Supplies": [
        "Collars",
        "Leads",
        "Bowls",
        "Beds",
        "Toys",
        "Cages",
        "Tanks",
        "Litter",
        "Treats",
        "Grooming Tools",
        "Carriers",
        "Feeders",
    ],
    "Office Supplies": [
        "Pens",
        "Pencils",
        "Notebooks",
        "Folders",
        "Staplers",
        "Envelopes",
        "Binders",
        "Cartridges",
        "Desks",
        "Whiteboards",
        "Labels",
        "Organisers",
    ],
    "Baby & Toddler": [
        "Bottles",
        "Bibs",
        "Cots",
        "Mobiles",
        "Monitors",
        "Prams",
        "Rockers",
        "Blankets",
        "Bodysuits",
        "Teethers",
        "Gates",
        "Slings",
    ],
    "Musical Instruments": [
        "Strings",
        "Picks",
        "Pedals",
        "Stands",
        "Cases",
        "Cymbals",
        "Sticks",
        "Mouthpieces",
        "Reeds",
        "Cables",
        "Mixers",
        "Microphones",
    ],
    "Tools & DIY": [
        "Drills",
        "Saws",
        "Sanders",
        "Screwdrivers",
        "Spanners",
        "Hammers",
        "Ladders",
        "Pipes",
        "Sockets",
        "Switches",
        "Paints",
        "Brushes",
        "Screws",
        "Levels",
    ],
    "Arts & Crafts": [
        "Paints",
        "Brushes",
        "Canvases",
        "Pencils",
        "Fabrics",
        "Yarns",
        "Needles",
        "Stamps",
        "Clays",
        "Glazes",
        "Wicks",
        "Beads",
        "Kits",
    ],
    "Collectables": [
        "Coins",
        "Banknotes",
        "Stamps",
        "Cards",
        "Medals",
        "Badges",
        "Posters",
        "Signs",
        "Figures",
        "Models",
        "Tins",
        "Prints",
    ],
    "Food & Drink": [
        "Teas",
        "Coffees",
        "Chocolates",
        "Sweets",
        "Crisps",
        "Flours",
        "Sauces",
        "Spices",
        "Wines",
        "Ales",
        "Gins",
        "Hampers",
        "Honeys",
        "Jams",
    ],
    "Video Games & Consoles": [
        "Games",
        "Controllers",
        "Headsets",
        "Cables",
        "Stands",
        "Skins",
        "Chargers",
        "Memory Cards",
        "Consoles",
        "Wheels",
        "Joysticks",
    ],
    "Cameras & Photography": [
        "Cameras",
        "Lenses",
        "Filters",
        "Tripods",
        "Flashes",
        "Bags",
        "Straps",
        "Batteries",
        "Backdrops",
        "Reflectors",
        "Cards",
        "Scopes",
    ],
}

QUALIFIERS = [
    "Vintage",
    "Professional",
    "Outdoor",
    "Wireless",
    "Premium",
    "Compact",
    "Classic",
    "Eco-Friendly",
    "Heavy-Duty",
    "Portable",
    "Handmade",
    "Luxury",
    "Smart",
    "Mini",
    "Large",
    "Travel",
    "Kids'",
    "Men's",
    "Women's",
    "Replacement",
    "Decorative",
    "Organic",
    "Waterproof",
    "Retro",
    "Personalised",
    "Rechargeable",
]
SUFFIXES = ["Parts", "Accessories", "Sets", "Kits", "Bundles", "Spares", "Multipacks", "Refills"]

COLOURS = [
    "Black",
    "White",
    "Grey",
    "Navy",
    "Blue",
    "Red",
    "Green",
    "Yellow",
    "Orange",
    "Pink",
    "Purple",
    "Brown",
    "Beige",
    "Gold",
    "Silver",
    "Multicoloured",
]
SIZES = ["XXS", "XS", "S", "M", "L", "XL", "XXL", "3XL"]
MATERIALS = [
    "Cotton",
    "Polyester",
    "Wool",
    "Linen",
    "Silk",
    "Leather",
    "Denim",
    "Nylon",
    "Plastic",
    "Metal",
    "Steel",
    "Aluminium",
    "Wood",
    "Bamboo",
    "Glass",
    "Ceramic",
    "Rubber",
    "Paper",
]
CONDITIONS = [("NEW", "New"), ("NEW_OTHER", "New (other)"), ("REFURBISHED", "Refurbished"), ("USED", "Used")]
COUNTRIES = [
    ("GB", "United Kingdom"),
    ("DE", "Germany"),
    ("FR", "France"),
    ("US", "United States"),
    ("CN", "China"),
    ("IT", "Italy"),
    ("ES", "Spain"),
    ("PL", "Poland"),
    ("JP", "Japan"),
    ("IN", "India"),
    ("VN", "Vietnam"),
]
BRANDS = [
    "Acme",
    "Northwind",
    "Contoso",
    "Globex",
    "Initech",
    "Umbrella",
    "Hooli",
    "Vandelay",
    "Stark",
    "Wayne",
    "Tyrell",
    "Cyberdyne",
    "Soylent",
    "Wonka",
    "Gringotts",
]
CONNECTIVITY = ["Bluetooth", "Wi-Fi", "USB-C", "Lightning", "NFC", "3.5 mm Jack", "HDMI", "Ethernet"]
AGE_RANGES = [
    ("0-2", "0-2 years"),
    ("3-5", "3-5 years"),
    ("6-8", "6-8 years"),
    ("9-12", "9-12 years"),
    ("13+", "13 years and over"),
    ("ADULT", "Adult"),
]
STORAGE_GB = ["16", "32", "64", "128", "256", "512", "1024"]

# Base attribute catalogue: code -> (title, type, value pool, custom values allowed).
_Pool = Sequence[tuple[str, str]]


def _values(items: Iterable[str]) -> list[tuple[str, str]]:
    return [(_code_of(v), v) for v in items]


def _code_of(title: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", title.upper()).strip("_")


BASE_ATTRIBUTES: dict[str, tuple[str, AttributeType, _Pool, bool]] = {
    "Title": ("Title", "Text", (), False),
    "Brand": ("Brand", "Text", _values(BRANDS), True),
    "Condition": ("Condition", "Text", CONDITIONS, False),
    "Colour": ("Colour", "Text", _values(COLOURS), False),
    "Size": ("Size", "Text", _values(SIZES), False),
    "Material": ("Material", "Text", _values(MATERIALS), False),
    "Pattern": ("Pattern", "Text", _values(["Plain", "Striped", "Checked", "Floral", "Spotted", "Camouflage"]), True),
    "CountryOfManufacture": ("Country of Manufacture", "Text", COUNTRIES, False),
    "Model": ("Model", "Text", (), False),
    "Mpn": ("Manufacturer Part Number", "Text", (), False),
    "Connectivity": ("Connectivity", "Text", _values(CONNECTIVITY), False),
    "AgeRange": ("Age Range", "Text", AGE_RANGES, False),
    "Style": ("Style", "Text", _values(["Modern", "Classic", "Rustic", "Industrial", "Minimalist", "Boho"]), True),
    "CareInstructions": ("Care Instructions", "Text", (), False),
    "StorageCapacityGb": ("Storage Capacity (GB)", "Integer", [(v, f"{v} GB") for v in STORAGE_GB], False),
    "NumberOfPieces": ("Number of Pieces", "Integer", (), False),
    "PackQuantity": ("Pack Quantity", "Integer", (), False),
    "WarrantyMonths": ("Warranty (months)", "Integer", (), False),
    "BatteryLifeHours": ("Battery Life (hours)", "Integer", (), False),
    "WeightKg": ("Weight (kg)", "Decimal", (), False),
    "LengthCm": ("Length (cm)", "Decimal", (), False),
    "ScreenSizeIn": ("Screen Size (in)", "Decimal", (), False),
    "Voltage": ("Voltage (V)", "Decimal", [("3.7", "3.7 V"), ("5", "5 V"), ("12", "12 V"), ("230", "230 V")], True),
    "ReleaseDate": ("Release Date", "Date", (), False),
    "ExpiryDate": ("Expiry Date", "Date", (), False),
    "BatteriesIncluded": ("Batteries Included", "Boolean", (), False),
    "Handmade": ("Handmade", "Boolean", (), False),
    "Waterproof": ("Waterproof", "Boolean", (), False),
    "Personalised": ("Personalised", "Boolean", (), False),
}
# Managed in the merchant's app only (refused through the API).
APP_MANAGED = {
    "VariationTheme": "Variation Theme",
    "PromotionRate": "Promoted Listing Rate",
    "FulfilmentChannel": "Fulfilment Channel",
}

DEPARTMENT_ATTRIBUTES: dict[str, list[str]] = {
    "Clothing, Shoes & Accessories": [
        "Colour",
        "Size",
        "Material",
        "Pattern",
        "Style",
        "CareInstructions",
        "CountryOfManufacture",
        "Handmade",
        "LengthCm",
        "Personalised",
    ],
    "Electronics": [
        "Colour",
        "Model",
        "Mpn",
        "Connectivity",
        "StorageCapacityGb",
        "ScreenSizeIn",
        "BatteryLifeHours",
        "WarrantyMonths",
        "ReleaseDate",
        "BatteriesIncluded",
        "Voltage",
        "WeightKg",
    ],
    "Home & Garden": [
        "Colour",
        "Material",
        "Style",
        "WeightKg",
        "LengthCm",
        "NumberOfPieces",
        "Handmade",
        "Waterproof",
        "CountryOfManufacture",
    ],
    "Toys & Games": [
        "AgeRange",
        "NumberOfPieces",
        "BatteriesIncluded",
        "Material",
        "Colour",
        "ReleaseDate",
        "WeightKg",
    ],
    "Sports & Outdoors": ["Colour", "Size", "Material", "WeightKg", "Waterproof", "LengthCm", "Model"],
    "Health & Beauty": ["ExpiryDate", "PackQuantity", "WeightKg", "CountryOfManufacture", "Model"],
    "Books & Magazines": ["ReleaseDate", "NumberOfPieces", "CountryOfManufacture", "WeightKg"],
    "Automotive": ["Mpn", "Model", "Material", "WeightKg", "Voltage", "WarrantyMonths", "LengthCm"],
    "Pet Supplies": ["Size", "Colour", "Material", "WeightKg", "ExpiryDate", "PackQuantity"],
    "Office Supplies": ["Colour", "PackQuantity", "Material", "LengthCm", "Model"],
    "Baby & Toddler": ["AgeRange", "Colour", "Material", "WeightKg", "BatteriesIncluded", "Size"],
    "Musical Instruments": ["Model", "Material", "Colour", "WeightKg", "Voltage", "Handmade"],
    "Tools & DIY": ["Model", "Mpn", "Voltage", "WeightKg", "WarrantyMonths", "BatteriesIncluded", "LengthCm"],
    "Arts & Crafts": ["Colour", "Material", "PackQuantity", "Handmade", "LengthCm", "NumberOfPieces"],
    "Collectables": ["CountryOfManufacture", "ReleaseDate", "Material", "Handmade", "Condition"],
    "Food & Drink": ["ExpiryDate", "WeightKg", "PackQuantity", "CountryOfManufacture"],
    "Video Games & Consoles": [
        "Model",
        "Colour",
        "StorageCapacityGb",
        "ReleaseDate",
        "Connectivity",
        "AgeRange",
        "WarrantyMonths",
    ],
    "Cameras & Photography": [
        "Model",
        "Mpn",
        "Colour",
        "WeightKg",
        "WarrantyMonths",
        "Waterproof",
        "BatteryLifeHours",
        "ReleaseDate",
    ],
}

# Requirements the API cannot carry, by kind and department (images, business policies).
OFF_API_BY_DEPARTMENT: dict[str, dict[str, tuple[str, ...]]] = {
    "P1": {
        "Clothing, Shoes & Accessories": ("Images",),
        "Automotive": ("BusinessPolicy",),
        "Collectables": ("Images", "BusinessPolicy"),
    },
    "P2": {"Clothing, Shoes & Accessories": ("Images",), "Health & Beauty": ("Images",)},
    "P3": {"Clothing, Shoes & Accessories": ("Images",), "Food & Drink": ("Images",)},
    "P4": {"Clothing, Shoes & Accessories": ("Images", "BusinessPolicy"), "Electronics": ("BusinessPolicy",)},
}

# Anchor leaves: fixed ids and schemas in every size and revision, so tests, demos and benches can
# name them. Ids of P1 and P3 exceed 2**53 on purpose.
ANCHOR_IDS: dict[str, dict[str, str]] = {
    "P1": {
        "T-Shirts": "9007199254740993",
        "Smartphones": "15032",
        "Laptops": "177",
        "Kids' T-Shirts": "9007199254741009",
    },
    "P2": {"T-Shirts": "30021", "Smartphones": "30022", "Laptops": "30023", "Kids' T-Shirts": "30024"},
    "P3": {
        "T-Shirts": "9223372036854775001",
        "Smartphones": "9223372036854775002",
        "Laptops": "9223372036854775003",
        "Kids' T-Shirts": "9223372036854775004",
    },
    "P4": {"T-Shirts": "4100001", "Smartphones": "4100002", "Laptops": "4100003", "Kids' T-Shirts": "4100004"},
}


@cache
def _pool(code: str) -> tuple[AllowedValue, ...]:
    return tuple(AllowedValue(v, t) for v, t in BASE_ATTRIBUTES[code][2])


def _attr(code: str, *, required: bool = False, values: Iterable[str] | None = None) -> AttributeSpec:
    """An attribute from the base catalogue; `values` narrows its closed set (by code) for one category."""
    title, kind, _values_pool, custom = BASE_ATTRIBUTES[code]
    allowed = _pool(code)
    if values is not None:
        keep = frozenset(values)
        allowed = tuple(v for v in allowed if v.value in keep)
    return AttributeSpec(code, title, kind, required, allowed, custom and bool(allowed))


def _app_managed(code: str) -> AttributeSpec:
    return AttributeSpec(code, APP_MANAGED[code], "Text", False, (), False, api_settable=False)


def _anchor_schemas() -> dict[str, tuple[tuple[AttributeSpec, ...], str, tuple[str, ...]]]:
    """name -> (attributes, product type code, off-API requirements), same on every kind."""
    shirt = (
        _attr("Title", required=True),
        _attr("Brand", required=True),
        _attr("Condition", required=True, values=["NEW", "NEW_OTHER"]),
        _attr("Size", required=True, values=["XS", "S", "M", "L", "XL", "XXL"]),
        _attr("Colour", required=True, values=["BLACK", "WHITE", "GREY", "NAVY", "RED", "GREEN"]),
        _attr("Material", values=["COTTON", "POLYESTER", "LINEN", "WOOL"]),
        _attr("Pattern"),
        _attr("PackQuantity"),
        _attr("LengthCm"),
        _attr("ReleaseDate"),
        _attr("Handmade"),
        _app_managed("VariationTheme"),
    )
    kids = (
        _attr("Title", required=True),
        _attr("Brand", required=True),
        _attr("Condition", required=True, values=["NEW", "NEW_OTHER", "USED"]),
        _attr("Size", required=True, values=["XXS", "XS", "S"]),
        _attr("Colour", required=True, values=["PINK", "BLUE", "YELLOW", "MULTICOLOURED"]),
        _attr("AgeRange", required=True, values=["0-2", "3-5", "6-8", "9-12"]),
    )
    phone = (
        _attr("Title", required=True),
        _attr("Brand", required=True),
        _attr("Condition", required=True),
        _attr("Model", required=True),
        _attr("StorageCapacityGb", required=True, values=["64", "128", "256", "512"]),
        _attr("Colour", values=["BLACK", "WHITE", "SILVER", "GOLD", "BLUE"]),
        _attr("ScreenSizeIn"),
        _attr("BatteryLifeHours"),
        _attr("ReleaseDate"),
        _attr("BatteriesIncluded"),
        _attr("Voltage"),
        _app_managed("PromotionRate"),
    )
    # Thirty API-settable attributes: the create-throughput benchmark's schema.
    laptop = (
        _attr("Title", required=True),
        _attr("Brand", required=True),
        _attr("Condition", required=True),
        _attr("Model", required=True),
        _attr("Mpn"),
        _attr("Colour"),
        _attr("Material", values=["PLASTIC", "ALUMINIUM", "METAL"]),
        _attr("Connectivity"),
        _attr("CountryOfManufacture"),
        _attr("StorageCapacityGb", required=True),
        _attr("ScreenSizeIn", required=True),
        _attr("BatteryLifeHours"),
        _attr("WarrantyMonths"),
        _attr("WeightKg"),
        _attr("LengthCm"),
        _attr("Voltage"),
        _attr("ReleaseDate"),
        _attr("BatteriesIncluded"),
        _attr("Waterproof"),
        _attr("Style"),
        _attr("Pattern"),
        _attr("NumberOfPieces"),
        _attr("PackQuantity"),
        _attr("CareInstructions"),
        _attr("Handmade"),
        _attr("Personalised"),
        AttributeSpec(
            "RamGb",
            "Memory (GB)",
            "Integer",
            True,
            tuple(AllowedValue(v, f"{v} GB") for v in ("4", "8", "16", "32", "64")),
            False,
        ),
        AttributeSpec(
            "Processor",
            "Processor",
            "Text",
            False,
            tuple(
                AllowedValue(_code_of(v), v)
                for v in ("Intel Core i5", "Intel Core i7", "AMD Ryzen 5", "AMD Ryzen 7", "Apple M3")
            ),
            True,
        ),
        AttributeSpec(
            "OperatingSystem",
            "Operating System",
            "Text",
            False,
            tuple(AllowedValue(_code_of(v), v) for v in ("Windows 11", "macOS", "ChromeOS", "Linux")),
            False,
        ),
        AttributeSpec("RefreshRateHz", "Refresh Rate (Hz)", "Integer", False),
        _app_managed("FulfilmentChannel"),
    )
    return {
        "T-Shirts": (shirt, "SHIRT", ("Images",)),
        "Kids' T-Shirts": (kids, "SHIRT", ()),
        "Smartphones": (phone, "CELLULAR_PHONE", ()),
        "Laptops": (laptop, "NOTEBOOK_COMPUTER", ()),
    }


# Anchors hang under fixed department/subcategory branches (names, not ids, so every size has them).
_ANCHOR_PARENTS = {
    "T-Shirts": ("Clothing, Shoes & Accessories", "Men's Clothing", "Tops & Shirts"),
    "Kids' T-Shirts": ("Clothing, Shoes & Accessories", "Kids' Clothing", "Tops & Shirts"),
    "Smartphones": ("Electronics", "Mobile Phones", "Phones"),
    "Laptops": ("Electronics", "Computers & Tablets", "Computers"),
}


# --------------------------------------------------------------------------------------------------
# Generator


def _id_maker(platform: str) -> Callable[[int], str]:
    """Deterministic category ids in each kind's own style (all strings; P1 and P3 beyond 2**53)."""

    def make(serial: int) -> str:
        if platform == "P1":
            # Mostly short numeric ids, every seventh beyond exact JSON number range.
            return str(2**53 + 2 * serial + 1001) if serial % 7 == 3 else str(20_000 + serial * 3)
        if platform == "P2":
            return str(100_000 + serial)
        if platform == "P3":
            return str(9_100_000_000_000_000_000 + serial * 17)
        return str(5_000_000 + serial * 11)

    return make


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass
class _Node:
    category_id: str
    parent: _Node | None
    name: str
    depth: int
    department: str
    children: list[_Node] = field(default_factory=list)
    anchor: str | None = None

    @property
    def path(self) -> str:
        names: list[str] = []
        node: _Node | None = self
        while node is not None:
            names.append(node.name)
            node = node.parent
        return PATH_SEPARATOR.join(reversed(names))


def _child_name(rng: random.Random, department: str, taken: set[str]) -> str:
    nouns = NOUNS[department]
    for _ in range(40):
        noun = rng.choice(nouns)
        roll = rng.random()
        if roll < 0.55:
            name = f"{rng.choice(QUALIFIERS)} {noun}"
        elif roll < 0.85:
            name = f"{noun} {rng.choice(SUFFIXES)}"
        else:
            name = f"{rng.choice(QUALIFIERS)} {noun} {rng.choice(SUFFIXES)}"
        if name.lower() not in taken:
            return name
    return f"{rng.choice(nouns)} {len(taken) + 1}"


def _build_tree(platform: str, size: int) -> list[_Node]:
    rng = random.Random(f"taxonomy:{platform}:{size}")
    make_id = _id_maker(platform)
    reserved = set(ANCHOR_IDS[platform].values())
    serial = 0

    def next_id() -> str:
        nonlocal serial
        while True:
            serial += 1
            candidate = make_id(serial)
            if candidate not in reserved:
                return candidate

    roots: list[_Node] = []
    small = size < 2000
    frontier: list[_Node] = []
    count = 0
    for department, subcategories in DEPARTMENTS.items():
        root = _Node(next_id(), None, department, 1, department)
        roots.append(root)
        count += 1
        subs = subcategories[: 3 if small else len(subcategories)]
        for sub in subs:
            node = _Node(next_id(), root, sub, 2, department)
            root.children.append(node)
            count += 1
            taken: set[str] = set()
            for _ in range(rng.randint(2, 3) if small else rng.randint(3, 6)):
                name = _child_name(rng, department, taken)
                taken.add(name.lower())
                leaf = _Node(next_id(), node, name, 3, department)
                node.children.append(leaf)
                frontier.append(leaf)
                count += 1
    # Fixed anchor branches (created if the random names did not already make them).
    for anchor, (department, sub, branch) in _ANCHOR_PARENTS.items():
        root = next(r for r in roots if r.name == department)
        sub_node = next((c for c in root.children if c.name == sub), None)
        if sub_node is None:
            sub_node = _Node(next_id(), root, sub, 2, department)
            root.children.append(sub_node)
            count += 1
        branch_node = next((c for c in sub_node.children if c.name == branch), None)
        if branch_node is None:
            branch_node = _Node(next_id(), sub_node, branch, 3, department)
            sub_node.children.append(branch_node)
            count += 1
        branch_node.children.append(
            _Node(ANCHOR_IDS[platform][anchor], branch_node, anchor, 4, department, anchor=anchor)
        )
        count += 1
    # Grow random branches (never below depth 6) until the target size is reached.
    while count < size and frontier:
        index = rng.randrange(len(frontier))
        node = frontier[index]
        frontier[index] = frontier[-1]
        frontier.pop()
        if node.children:
            continue
        taken = set()
        for _ in range(rng.randint(2, 7)):
            name = _child_name(rng, node.department, taken)
            taken.add(name.lower())
            child = _Node(next_id(), node, name, node.depth + 1, node.department)
            node.children.append(child)
            count += 1
            if child.depth < MAX_DEPTH:
                frontier.append(child)
    return roots


def _walk(nodes: Iterable[_Node]) -> Iterable[_Node]:
    for node in nodes:
        yield node
        yield from _walk(node.children)


def _leaf_schema(platform: str, node: _Node, product_type: str) -> tuple[tuple[AttributeSpec, ...], tuple[str, ...]]:
    rng = random.Random(f"schema:{platform}:{node.category_id}")
    # P1's attributes hang off the product type: categories of one type share the attribute set,
    # and only the closed sets are narrowed per category.
    set_rng = random.Random(f"ptype:{platform}:{product_type}") if platform == "P1" else rng
    pool = [code for code in DEPARTMENT_ATTRIBUTES[node.department] if code not in ("Title", "Brand", "Condition")]
    chosen = set_rng.sample(pool, k=min(len(pool), set_rng.randint(3, 7)))
    attributes = [
        _attr("Title", required=True),
        _attr("Brand", required=set_rng.random() < 0.5),
        _attr("Condition", required=platform == "P1", values=None if rng.random() < 0.6 else ["NEW", "USED"]),
    ]
    for code in chosen:
        values = BASE_ATTRIBUTES[code][2]
        narrowed: list[str] | None = None
        if values and code != "Brand":
            keep = max(2, int(len(values) * rng.uniform(0.4, 1.0)))
            narrowed = sorted(rng.sample([v for v, _ in values], k=min(keep, len(values))))
        attributes.append(_attr(code, required=set_rng.random() < 0.3, values=narrowed))
    if rng.random() < 0.5:
        attributes.append(_app_managed(rng.choice(sorted(APP_MANAGED))))
    off_api = OFF_API_BY_DEPARTMENT.get(platform, {}).get(node.department, ())
    return tuple(attributes), off_api


def _revise(platform: str, revision: int, category: CategorySpec) -> CategorySpec:
    """Revision N's change to one leaf (or the leaf unchanged). Categories' ids and departments never change."""
    if revision <= 1 or category.product_type_code is None:
        return category
    anchors = ANCHOR_IDS[platform]
    if category.category_id == anchors["T-Shirts"]:
        extra = AttributeSpec(
            "SeasonCode",
            "Season Code",
            "Text",
            False,
            (AllowedValue(f"R{revision}", f"Collection {revision}"),),
            True,
        )
        return replace(category, attributes=(*category.attributes, extra))
    if category.category_id in anchors.values():
        return category
    rng = random.Random(f"revision:{platform}:{revision}:{category.category_id}")
    if rng.random() >= 0.03:
        return category
    attributes = list(category.attributes)
    optional = [i for i, a in enumerate(attributes) if not a.is_required and a.api_settable]
    if optional and rng.random() < 0.5:
        i = rng.choice(optional)
        attributes[i] = replace(attributes[i], is_required=True)
    else:
        attributes.append(AttributeSpec("EcoLabel", "Eco Label", "Boolean", False))
    return replace(category, attributes=tuple(attributes))


@lru_cache(maxsize=16)
def generate(platform: str, revision: int = 1, size: int | None = None) -> Taxonomy:
    """The deterministic taxonomy of one marketplace kind (about `size` categories)."""
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}")
    if revision < 1:
        raise ValueError("revision starts at 1")
    size = size or DEFAULT_SIZES[platform]
    anchors = _anchor_schemas()
    categories: list[CategorySpec] = []
    for node in _walk(_build_tree(platform, size)):
        is_leaf = not node.children
        if node.anchor is not None:
            attributes, code, off_api = anchors[node.anchor]
            product_type: str | None = code if platform == "P1" else _category_code(node)
        elif is_leaf:
            product_type = _product_type(platform, node)
            attributes, off_api = _leaf_schema(platform, node, product_type)
        else:
            product_type, attributes, off_api = None, (), ()
        category = CategorySpec(
            category_id=node.category_id,
            parent_id=node.parent.category_id if node.parent else None,
            name=node.name,
            path=node.path,
            depth=node.depth,
            is_leaf=is_leaf,
            department=node.department,
            product_type_code=product_type,
            attributes=attributes,
            off_api_requirements=off_api,
        )
        categories.append(_revise(platform, revision, category))
    return Taxonomy(platform, revision, tuple(categories))


def _category_code(node: _Node) -> str:
    return f"{_slug(node.name)}-{node.category_id[-6:]}"


_NOUN_WORDS = frozenset(word for nouns in NOUNS.values() for noun in nouns for word in noun.split())


def _product_type(platform: str, node: _Node) -> str:
    if platform != "P1":
        return _category_code(node)
    # P1: a product type code shared by every category selling the same kind of thing.
    words = node.name.split()
    noun = next((w for w in words if w in _NOUN_WORDS), words[-1])
    return _code_of(noun)


# --------------------------------------------------------------------------------------------------
# Off-API requirements (pure; the sandbox marketplace and product create both use it)


@lru_cache(maxsize=4)
def _off_api_index(platform: str) -> dict[str, tuple[str, ...]]:
    taxonomy = generate(platform)
    return {c.category_id: c.off_api_requirements for c in taxonomy.categories if c.off_api_requirements}


def off_api_requirements(platform: str, category_id: str | None) -> list[str]:
    """Names of the required things the API cannot carry (e.g. "Images", "BusinessPolicy") for a
    category of the shipped taxonomy of `platform`. Empty for no category or one without any."""
    if category_id is None or platform not in PLATFORMS:
        return []
    return list(_off_api_index(platform).get(category_id, ()))
