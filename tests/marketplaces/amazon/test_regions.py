"""The one table of Amazon's sites: Amazon's published marketplace ids and regional endpoints."""

from __future__ import annotations

import pytest

from marketsync.marketplaces.amazon.regions import SITES, UnknownSite, site_for_country, site_for_marketplace


def test_every_site_the_issue_names_with_amazons_marketplace_id_and_region() -> None:
    table = {country: (site.marketplace_id, site.region.code) for country, site in SITES.items()}
    assert table == {
        "UK": ("A1F83G8C2ARO7P", "EU"), "DE": ("A1PA6795UKMFR9", "EU"), "FR": ("A13V1IB3VIYZZH", "EU"),
        "IT": ("APJ6JRA9NG5V4", "EU"), "ES": ("A1RKKUPIHCS9HS", "EU"), "NL": ("A1805IZSGTT6HS", "EU"),
        "SE": ("A2NODRKZP88ZB9", "EU"), "PL": ("A1C3SOZRARQ6R3", "EU"), "BE": ("AMEN7PMS3EDWL", "EU"),
        "US": ("ATVPDKIKX0DER", "NA"), "CA": ("A2EUQ1WTGCTBG2", "NA"), "MX": ("A1AM78C64UM0Y8", "NA"),
        "JP": ("A1VC38T7YXB528", "FE"), "AU": ("A39IBJ37TRP1C6", "FE"),
    }  # fmt: skip


def test_regions_carry_amazons_endpoints() -> None:
    uk, us, jp = site_for_country("uk"), site_for_country("US"), site_for_country("JP")
    assert uk.region.spapi_url == "https://sellingpartnerapi-eu.amazon.com"
    assert us.region.spapi_url == "https://sellingpartnerapi-na.amazon.com"
    assert jp.region.spapi_url == "https://sellingpartnerapi-fe.amazon.com"
    assert (uk.region.aws_region, us.region.aws_region, jp.region.aws_region) == ("eu-west-1", "us-east-1", "us-west-2")
    assert us.region.lwa_url == "https://api.amazon.com/auth/o2/token"
    assert uk.consent_url == "https://sellercentral.amazon.co.uk/apps/authorize/consent"
    assert site_for_marketplace("A1PA6795UKMFR9").country == "DE"
    assert (uk.currency, uk.name, uk.domain) == ("GBP", "Amazon.co.uk", "www.amazon.co.uk")


def test_a_country_amazon_has_no_site_for_is_refused_clearly() -> None:
    with pytest.raises(UnknownSite, match="Amazon has no site for country 'CH'; its sites are UK, DE"):
        site_for_country("CH")
    with pytest.raises(UnknownSite):
        site_for_marketplace("A2Q3Y263D00KWC")  # Brazil: Amazon's, not one this service connects
