"""The house's import graph: no module of app/ or graders/ reaches itself through the modules it
imports, and the layers below the web (services, content, the lab, the graders) import nothing of it.

Read from the source with `ast`, so a circle is found even where Python would let it run: every
import counts, at the top of a module or inside a function (a lazy import that dodges the
ImportError still ties the two modules together), except those under `if TYPE_CHECKING:`. An edge
goes to the module an import names: `from app.services import quiz` to app.services.quiz,
`from app.services.mock import Report` to the package app.services.mock.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from app.config import ROOT

PACKAGES = ("app", "graders")

# The web layer: what only the app's routes and its start-up may import.
WEB = ("app.routes", "app.main", "app.deps", "app.web", "app.error_handlers", "fastapi", "starlette")
# The layers below it, which serve the web and the CLI alike.
BELOW_THE_WEB = ("app.services", "app.content", "app.lab", "graders")


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _imports(node.orelse)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from _imports([child])
                elif isinstance(child, ast.ExceptHandler):
                    yield from _imports(child.body)


def imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules `name` imports: those of app/ and graders/ by module, any other by its top name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _imports(ast.parse(path.read_text()).body):
        if isinstance(node, ast.Import):
            found.update(a.name if a.name in known else a.name.split(".")[0] for a in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{anchor}.{base}" if base else anchor
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            found.add(sub if sub in known else base if base in known else base.split(".")[0])
    found.discard(name)
    return found


def graph(known: Mapping[str, Path]) -> dict[str, set[str]]:
    return {name: imported(name, path, known) & set(known) for name, path in known.items()}


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_no_module_reaches_itself_through_its_imports() -> None:
    assert circles(graph(modules())) == []


def test_the_layers_below_the_web_import_nothing_of_it() -> None:
    known = modules()
    back_edges = [
        f"{name} imports {target}"
        for name, path in known.items()
        if _within(name, BELOW_THE_WEB)
        for target in sorted(imported(name, path, known))
        if _within(target, WEB)
    ]
    assert back_edges == []


def test_the_walk_finds_a_circle_and_a_lazy_import(tmp_path: Path) -> None:
    # The check must be able to fail: two modules of a package that import each other, one of them
    # inside a function, and a third under TYPE_CHECKING only (not an edge).
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from app.b import f\n")
    (package / "b.py").write_text("def f():\n    from app import a\n    return a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app import a\n"
    )
    (tmp_path / "graders").mkdir()
    known = modules(tmp_path)
    assert circles(graph(known)) == [["app.a", "app.b"]]
    assert imported("app.c", known["app.c"], known) == {"typing"}
