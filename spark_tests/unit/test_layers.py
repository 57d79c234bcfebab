"""The package's layers, read from its imports: data flows one way (issue 27). No module imports
one that imports it back, directly or round a loop, and no layer imports one above it:
capture containers -> transports -> CMI assembly -> payload codecs -> Arrow -> engine -> the
Spark classes, the CLI and the notebook helpers."""
from __future__ import annotations

import ast
import os
from typing import Dict, List, Set

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "cmi_datasource")


def module_name(path: str) -> str:
    parts = os.path.relpath(path, ROOT)[:-len(".py")].split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> Dict[str, str]:
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found[module_name(path)] = path
    return found


def imported(name: str, path: str, known: Set[str]) -> Set[str]:
    """The package's modules ``name`` imports when it is imported (imports inside functions, which
    run later, left out; ``if TYPE_CHECKING`` blocks counted: a type is a dependency too)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found: Set[str] = set()
    statements: List[ast.stmt] = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.If):
            statements.extend(node.body + node.orelse)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # "from . import records" imports the module records; "from .errors import X", errors.
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {m for m in found if m in known and m != name}


def graph() -> Dict[str, Set[str]]:
    every = modules()
    return {name: imported(name, path, set(every)) for name, path in every.items()}


def test_no_module_imports_itself_round_a_loop():
    edges = graph()
    state: Dict[str, int] = {}
    loops = []

    def visit(name: str, trail: List[str]) -> None:
        state[name] = 1
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                loops.append(trail[trail.index(target):] + [target] if target in trail else [name, target])
            elif target not in state:
                visit(target, trail + [target])
        state[name] = 2
    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert loops == []


# Each layer, and the layers it must never import (the ones above it).
ABOVE = {
    "cmi_datasource.transports": ("engine", "spark", "cli", "explore"),
    "cmi_datasource.cmi": ("transports", "engine", "spark", "cli", "explore", "payload"),
    "cmi_datasource.payload": ("transports", "engine", "spark", "cli", "explore"),
    "cmi_datasource.arrow": ("transports", "engine", "spark", "cli", "explore", "cmi", "payload"),
    "cmi_datasource.engine": ("spark", "cli", "explore"),
    "cmi_datasource.spark": ("cli", "explore"),
}


def test_no_layer_imports_one_above_it():
    wrong = []
    for name, targets in graph().items():
        for layer, above in ABOVE.items():
            if name == layer or name.startswith(layer + "."):
                wrong += [(name, t) for t in targets if any(t.startswith(f"cmi_datasource.{a}") for a in above)]
    assert wrong == []


def test_only_the_spark_layer_imports_pyspark_when_imported():
    wrong = []
    for name, path in modules().items():
        if name.startswith("cmi_datasource.spark"):
            continue
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            wrong += [(name, n) for n in names if n.split(".")[0] in ("pyspark", "py4j")]
    assert wrong == []
