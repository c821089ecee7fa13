"""Docstrings of the public instruction functions: each ends with its family's worked example.

Every instruction family's module docstring closes with a worked example from its
documentation page (seed 000's WholeReduceMin, ReduceMax.md's 调用示例, ...), run as a
doctest. :func:`with_family_example` appends that example to the docstrings of the public
functions the module defines, so ``help(ar.ascendc.whole_reduce_max)`` shows one without
opening the module; being part of the function's docstring, it runs as a doctest there too.

>>> import ascend_ref as ar
>>> doc = ar.ascendc.whole_reduce_max.__doc__
>>> print("\\n".join(doc[doc.index("Worked example"):].splitlines()[:3]))
Worked example of the family (the docstring of ascend_ref.ascendc.whole_reduce):
<BLANKLINE>
Example (seed 000): 512 halves, repeat 0 all 10 except 1 at lane 52.
"""

from __future__ import annotations

import inspect
import sys
from typing import Callable, Optional, TypeVar

F = TypeVar("F", bound=Callable)

#: how the line that introduces an appended example starts (a docstring that has it has one)
HEADER_START = "Worked example of the family"
#: that line (the module's name follows)
HEADER = HEADER_START + " (the docstring of {module}):"


def family_example(module_doc: str) -> str:
    """The worked example that closes ``module_doc``: its doctest lines from the first
    ``>>>`` to the end, with the paragraph just before them when that paragraph starts with
    ``Example`` (it says where the example comes from).

    >>> family_example('''Sums.
    ...
    ... Example (a page): two ones.
    ...
    ... >>> 1 + 1
    ... 2
    ... ''')
    'Example (a page): two ones.\\n\\n>>> 1 + 1\\n2'
    """
    lines = inspect.cleandoc(module_doc).splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith(">>>")), None)
    if first is None:
        raise ValueError("the module docstring has no worked example (no '>>>' line)")
    start = first
    intro = first - 1
    while intro > 0 and not lines[intro].strip():
        intro -= 1
    while intro > 0 and lines[intro - 1].strip():
        intro -= 1
    if intro >= 0 and lines[intro].startswith("Example"):
        start = intro
    return "\n".join(lines[start:]).rstrip()


def with_family_example(fn: F, module: Optional[str] = None) -> F:
    """Append the worked example of ``module`` (default: the module defining ``fn``) to
    ``fn.__doc__``; once only (a function that has one keeps it). Returns ``fn``."""
    name = module or fn.__module__
    header = HEADER.format(module=name)
    doc = inspect.cleandoc(fn.__doc__ or "")
    if HEADER_START in doc:
        return fn
    example = family_example(sys.modules[name].__doc__ or "")
    fn.__doc__ = f"{doc}\n\n{header}\n\n{example}\n"
    return fn
