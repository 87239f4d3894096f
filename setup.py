"""Compiled kernels are optional: without a C compiler the pure-Python fallbacks serve."""

import sys
from pathlib import Path

from setuptools import Extension, setup


def _libxml2_includes() -> list[str]:
    """lxml's bundled libxml2 headers (visdup._native._term reads the parsed tree through them)."""
    try:
        import lxml
    except ImportError:
        return []
    dirs = list(lxml.get_include())
    if not any((Path(d) / "libxml" / "tree.h").is_file() for d in dirs):
        dirs.append("/usr/include/libxml2")  # lxml built against the system's libxml2
    return dirs


setup(
    ext_modules=[
        Extension(
            "visdup._native._ted",
            ["visdup/_native/_ted.c"],
            depends=["visdup/_native/_mix.h"],
            optional=True,
        ),
        Extension("visdup._native._stm", ["visdup/_native/_stm.c"], optional=True),
        Extension(
            "visdup._native._dom",
            ["visdup/_native/_dom.c"],
            depends=["visdup/_native/_lxml_tree.h", "visdup/_native/_mix.h"],
            optional=True,
        ),
        Extension("visdup._native._text", ["visdup/_native/_text.c"], optional=True),
        Extension("visdup._native._css", ["visdup/_native/_css.c"], optional=True),
        Extension(
            "visdup._native._weights",
            ["visdup/_native/_weights.c"],
            # Python rounds a*b+c twice: a fused multiply-add would choose other elements
            extra_compile_args=[] if sys.platform == "win32" else ["-ffp-contract=off"],
            optional=True,
        ),
        Extension(
            "visdup._native._term",
            ["visdup/_native/_term.c"],
            depends=["visdup/_native/_lxml_tree.h"],
            include_dirs=_libxml2_includes(),
            optional=True,
        ),
    ]
)
