"""TOML reading for the chip profiles, campaigns and golden files: the standard library's
``tomllib`` (Python >= 3.11), else its backport ``tomli`` (the same API; a dependency only
on Python 3.10, ``pyproject.toml``). A version test, not ``try``/``except ImportError``, so
that a type checker reads the module of the Python it checks for."""

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["tomllib"]
