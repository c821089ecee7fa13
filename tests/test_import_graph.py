"""No import circles inside the ``ascend_ref`` package (issue 10, item 6).

The graph is read from the source with :mod:`ast`, not from ``sys.modules``, so a circle
hidden behind a function-level import (the usual way to make one "work") counts too.

What is an edge ``A -> B`` (``A``, ``B`` modules of the package, ``B`` != ``A``):

* ``import ascend_ref.x.y`` anywhere in ``A`` (module level, in a function or a class body):
  ``A -> ascend_ref.x.y``;
* ``from P import n`` (absolute or relative): ``A -> P.n`` if ``P.n`` is a module of the
  package, else ``A -> P`` (``from .. import addressing`` is the module ``addressing``;
  ``from ..case import Case`` is the module ``case``; ``import ascend_ref as ar`` is the
  package facade ``ascend_ref/__init__.py``);
* ``importlib.import_module("ascend_ref.x")`` with a literal name: ``A -> ascend_ref.x``.

Not edges: imports under ``if TYPE_CHECKING:`` (they never run), and the implicit import of
the parent packages that Python performs before any submodule (counting it would make every
package ``__init__`` that imports its own submodules a circle by construction).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import ascend_ref

PACKAGE_DIR = Path(ascend_ref.__file__).resolve().parent

Graph = Dict[str, Dict[str, int]]        # module -> {imported module: first line}


def _modules(pkg_dir: Path) -> Dict[str, Tuple[Path, bool]]:
    """``dotted name -> (file, is_package)`` for every ``.py`` file under ``pkg_dir``."""
    out = {}
    for p in sorted(pkg_dir.rglob("*.py")):
        parts = [pkg_dir.name, *p.relative_to(pkg_dir).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (p, is_pkg)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import-like node of ``tree``, skipping ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(pkg_dir: Path) -> Graph:
    mods = _modules(pkg_dir)
    top = pkg_dir.name
    graph: Graph = {m: {} for m in mods}

    def add(src: str, dst: str, line: int) -> None:
        if dst in mods and dst != src and dst not in graph[src]:
            graph[src][dst] = line

    for name, (path, is_pkg) in mods.items():
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    add(name, a.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != top:
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    add(name, sub if sub in mods else target, node.lineno)
            else:                                    # importlib.import_module("...")
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr == "import_module" and node.args \
                        and isinstance(node.args[0], ast.Constant) \
                        and isinstance(node.args[0].value, str):
                    add(name, node.args[0].value, node.lineno)
    return graph


def find_cycle(graph: Graph) -> Optional[List[str]]:
    """One circle ``[a, b, ..., a]`` of ``graph``, or None if it is acyclic."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {m: WHITE for m in graph}
    for root in sorted(graph):
        if colour[root] != WHITE:
            continue
        path = [root]
        colour[root] = GREY
        iters = [iter(sorted(graph[root]))]
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = BLACK
                iters.pop()
            elif colour[nxt] == GREY:
                return path[path.index(nxt):] + [nxt]
            elif colour[nxt] == WHITE:
                colour[nxt] = GREY
                path.append(nxt)
                iters.append(iter(sorted(graph[nxt])))
    return None


def _describe(graph: Graph, cycle: List[str]) -> str:
    return "\n".join(f"  {a} -> {b}  (line {graph[a][b]} of {a})"
                     for a, b in zip(cycle, cycle[1:]))


def test_ascend_ref_has_no_import_cycle():
    graph = import_graph(PACKAGE_DIR)
    cycle = find_cycle(graph)
    assert cycle is None, "import circle inside ascend_ref:\n" + _describe(graph, cycle)


def test_the_graph_sees_the_package():
    """The walk reads real edges (an empty graph would be trivially acyclic)."""
    graph = import_graph(PACKAGE_DIR)
    assert len(graph) >= 40
    assert "ascend_ref.constraints" in graph["ascend_ref.engine"]          # module level
    assert "ascend_ref.viz" in graph["ascend_ref.explain_cli"]             # function level
    assert "ascend_ref.registry" in graph["ascend_ref.explain"]             # from . import x
    assert "ascend_ref.explain" in graph["ascend_ref"]                     # from . import x
    assert "ascend_ref.fuzz.worker" in graph["ascend_ref.fuzz.comparators"]
    assert "ascend_ref.verify.outcomes" in graph["ascend_ref.verify.audit"]


def _write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root / "pkg"


def test_a_function_level_circle_is_found(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from . import a\n",
        "pkg/a.py": "from .sub import b\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/b.py": "def f():\n    from .. import a\n    return a\n",
    })
    graph = import_graph(pkg)
    assert graph["pkg.sub.b"] == {"pkg.a": 2}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.a"]


def test_an_importlib_circle_is_found(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from . import a\n",
        "pkg/a.py": "import importlib\ndef f():\n    return importlib.import_module('pkg.b')\n",
        "pkg/b.py": "from . import a\n",
    })
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b": 3}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.a"]


def test_facade_import_from_a_submodule_is_a_circle(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from .a import f\n",
        "pkg/a.py": "def f():\n    import pkg as p\n    return p\n",
    })
    assert find_cycle(import_graph(pkg)) == ["pkg", "pkg.a", "pkg"]


def test_type_checking_imports_and_parent_packages_are_not_edges(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from . import a, b\n",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "pkg/b.py": "from .a import x\nimport os\nfrom numpy import int8\n",
    })
    graph = import_graph(pkg)
    assert graph == {"pkg": {"pkg.a": 1, "pkg.b": 1}, "pkg.a": {}, "pkg.b": {"pkg.a": 1}}
    assert find_cycle(graph) is None
