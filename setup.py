"""Build hook: setuptools metadata lives in pyproject.toml; this file only adds the cffi C core."""

from setuptools import setup

setup(cffi_modules=["pmsim/cache/_build.py:ffibuilder"])
