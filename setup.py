"""Compiled kernels are optional: without a C compiler the pure-Python fallbacks serve."""

from setuptools import Extension, setup


def _lxml_includes() -> list[str]:
    """lxml's bundled libxml2 headers, which visdup._term reads the parsed tree through."""
    try:
        import lxml
    except ImportError:
        return []
    return list(lxml.get_include())


setup(
    ext_modules=[
        Extension("visdup._ted", ["visdup/_ted.c"], optional=True),
        Extension("visdup._stm", ["visdup/_stm.c"], optional=True),
        Extension(
            "visdup._term", ["visdup/_term.c"], include_dirs=_lxml_includes(), optional=True
        ),
    ]
)
