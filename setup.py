"""Compiled kernels are optional: without a C compiler the pure-Python fallbacks serve."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("visdup._ted", ["visdup/_ted.c"], optional=True),
        Extension("visdup._stm", ["visdup/_stm.c"], optional=True),
    ]
)
