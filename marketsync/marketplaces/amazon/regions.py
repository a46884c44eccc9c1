"""Amazon's sites: country <-> marketplace id <-> selling region, with each region's endpoints. The one table of it.

Sources (docs/decisions/0360): Amazon's "Marketplace IDs" and "SP-API Endpoints" pages of the Selling Partner API
documentation; the LWA token hosts per region from the Login with Amazon documentation; a site's Seller Central host
is where its consent page lives (the website authorisation workflow). Countries are the service's two letters (UK,
not GB).
"""

from __future__ import annotations

from dataclasses import dataclass


class UnknownSite(ValueError):
    """Amazon has no site (marketplace) for that country, or no such marketplace id."""


@dataclass(frozen=True)
class Region:
    code: str  # NA, EU, FE
    spapi_url: str  # production SP-API endpoint
    sandbox_url: str  # Amazon's SP-API sandbox endpoint for the same region
    aws_region: str
    lwa_url: str  # Login with Amazon token endpoint


NA = Region(
    "NA", "https://sellingpartnerapi-na.amazon.com", "https://sandbox.sellingpartnerapi-na.amazon.com", "us-east-1",
    "https://api.amazon.com/auth/o2/token",
)  # fmt: skip
EU = Region(
    "EU", "https://sellingpartnerapi-eu.amazon.com", "https://sandbox.sellingpartnerapi-eu.amazon.com", "eu-west-1",
    "https://api.amazon.co.uk/auth/o2/token",
)  # fmt: skip
FE = Region(
    "FE", "https://sellingpartnerapi-fe.amazon.com", "https://sandbox.sellingpartnerapi-fe.amazon.com", "us-west-2",
    "https://api.amazon.co.jp/auth/o2/token",
)  # fmt: skip
REGIONS = {region.code: region for region in (NA, EU, FE)}


@dataclass(frozen=True)
class Site:
    country: str
    marketplace_id: str
    name: str  # Amazon's marketplace name, e.g. Amazon.co.uk (also its SalesChannel in orders)
    region: Region
    domain: str  # the shop's host
    seller_central: str  # Seller Central for this site: its consent page is {seller_central}/apps/authorize/consent
    currency: str
    language: str  # default language tag, e.g. en_GB

    @property
    def consent_url(self) -> str:
        return f"{self.seller_central}/apps/authorize/consent"


def _site(
    country: str, marketplace_id: str, host: str, region: Region, currency: str, language: str, central: str = ""
) -> Site:
    return Site(
        country=country, marketplace_id=marketplace_id, name=f"Amazon.{host}", region=region,
        domain=f"www.amazon.{host}", seller_central=f"https://{central or 'sellercentral.amazon.' + host}",
        currency=currency, language=language,
    )  # fmt: skip


SITES: dict[str, Site] = {
    site.country: site
    for site in (
        _site("UK", "A1F83G8C2ARO7P", "co.uk", EU, "GBP", "en_GB"),
        _site("DE", "A1PA6795UKMFR9", "de", EU, "EUR", "de_DE"),
        _site("FR", "A13V1IB3VIYZZH", "fr", EU, "EUR", "fr_FR"),
        _site("IT", "APJ6JRA9NG5V4", "it", EU, "EUR", "it_IT"),
        _site("ES", "A1RKKUPIHCS9HS", "es", EU, "EUR", "es_ES"),
        _site("NL", "A1805IZSGTT6HS", "nl", EU, "EUR", "nl_NL"),
        _site("SE", "A2NODRKZP88ZB9", "se", EU, "SEK", "sv_SE"),
        _site("PL", "A1C3SOZRARQ6R3", "pl", EU, "PLN", "pl_PL"),
        _site("BE", "AMEN7PMS3EDWL", "com.be", EU, "EUR", "fr_BE"),
        _site("US", "ATVPDKIKX0DER", "com", NA, "USD", "en_US"),
        _site("CA", "A2EUQ1WTGCTBG2", "ca", NA, "CAD", "en_CA"),
        _site("MX", "A1AM78C64UM0Y8", "com.mx", NA, "MXN", "es_MX"),
        _site("JP", "A1VC38T7YXB528", "co.jp", FE, "JPY", "ja_JP"),
        _site("AU", "A39IBJ37TRP1C6", "com.au", FE, "AUD", "en_AU"),
    )
}
_BY_MARKETPLACE = {site.marketplace_id: site for site in SITES.values()}


def site_for_country(country: str) -> Site:
    """The site of a country (UK, DE, ...); UnknownSite names the countries Amazon is connected for."""
    site = SITES.get(country.upper())
    if site is None:
        raise UnknownSite(f"Amazon has no site for country {country!r}; its sites are {', '.join(SITES)}")
    return site


def site_for_marketplace(marketplace_id: str) -> Site:
    site = _BY_MARKETPLACE.get(marketplace_id)
    if site is None:
        raise UnknownSite(f"{marketplace_id!r} is not the marketplace id of an Amazon site this service knows")
    return site
