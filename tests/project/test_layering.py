"""kbkit's parts import downward only (docs/adr/0020-layering.md), no two modules import each other
(0050), and only kbkit/kb/ speaks SQL.

Every import in kbkit/ counts: module level, inside a function (a lazy import is still a
dependency), and under `if TYPE_CHECKING:` (a type is a dependency too; none is exempt).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from kbkit.catalog.filetypes import READERS
from tests.helpers.paths import PACKAGE

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        ("kbkit", "kbkit.errors", "kbkit.fsutil", "kbkit.shipped", "kbkit.runtime", "kbkit.catalog"),
    ),
    ("config", ("kbkit.config",)),
    ("kb", ("kbkit.kb",)),
    ("skills", ("kbkit.skills",)),
    ("sync", ("kbkit.sync", "kbkit.scaffold")),
    ("server", ("kbkit.server",)),
    ("diagnostics", ("kbkit.diagnostics",)),
    ("cli", ("kbkit.cli",)),
    ("entry", ("kbkit.entry", "kbkit.__main__")),
)
"""Low to high. A module may import its own layer and any layer below, never one above."""


def layer_of(module: str) -> int:
    """The index of `module`'s layer: the part whose name is the longest prefix of it."""
    best: tuple[int, int] | None = None
    for rank, (_, parts) in enumerate(LAYERS):
        for part in parts:
            matches = module == part if part == "kbkit" else module == part or module.startswith(part + ".")
            if matches and (best is None or len(part) > best[1]):
                best = (rank, len(part))
    if best is None:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and docs/adr/0020-layering.md")
    return best[0]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = PACKAGE) -> Iterator[tuple[int, str]]:
    """(line, module) for every kbkit module `path` imports, wherever the import statement is."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from kbkit import errors` imports the module kbkit.errors, not the package
            names = [
                f"{target}.{alias.name}" if _is_module(f"{target}.{alias.name}", root) else target
                for alias in node.names
            ]
        else:
            continue
        for name in dict.fromkeys(names):
            if name == "kbkit" or name.startswith("kbkit."):
                yield node.lineno, name


def _is_module(name: str, root: Path) -> bool:
    path = root.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources(package: Path = PACKAGE) -> list[Path]:
    return sorted(package.rglob("*.py"))


def upward_edges(package: Path = PACKAGE) -> list[str]:
    edges = []
    for path in sources(package):
        here = module_name(path, package)
        for line, target in imports(path, package):
            if layer_of(target) > layer_of(here):
                edges.append(
                    f"{path.relative_to(package.parent)}:{line}: {here} ({LAYERS[layer_of(here)][0]}) imports "
                    f"{target} ({LAYERS[layer_of(target)][0]})"
                )
    return edges


def test_every_module_belongs_to_a_layer() -> None:
    for path in sources():
        layer_of(module_name(path))


def test_no_part_imports_a_part_above_it() -> None:
    assert upward_edges() == []


def test_the_walk_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """The check fails on an upward edge hidden in a function or under TYPE_CHECKING, and names it."""
    fake = tmp_path / "kbkit"
    (fake / "config").mkdir(parents=True)
    (fake / "cli").mkdir()
    for folder in (fake, fake / "config", fake / "cli"):
        (folder / "__init__.py").write_text("")
    (fake / "cli" / "main.py").write_text("from kbkit import config\n")
    (fake / "config" / "model.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from kbkit.cli import main\n"
        "def names():\n    from ..cli.main import x\n    return x\n"
    )
    assert upward_edges(fake) == [
        "kbkit/config/model.py:3: kbkit.config.model (config) imports kbkit.cli.main (cli)",
        "kbkit/config/model.py:5: kbkit.config.model (config) imports kbkit.cli.main (cli)",
    ]


def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, str]]:
    """module -> {module it imports: where (path:line)}, for every import statement in kbkit/."""
    graph: dict[str, dict[str, str]] = {}
    for path in sources(package):
        here = module_name(path, package)
        edges = graph.setdefault(here, {})
        for line, target in imports(path, package):
            if target != here:
                edges.setdefault(target, f"{path.relative_to(package.parent)}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan's algorithm), as the
    import statements that tie it together, one line each."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in sorted(graph.get(module, {})):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = set()
            while not component or module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(
                    [
                        f"{where}: {source} imports {target}"
                        for source in sorted(component)
                        for target, where in sorted(graph[source].items())
                        if target in component
                    ]
                )

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_no_two_kbkit_modules_import_each_other_even_lazily() -> None:
    """A cycle through a function-level or TYPE_CHECKING import is a cycle too: the modules cannot
    be read, tested or moved apart. The registry imports each reader by the name
    kbkit/catalog/filetypes.py gives it: those imports count too."""
    graph = import_graph()
    graph["kbkit.kb.formats.registry"].update(
        {f"kbkit.kb.formats.{spec.rpartition('.')[0]}": "READERS" for spec in READERS.values()}
    )
    assert cycles(graph) == []


def test_the_cycle_check_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    fake = tmp_path / "kbkit"
    (fake / "kb" / "formats").mkdir(parents=True)
    for folder in (fake, fake / "kb", fake / "kb" / "formats"):
        (folder / "__init__.py").write_text("")
    (fake / "kb" / "parsers.py").write_text("from kbkit.kb.formats.extractors import EXTRACTORS\n")
    (fake / "kb" / "formats" / "extractors.py").write_text("EXTRACTORS = {}\n")
    (fake / "kb" / "formats" / "html.py").write_text(
        "def parse_html(data):\n    from kbkit.kb.formats import extractors\n    return extractors\n"
    )
    assert cycles(import_graph(fake)) == []  # a chain is not a cycle
    (fake / "kb" / "formats" / "extractors.py").write_text(
        "EXTRACTORS = {}\ndef parse_html(data):\n    from kbkit.kb.parsers import ParsedText\n"
    )
    assert cycles(import_graph(fake)) == [
        [
            "kbkit/kb/formats/extractors.py:3: kbkit.kb.formats.extractors imports kbkit.kb.parsers",
            "kbkit/kb/parsers.py:1: kbkit.kb.parsers imports kbkit.kb.formats.extractors",
        ]
    ]


SQL = re.compile(
    r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET|"
    r"CREATE\s+(VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)|DROP\s+TABLE|PRAGMA\s+\w+|BEGIN\s+IMMEDIATE)\b",
    re.IGNORECASE,
)
"""What a statement for SQLite looks like inside a string literal."""


def sql_outside_kb(package: Path) -> list[str]:
    """`import sqlite3`, a `.execute(` call or SQL text in a module outside kbkit/kb/."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.is_relative_to(package / "kb"):
            continue
        where = path.relative_to(package.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "sqlite3" for a in node.names):
                found.append(f"{where}:{node.lineno}: import sqlite3")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3":
                found.append(f"{where}:{node.lineno}: from sqlite3 import")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "executescript")
            ):
                found.append(f"{where}:{node.lineno}: .{node.func.attr}(...)")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
                found.append(f"{where}:{node.lineno}: SQL text {node.value[:40]!r}")
    return found


def test_only_the_kb_part_speaks_sql() -> None:
    assert sql_outside_kb(PACKAGE) == []


def test_the_sql_check_finds_each_kind(tmp_path: Path) -> None:
    (tmp_path / "kbkit" / "cli").mkdir(parents=True)
    (tmp_path / "kbkit" / "kb").mkdir()
    (tmp_path / "kbkit" / "kb" / "store.py").write_text("import sqlite3\nQ = 'SELECT path FROM documents'\n")
    (tmp_path / "kbkit" / "cli" / "index.py").write_text(
        "def skipped(store):\n"
        "    import sqlite3\n"
        "    return store.reader().execute('SELECT path, reason FROM skipped')\n"
    )
    assert sql_outside_kb(tmp_path / "kbkit") == [
        "kbkit/cli/index.py:2: import sqlite3",
        "kbkit/cli/index.py:3: .execute(...)",
        "kbkit/cli/index.py:3: SQL text 'SELECT path, reason FROM skipped'",
    ]


def test_every_module_imports() -> None:
    """A name moved between layers is found here, not by the first command that needs it."""
    import importlib

    for path in sources():
        name = module_name(path)
        if name != "kbkit.__main__":  # runs the CLI
            importlib.import_module(name)
