"""visdup: crawl-time duplicate page detection, site structure auditing and dataset collection."""

from __future__ import annotations

from visdup.structure.term import Term, compress, page_term

__version__ = "0.1.0"

__all__ = ["Term", "__version__", "compress", "page_term", "similarity", "tree_distance"]


def __getattr__(name: str):  # the distance kernels and Scrapy glue load only when used
    if name in {"similarity", "tree_distance"}:
        from visdup.structure import distance

        return getattr(distance, name)
    if name == "Addon":
        from visdup.addon import Addon

        return Addon
    raise AttributeError(name)
