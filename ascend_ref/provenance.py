"""Which software produced a result: this package's version and the versions of what computes
with it (JAX, jaxlib -- XLA --, numpy, ml_dtypes, Python), and the JAX backend.

A golden value is compared bit for bit, so a result that differs from last month's should
say what ran: a verify report (its ``reference:`` line, ``--json``'s ``"software"``), each
fuzz run (the ``runs`` table's ``software`` column, shown by the campaign report), golden
files (``DIR/golden.json``) and ``ascend-ref --version`` record it.

>>> sw = software()
>>> sorted(sw)
['ascend_ref', 'jax', 'jaxlib', 'ml_dtypes', 'numpy', 'python']
>>> describe({"ascend_ref": "0.1.0", "jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.4.1",
...           "ml_dtypes": "0.7.0", "python": "3.11.9", "backend": "cpu"})
'ascend_ref 0.1.0, jax 0.10.2, jaxlib 0.10.2, numpy 2.4.1, ml_dtypes 0.7.0, Python 3.11.9 (cpu)'
"""

from __future__ import annotations

import platform
from typing import Dict, Mapping

#: this package's version (``ascend_ref.__version__``); the same as ``pyproject.toml``'s, which
#: the installed distribution reports (tests/test_provenance.py compares them)
VERSION = "0.1.0"

#: the order :func:`describe` names them in
_NAMES = ("ascend_ref", "jax", "jaxlib", "numpy", "ml_dtypes", "python")


def software(backend: bool = False) -> Dict[str, str]:
    """The versions of this package and of what computes its results, by name (the keys of
    the doctest above); ``backend``: also ``"backend"``, JAX's default backend (``cpu``,
    ``gpu``, ...: asking starts it, which ``--version`` does not need)."""
    import jax
    import jaxlib.version
    import ml_dtypes
    import numpy as np

    out = {"ascend_ref": VERSION, "jax": jax.__version__,
           "jaxlib": jaxlib.version.__version__, "numpy": np.__version__,
           "ml_dtypes": ml_dtypes.__version__, "python": platform.python_version()}
    if backend:
        out["backend"] = jax.default_backend()
    return out


def describe(sw: Mapping[str, str]) -> str:
    """One line for a report: the versions in a fixed order, the backend in brackets; a key
    this version does not know (a record from a later one) after them."""
    label = {"python": "Python"}
    parts = [f"{label.get(k, k)} {sw[k]}" for k in _NAMES if k in sw]
    parts += [f"{k} {v}" for k, v in sw.items() if k not in _NAMES and k != "backend"]
    return ", ".join(parts) + (f" ({sw['backend']})" if "backend" in sw else "")
