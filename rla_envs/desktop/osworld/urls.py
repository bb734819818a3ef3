"""URL comparison and parsing as OSWorld's Chrome getters and metrics do it (pure functions, no session).

:func:`compare_urls` treats two URLs as the same page when they differ only in a ``www.`` subdomain, the public
suffix (``airbnb.com`` = ``airbnb.com.sg``), a lone trailing ``/`` or a missing scheme (read as ``http``).
The public-suffix list is tldextract's bundled snapshot: nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import ParseResult, parse_qs, unquote, urlparse, urlunparse

__all__ = ["compare_urls", "normalize_url", "lists_match", "query_params", "dash_part", "product_path_params",
           "strip_query"]

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://")


@lru_cache(maxsize=1)
def _extractor() -> Any:
    import tldextract  # imported on first use: it loads the public-suffix snapshot

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def normalize_url(url: str, *, full: bool = True) -> str:
    """``url`` with its host reduced to subdomain + domain (no ``www``, no public suffix) and ``/`` dropped."""
    parsed = urlparse(url if _SCHEME.match(url) else f"http://{url}")
    host = _extractor()(parsed.netloc.lower())
    subdomain = "" if host.subdomain == "www" else host.subdomain
    netloc = f"{subdomain}.{host.domain}" if subdomain else host.domain
    return urlunparse(ParseResult(scheme=parsed.scheme.lower(), netloc=netloc,
                                  path=parsed.path if parsed.path != "/" else "",
                                  params=parsed.params if full else "", query=parsed.query if full else "",
                                  fragment=parsed.fragment if full else ""))


def compare_urls(first: str | None, second: str | None, *, full: bool = True) -> bool:
    """Whether two URLs name the same page (see the module docstring); two Nones are the same."""
    if first is None or second is None:
        return first == second
    return normalize_url(first, full=full) == normalize_url(second, full=full)


def lists_match(expected: Sequence[Any], actual: Sequence[Any], same: Callable[[Any, Any], bool]) -> bool:
    """Equal lengths, and every expected item has a ``same`` item in ``actual`` (OSWorld's ``are_lists_equal``)."""
    return len(expected) == len(actual) and all(any(same(e, a) for a in actual) for e in expected)


def strip_query(url: str) -> str:
    """``url`` without its query string."""
    return urlunparse(urlparse(url)._replace(query=""))


def query_params(url: str, keys: Sequence[str], *, replace: Mapping[str, str] | None = None,
                 split_list: bool = False) -> dict[str, Any]:
    """The first value of each query parameter in ``keys`` (``''`` when absent), keys renamed by ``replace``
    (a renamed key moves to the end), values split on ``,`` with ``split_list``."""
    found = parse_qs(urlparse(url).query)
    params: dict[str, Any] = {key: found.get(key, [""])[0] for key in keys}
    for old, new in (replace or {}).items():
        params[new] = params.pop(old)
    if split_list:
        params = {key: value.split(",") for key, value in params.items()}
    return params


def dash_part(url: str, index: int, *, drop_query: bool = False) -> str | None:
    """The ``index``-th ``/``-separated part of ``url`` (None past the end), without ``?...`` if asked."""
    parts = url.split("/")
    if index >= len(parts):
        return None
    part = parts[index]
    return part.split("?")[0] if drop_query else part


def product_path_params(url: str, keys: Sequence[str]) -> dict[str, Any]:
    """What OSWorld's ``url_path_parse`` reads from a Macy's listing URL: flags for men's clothing, shirts and
    short sleeves, and the ``key1,key2/value1,value2`` facet pairs of its path named in ``keys``."""
    path = unquote(urlparse(url).path)
    parts = path.strip("/").split("/")
    facets: dict[str, Any] = {}
    shirts, short_sleeve = "shirts" in path, "short-sleeve" in path
    for names, values in zip(parts, parts[1:]):
        if "," in names and "," in values:
            for name, value in zip((n.strip() for n in names.split(",")), (v.strip() for v in values.split(","))):
                if name == "Price_discount_range":
                    facets[name] = [item.strip() for item in value.split("|")] if value else None
                else:
                    facets[name] = value or None
                shirts = shirts or (name == "Product_department" and value in ("shirts", "Shirts", "Shirt"))
                short_sleeve = short_sleeve or (name == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve"))
            break
    for name in ("Men_regular_size_t", "Price_discount_range"):
        facets.setdefault(name, None)
    result: dict[str, Any] = {"mens_clothing": True if "mens-clothing" in path else None,
                              "shirts": True if shirts else None, "short_sleeve": True if short_sleeve else None}
    for key in keys:
        if key not in facets:
            continue
        if key == "Price_discount_range":
            ranges = facets[key]
            only_half = (ranges is not None and "50_PERCENT_ off & more" in ranges
                         and "30_PERCENT_ off & more" not in ranges and "20_PERCENT_ off & more" not in ranges)
            result[key] = "50_PERCENT_ off & more" if only_half else "not_50_PERCENT_ off & more"
        else:
            result[key] = facets[key]
    return result
