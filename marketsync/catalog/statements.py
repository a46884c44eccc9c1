"""The taxonomy's hand-written statements, both dialects (docs/decisions/0445): category search and its index.

Category search (docs/decisions/0083-category-search.md) matches `name_lower LIKE '%text%'` on both databases; what
finds the candidates differs. PostgreSQL's trigram index (pg_trgm) answers that LIKE itself and follows the table. On
SQLite an FTS5 trigram table (migration 0015) holds each leaf's name, rewritten per site at each import, and a table
of how many leaves hold each trigram (migration 0019) picks the rarest ones to ask it for.

The search's parts are composed at run time (a text or not, a number or not): they have named slots
(`Statement.compose`).
"""

from __future__ import annotations

from marketsync.db.statements import Statement

# The LIKE escape character the texts name (ESCAPE '/'), as SQLAlchemy's `contains(autoescape=True)` uses it.
ESCAPE = "/"

# One page of the site's leaves in tree order (the covering index ix_taxonomy_categories_walk).
LEAVES_PAGE = Statement(
    "catalog.leaves_page",
    sqlite=(
        "SELECT category_id, name, path FROM taxonomy_categories WHERE platform = {platform} AND country = {country} "
        "AND is_leaf = 1 ORDER BY position LIMIT {limit} OFFSET {offset}"
    ),
    postgresql=(
        "SELECT category_id, name, path FROM taxonomy_categories WHERE platform = {platform} AND country = {country} "
        "AND is_leaf = TRUE ORDER BY position LIMIT {limit} OFFSET {offset}"
    ),
)

# The leaves (category_id, position) whose name's key contains the text (a LIKE `pattern`, at least a trigram long).
# SQLite: the FTS5 table narrows the site's leaves to those holding `query`'s trigrams, the LIKE checks them.
# PostgreSQL: the trigram index answers the LIKE; the site is checked on its matches. Apart, so that the plan
# PostgreSQL keeps for this prepared statement (its generic plan, the pattern unknown) reads that index, never the
# walk's index filtered row by row.
LEAVES_CONTAINING = Statement(
    "catalog.leaves_containing",
    sqlite=(
        "SELECT category_id, position FROM taxonomy_category_search WHERE name_lower MATCH {query} "
        "AND platform = {platform} AND country = {country} AND name_lower LIKE {pattern} ESCAPE '/'"
    ),
    postgresql=(
        "SELECT category_id, position FROM (SELECT category_id, position, platform, country "
        "FROM taxonomy_categories WHERE is_leaf AND name_lower LIKE {pattern} ESCAPE '/' "
        "OFFSET 0) AS named WHERE platform = {platform} AND country = {country}"
    ),
)

# The same for a text shorter than a trigram: the site's leaves, each checked.
LEAVES_CONTAINING_SHORT = Statement(
    "catalog.leaves_containing_short",
    sqlite=(
        "SELECT category_id, position FROM taxonomy_categories WHERE platform = {platform} AND country = {country} "
        "AND is_leaf = 1 AND name_lower LIKE {pattern} ESCAPE '/'"
    ),
    postgresql=(
        "SELECT category_id, position FROM taxonomy_categories WHERE platform = {platform} AND country = {country} "
        "AND is_leaf = TRUE AND name_lower LIKE {pattern} ESCAPE '/'"
    ),
)

# The leaf whose id is the text (a number), beside the leaves whose name contains it.
LEAF_WITH_ID = Statement(
    "catalog.leaf_with_id",
    sqlite=(
        "SELECT category_id, position FROM taxonomy_categories WHERE platform = {platform} AND country = {country} "
        "AND is_leaf = 1 AND category_id = {category_id}"
    ),
    postgresql=(
        "SELECT category_id, position FROM taxonomy_categories WHERE platform = {platform} AND country = {country} "
        "AND is_leaf = TRUE AND category_id = {category_id}"
    ),
)

# How many leaves hold each of these trigrams (SQLite; PostgreSQL's index needs no counts).
TRIGRAM_LEAVES = Statement(
    "catalog.trigram_leaves",
    sqlite="SELECT trigram, leaves FROM taxonomy_category_search_trigrams WHERE trigram IN ({marks})",
    postgresql=None,
)

# After an import rewrote a site's categories (SQLAlchemy's named parameters, on the session). PostgreSQL's trigram
# index follows the table by itself, but the planner needs statistics of the new rows (without them a search plans a
# full read: 70 ms instead of 1 on 20,000 categories, until autovacuum comes by); ANALYZE counts the rows this
# transaction wrote. SQLite rewrites the site's rows of the text index from its leaves, then the trigrams' counts from
# the index (every site's: 0.9 s at a million leaves), with the four statements after this one.
CATEGORY_STATISTICS = Statement(
    "catalog.category_statistics",
    sqlite=None,
    postgresql="ANALYZE taxonomy_categories",
)
CLEAR_SITE_SEARCH_ROWS = Statement(
    "catalog.clear_site_search_rows",
    sqlite="DELETE FROM taxonomy_category_search WHERE platform = :platform AND country = :country",
    postgresql=None,
)
FILL_SITE_SEARCH_ROWS = Statement(
    "catalog.fill_site_search_rows",
    sqlite=(
        "INSERT INTO taxonomy_category_search (name_lower, platform, country, category_id, position) "
        "SELECT name_lower, platform, country, category_id, position FROM taxonomy_categories "
        "WHERE platform = :platform AND country = :country AND is_leaf"
    ),
    postgresql=None,
)
CLEAR_TRIGRAM_LEAVES = Statement(
    "catalog.clear_trigram_leaves",
    sqlite="DELETE FROM taxonomy_category_search_trigrams",
    postgresql=None,
)
# From FTS5's view of the index (taxonomy_category_search_vocab: each term and the rows holding it).
FILL_TRIGRAM_LEAVES = Statement(
    "catalog.fill_trigram_leaves",
    sqlite=(
        "INSERT INTO taxonomy_category_search_trigrams (trigram, leaves) "
        "SELECT term, doc FROM taxonomy_category_search_vocab"
    ),
    postgresql=None,
)


# A listing with a change held for its fill-ins (app_fields["Held"]), word for word the predicate of the partial
# index ix_listings_account_held (models/inventory.py), so that the planner takes it: the home page's count and list.
LISTING_HELD_SQLITE = "json_extract(app_fields, '$.Held') IS NOT NULL"
LISTING_HELD_POSTGRES = "(app_fields ->> 'Held') IS NOT NULL"
