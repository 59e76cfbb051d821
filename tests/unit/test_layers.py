"""The package's layering, checked on the source (stdlib ``ast``, nothing imported).

Layers, lowest first: model < syntax < dump < features < analysis < lsp < cli. A module may
import its own layer and lower ones. Every ``import`` counts: at module level,
inside functions, under ``if TYPE_CHECKING:``, relative imports, and
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name
(a computed name, such as the handler scan in ``lsp/server.py``, is not seen).

Rules, each named in the failure message as ``file:line: [rule] ...``:

- ``layers``: no import runs upward. ``hlo_lsp/__init__.py`` and
  ``hlo_lsp/__main__.py`` are top-level glue: ``__init__`` imports nothing (so
  ``from hlo_lsp import __version__`` is allowed anywhere), ``__main__`` may
  import cli; nothing imports ``__main__``. A module outside the layers is an error.
- ``pygls``: pygls/lsprotocol only in ``hlo_lsp/lsp/`` and ``hlo_lsp/cli/``;
  ``hlo_lsp/analysis/`` (open documents, their analyses, the work queue) is
  below the protocol adapter and imports neither.
- ``lark``: lark (and lark_cython) only in ``hlo_lsp/syntax/``.
- ``jax``: jax/jaxlib (``jax._src``) only in ``hlo_lsp/syntax/xla.py`` (XLA's
  parser in a worker process), ``hlo_lsp/dump/xplane.py`` (a profile's xplane
  read through ``jax.profiler.ProfileData`` in a worker process) and the
  runners that execute INSIDE the user's JAX program, started as scripts by the
  program's own interpreter: ``hlo_lsp/dump/deviceless.py`` (compiles for a GPU
  without it; issue 10) and ``hlo_lsp/dump/profiling_hook.py`` (traces its
  jitted calls; issue 43). The two worker modules are imported by the server:
  their jax imports are inside functions (the worker's), never at module level
  (``jax-worker``).
- ``runner``: each runner imports only the standard library, jax/jaxlib, numpy
  and its siblings ``hlo_lsp/dump/runner_support.py`` and
  ``hlo_lsp/dump/xla_flags.py`` (it runs where hlo-lsp may not be installed and
  imports them as the files beside it), and no module of the package imports it
  (the server never loads jax that way). The siblings import only the standard
  library and each other (and ``runner_support``, inside the program, jax).
- ``jax-private``: JAX's private API (``jax._src``) only in
  ``hlo_lsp/syntax/xla.py`` (XLA's parser and cost analysis, which jax exposes
  nowhere else); the runners use ``jax.extend``.
- ``model-stdlib``: ``hlo_lsp/model/`` imports only the standard library (and,
  by ``layers``, itself and the glue ``hlo_lsp``).
- ``pygls-internals``: a pygls private name read, or a pygls method overridden,
  only in ``hlo_lsp/lsp/pygls_adapter.py``.
- ``handlers``: ``hlo_lsp/lsp/handlers/`` only converts (issue 42): no call
  that chooses a thread, no lease, derived value or work-queue call (the
  host's snapshot answers), no module-level mutable state, every handler
  registered through its row of ``lsp.dispatch.ROUTES`` and at most
  :data:`MAX_HANDLER_LINES` lines long.
"""

from __future__ import annotations

import ast
import pathlib
import sys
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "hlo_lsp"
LAYERS = ("model", "syntax", "dump", "features", "analysis", "lsp", "cli")
RANK = {name: i for i, name in enumerate(LAYERS)}
GLUE_INIT, GLUE_MAIN = "<__init__>", "<__main__>"
RANK[GLUE_MAIN] = len(LAYERS)  # above cli: may import everything, imported by nothing

PYGLS = ("pygls", "lsprotocol")
LARK = ("lark", "lark_cython")
JAX = ("jax", "jaxlib")
RUNNERS = {f"{PACKAGE}/dump/deviceless.py": f"{PACKAGE}.dump.deviceless",
           f"{PACKAGE}/dump/profiling_hook.py": f"{PACKAGE}.dump.profiling_hook"}
JAX_MODULES = (f"{PACKAGE}/syntax/xla.py", f"{PACKAGE}/dump/xplane.py", *RUNNERS,
               f"{PACKAGE}/dump/runner_support.py")
#: Modules the server imports that run jax in a worker process only.
JAX_WORKERS = (f"{PACKAGE}/syntax/xla.py", f"{PACKAGE}/dump/xplane.py")
RUNNER = f"{PACKAGE}/dump/deviceless.py"
HOOK = f"{PACKAGE}/dump/profiling_hook.py"
#: The files the runners load beside them (bare names when run as scripts).
RUNNER_SIBLINGS = {f"{PACKAGE}/dump/runner_support.py": "runner_support",
                   f"{PACKAGE}/dump/xla_flags.py": "xla_flags"}
#: The one module using JAX's private API.
JAX_PRIVATE = f"{PACKAGE}/syntax/xla.py"

# Violations found in modules this test does not own, accepted for now:
# (path relative to the repository, rule) -> why. Each entry must still occur
# (a fixed one fails the test until it is removed from here).
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Violation:
    path: str  # relative to the repository, e.g. "hlo_lsp/model/hlo.py"
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"


def _module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer_of_file(path: str) -> str | None:
    """The layer of a file under hlo_lsp/, a glue marker, or None (outside the layers)."""
    parts = path.split("/")
    if parts == [PACKAGE, "__init__.py"]:
        return GLUE_INIT
    if parts == [PACKAGE, "__main__.py"]:
        return GLUE_MAIN
    return parts[1] if len(parts) > 2 and parts[1] in RANK else None


def _layer_of_module(name: str) -> str | None:
    """The layer an ``hlo_lsp`` module belongs to; GLUE_INIT for the package itself."""
    parts = name.split(".")
    if len(parts) == 1:
        return GLUE_INIT
    if parts[1] == "__main__":
        return GLUE_MAIN
    return parts[1] if parts[1] in LAYERS else None


def _sibling(name: str) -> bool:
    """``name`` is a runner's sibling file, by its bare name (a runner run as a
    script) or in the package (``from hlo_lsp.dump import runner_support``
    yields ``hlo_lsp.dump.runner_support``)."""
    return any(_is(name, (bare, f"{PACKAGE}.dump.{bare}")) for bare in RUNNER_SIBLINGS.values())


def _is(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def _from_target(node: ast.ImportFrom, package: str) -> str:
    """The absolute module of ``from X import ...`` (relative forms resolved
    against ``package``)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in ``tree``, at any depth.

    ``from X import a`` yields ``X.a`` when X is this package's root (where ``a``
    may be a layer) or a module in it (where ``a`` may be a module), and ``X``
    otherwise (enough to place it in a layer)."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            if target == PACKAGE:
                for alias in node.names:
                    sub = f"{PACKAGE}.{alias.name}"
                    found.append((node.lineno, sub if _layer_of_module(sub) else PACKAGE))
            elif target.startswith(PACKAGE + "."):  # a module of a layer, or a name in one
                found.extend((node.lineno, f"{target}.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, target))
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return sorted(found, key=lambda f: f[0])


def _runner_imports(tree: ast.AST, module: str, is_package: bool,
                    runner_module: str) -> list[int]:
    """Lines importing ``runner_module`` (``import hlo_lsp.dump.deviceless``,
    ``from hlo_lsp.dump import deviceless``, relative forms, ``import_module``)."""
    package = module if is_package else module.rpartition(".")[0]
    lines = [line for line, name in _imports(tree, module, is_package)
             if name == runner_module or name.startswith(runner_module + ".")]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            if any(f"{target}.{a.name}" == runner_module for a in node.names):
                lines.append(node.lineno)
    return sorted(set(lines))


def check_source(path: str, source: str) -> list[Violation]:
    """The violations in one module; ``path`` is relative to the repository
    (``hlo_lsp/<layer>/....py``)."""
    tree = ast.parse(source, filename=path)
    module = _module_name(path)
    layer = _layer_of_file(path)
    out: list[Violation] = []

    def bad(line: int, rule: str, message: str) -> None:
        out.append(Violation(path, line, rule, message))

    if layer is None:
        bad(1, "layers", f"module outside the layers {LAYERS} (or __init__/__main__)")
    in_functions = {n.lineno for f in ast.walk(tree)
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom, ast.Call))}
    for line, name in _imports(tree, module, path.endswith("__init__.py")):
        top = name.split(".")[0]
        if name == "__future__":
            continue
        if layer == GLUE_INIT:
            bad(line, "layers", f"hlo_lsp/__init__.py imports nothing, but imports {name}")
        if top == PACKAGE and layer not in (None, GLUE_INIT):
            target = _layer_of_module(name)
            if target is None:
                bad(line, "layers", f"imports {name}, which is in no layer")
            elif target != GLUE_INIT and RANK[target] > RANK[layer]:
                bad(line, "layers", f"{layer} imports {name} ({target.strip('<>')}), "
                                    f"a higher layer (order: {' < '.join(LAYERS)})")
        if _is(name, PYGLS) and layer not in ("lsp", "cli"):
            bad(line, "pygls", f"imports {name}: pygls/lsprotocol only in hlo_lsp/lsp/ "
                               "and hlo_lsp/cli/")
        if _is(name, LARK) and layer != "syntax":
            bad(line, "lark", f"imports {name}: lark only in hlo_lsp/syntax/")
        if _is(name, JAX) and path not in JAX_MODULES:
            bad(line, "jax", f"imports {name}: jax/jaxlib only in {' and '.join(JAX_MODULES)}")
        if _is(name, JAX) and path in JAX_WORKERS and line not in in_functions:
            bad(line, "jax-worker", f"imports {name} at module level: the server imports "
                                    f"{path}; jax only inside its worker's functions")
        if path in RUNNERS and top not in sys.stdlib_module_names and top not in (
                *JAX, "numpy") and not _sibling(name):
            bad(line, "runner", f"imports {name}: the runner {path} imports only the "
                                "standard library, jax/jaxlib, numpy and "
                                f"{' and '.join(RUNNER_SIBLINGS)}")
        if path in RUNNER_SIBLINGS and top not in sys.stdlib_module_names and \
                not _sibling(name) and not (_is(name, JAX) and path in JAX_MODULES):
            bad(line, "runner", f"imports {name}: {path} is loaded by the runners, where "
                                "hlo-lsp may not be installed: only the standard library, "
                                f"{' and '.join(RUNNER_SIBLINGS)} (and jax, in runner_support)")
        if _is(name, ("jax._src",)) and path != JAX_PRIVATE:
            bad(line, "jax-private", f"imports {name}: JAX's private API only in "
                                     f"{JAX_PRIVATE}")
        if layer == "model" and top not in sys.stdlib_module_names and top != PACKAGE:
            # (hlo_lsp modules: the ``layers`` rule keeps model to itself)
            bad(line, "model-stdlib", f"imports {name}: hlo_lsp/model/ imports only "
                                      "the standard library")
    for runner, runner_module in RUNNERS.items():
        if path == runner:
            continue
        for line in _runner_imports(tree, module, path.endswith("__init__.py"), runner_module):
            bad(line, "runner", f"imports {runner_module}: the runner runs "
                                "inside the user's program, never in hlo-lsp's processes")
    return out


def package_files() -> list[pathlib.Path]:
    return sorted((ROOT / PACKAGE).rglob("*.py"))


def check_package() -> list[Violation]:
    out: list[Violation] = []
    for file in package_files():
        path = file.relative_to(ROOT).as_posix()
        out.extend(check_source(path, file.read_text(encoding="utf-8")))
    return out


# --- the package --------------------------------------------------------------------

def test_the_package_respects_its_layers():
    violations = check_package()
    new = [v for v in violations if (v.path, v.rule) not in KNOWN_EXCEPTIONS]
    assert not new, "layering violations:\n" + "\n".join(map(str, new))


def test_known_exceptions_still_occur():
    seen = {(v.path, v.rule) for v in check_package()}
    stale = [f"{p} [{r}]" for p, r in KNOWN_EXCEPTIONS if (p, r) not in seen]
    assert not stale, "fixed: remove from KNOWN_EXCEPTIONS: " + ", ".join(stale)


def test_runner_rules_catch_violations():
    assert [v.rule for v in check_source(RUNNER, "import jax\nimport numpy\nimport json\n")] == []
    assert [v.rule for v in check_source(RUNNER, "from hlo_lsp.dump import names\n")] == ["runner"]
    for source in ("from hlo_lsp.dump import deviceless\n", "import hlo_lsp.dump.deviceless\n",
                   "from . import deviceless\n"):
        where = f"{PACKAGE}/dump/targets.py" if source.startswith("from .") else \
            f"{PACKAGE}/lsp/server.py"
        assert [v.rule for v in check_source(where, source)] == ["runner"], source
    assert [v.rule for v in check_source(f"{PACKAGE}/dump/targets.py", "import jax\n")] == ["jax"]


def test_runners_load_only_their_siblings_and_no_jax_private_api():
    # Session 28: what both runners share is one file beside them, and jax._src is
    # touched in one module only (the guide: "Keep every jax._src touch in one module").
    for runner in RUNNERS:
        for source in ("import runner_support\n",
                       "from hlo_lsp.dump import runner_support as support\n"):
            assert [v.rule for v in check_source(runner, source)] == [], (runner, source)
        assert [v.rule for v in check_source(runner, "from hlo_lsp.dump import names\n")] == \
            ["runner"]
        assert [v.rule for v in check_source(runner, "from jax._src import core\n")] == \
            ["jax-private"]
    support = f"{PACKAGE}/dump/runner_support.py"
    assert [v.rule for v in check_source(support, "import json\nfrom xla_flags import x\n"
                                                   "from hlo_lsp.dump.xla_flags import x\n")] == []
    assert [v.rule for v in check_source(support, "import numpy\n")] == ["runner"]
    assert [v.rule for v in check_source(support, "from hlo_lsp.dump import names\n")] == \
        ["runner"]
    assert [v.rule for v in check_source(f"{PACKAGE}/dump/xla_flags.py",
                                         "from hlo_lsp.model import units\n")] == ["runner"]
    assert [v.rule for v in check_source(JAX_PRIVATE, "def f():\n    import jax._src.lib\n")] \
        == []


def test_the_profiling_hook_is_a_runner_too():
    # Issue 43: the hook runs inside the user's program, like the deviceless runner.
    assert [v.rule for v in check_source(HOOK, "import jax\nimport jax.profiler\n"
                                               "import json\n")] == []
    assert [v.rule for v in check_source(HOOK, "from hlo_lsp.dump import names\n")] == ["runner"]
    for source in ("from hlo_lsp.dump import profiling_hook\n",
                   "import hlo_lsp.dump.profiling_hook\n", "from . import profiling_hook\n"):
        where = f"{PACKAGE}/dump/capture.py" if source.startswith("from .") else \
            f"{PACKAGE}/lsp/server.py"
        assert [v.rule for v in check_source(where, source)] == ["runner"], source


def test_every_module_is_seen():
    paths = {f.relative_to(ROOT).as_posix() for f in package_files()}
    assert len(paths) > 40
    for layer in LAYERS:
        assert f"{PACKAGE}/{layer}/__init__.py" in paths
    assert f"{PACKAGE}/syntax/xla.py" in paths and f"{PACKAGE}/cli/demo.py" in paths


def test_every_command_module_is_registered():
    """``hlo-lsp`` lists its subcommand modules explicitly: a module in
    hlo_lsp/cli/commands/ that is not in that list is never reachable."""
    from hlo_lsp.cli.main import _command_modules
    on_disk = {f.stem for f in (ROOT / PACKAGE / "cli" / "commands").glob("*.py")} - {"__init__"}
    assert {m.__name__.rpartition(".")[2] for m in _command_modules()} == on_disk


# --- the checker itself: it must be able to fail -------------------------------------

def _rules(path: str, source: str) -> list[tuple[int, str]]:
    return [(v.line, v.rule) for v in check_source(path, source)]


def test_checker_reports_an_upward_import():
    source = "import re\n\ndef f():\n    from hlo_lsp.lsp.server import server\n"
    (v,) = check_source("hlo_lsp/model/x.py", source)
    assert (v.line, v.rule) == (4, "layers")
    assert str(v).startswith("hlo_lsp/model/x.py:4: [layers] model imports hlo_lsp.lsp.server")


def test_checker_reports_pygls_outside_lsp_and_cli():
    source = "from __future__ import annotations\nfrom pygls.lsp.server import LanguageServer\n" \
             "import lsprotocol.types as t\n"
    assert _rules("hlo_lsp/features/x.py", source) == [(2, "pygls"), (3, "pygls")]
    assert _rules("hlo_lsp/lsp/x.py", source) == []
    assert _rules("hlo_lsp/cli/x.py", source) == []
    assert _rules("hlo_lsp/analysis/documents.py", source) == [(2, "pygls"), (3, "pygls")]


def test_checker_sees_type_checking_relative_and_dynamic_imports():
    source = ("from typing import TYPE_CHECKING\nimport importlib\n"
              "if TYPE_CHECKING:\n    from ..features import hover\n"
              "from . import chunks\n"
              "def g():\n    return importlib.import_module('hlo_lsp.dump.index')\n")
    assert _rules("hlo_lsp/syntax/x.py", source) == [(4, "layers"), (7, "layers")]
    # relative imports resolve against the package (an __init__ is its own package)
    assert _rules("hlo_lsp/syntax/__init__.py", "from .parser import parse\n") == []
    assert _rules("hlo_lsp/dump/__init__.py", "from ..lsp import server\n") == [(1, "layers")]
    assert _rules("hlo_lsp/model/__init__.py", "from hlo_lsp import cli\n") == [(1, "layers")]


def test_checker_rules_for_third_party_and_glue():
    assert _rules("hlo_lsp/features/x.py", "import lark\n") == [(1, "lark")]
    assert _rules("hlo_lsp/syntax/parser.py", "import lark, lark_cython\n") == []
    assert _rules("hlo_lsp/syntax/parser.py", "from jax._src.lib import xla_client\n") == \
        [(1, "jax"), (1, "jax-private")]
    assert _rules("hlo_lsp/syntax/xla.py", "from jax._src.lib import xla_client\n") == \
        [(1, "jax-worker")]
    assert _rules("hlo_lsp/syntax/xla.py", "def f():\n    from jax._src.lib import xla_client\n"
                  ) == []
    assert _rules("hlo_lsp/dump/xplane.py", "import jax\ndef f():\n    import jax.profiler\n"
                  ) == [(1, "jax-worker")]
    assert _rules("hlo_lsp/dump/profiles.py", "def f():\n    import jax\n") == [(2, "jax")]
    assert _rules("hlo_lsp/model/x.py", "import json, numpy\n") == [(1, "model-stdlib")]
    assert _rules("hlo_lsp/features/x.py", "from hlo_lsp import __version__\n") == []
    assert _rules("hlo_lsp/__init__.py", "import os\n") == [(1, "layers")]
    assert _rules("hlo_lsp/__main__.py", "from hlo_lsp.cli.main import main\n") == []
    assert _rules("hlo_lsp/cli/x.py", "import hlo_lsp.__main__\n") == [(1, "layers")]
    assert _rules("hlo_lsp/cli/x.py", "from hlo_lsp.examples import y\n") == [(1, "layers")]
    assert _rules("hlo_lsp/stray.py", "") == [(1, "layers")]


@pytest.mark.parametrize("path", ["hlo_lsp/model/x.py", "hlo_lsp/syntax/x.py",
                                  "hlo_lsp/dump/x.py", "hlo_lsp/features/x.py",
                                  "hlo_lsp/analysis/x.py"])
def test_checker_lower_layers_cannot_reach_cli(path):
    assert _rules(path, "from hlo_lsp.cli import main\n")[0] == (1, "layers")


# --- the protocol adapter: pygls internals in one module, handlers convert only -----

ADAPTER = f"{PACKAGE}/lsp/pygls_adapter.py"
HANDLERS = f"{PACKAGE}/lsp/handlers/"
#: Calls that choose a thread: in hlo_lsp/analysis/ (which owns the threads),
#: never in a handler.
OFF_LOOP_CALLS = ("to_thread", "run_in_executor", "in_thread", "in_pool")
#: Methods that do the analysis' work (a lease on an analysis, a value derived
#: from it, the work queue): a handler asks the host's snapshot instead.
ANALYSIS_CALLS = ("lease", "derive", "work")
#: A handler's body, its docstring left out, is at most this many lines (issue
#: 42: "no handler body longer than about 25 lines").
MAX_HANDLER_LINES = 25
#: Registering a handler directly on the server: handlers register through
#: their row of lsp.dispatch.ROUTES (``route``), which gives the thread and the
#: answer on failure.
DIRECT_REGISTRATION = ("feature", "command")
#: Constructors of mutable containers: module-level state when assigned at
#: module level.
MUTABLE_CALLS = ("set", "dict", "list", "defaultdict", "deque", "OrderedDict", "Counter",
                 "TTLCache", "LRUCache", "Cache", "WeakValueDictionary", "WeakSet")


def _pygls_private_names() -> frozenset[str]:
    """Every ``_name`` (not dunder) pygls defines: its methods and the attributes
    its classes assign on ``self`` (read from pygls' installed source)."""
    import pygls

    names: set[str] = set()
    for file in pathlib.Path(pygls.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            name = None
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "self" and isinstance(node.ctx, ast.Store):
                name = node.attr
            if name and name.startswith("_") and not name.startswith("__"):
                names.add(name)
    return frozenset(names)


def _own_private_names(tree: ast.AST) -> set[str]:
    """The ``_names`` a module defines itself (methods, ``self._x = ...``)."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
    return own


def _pygls_bases(tree: ast.AST) -> dict[str, type]:
    """Names imported from pygls in this module that are classes: name -> class."""
    import importlib

    out: dict[str, type] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _is(node.module, ("pygls",)):
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if isinstance(value, type):
                    out[alias.asname or alias.name] = value
    return out


def check_adapter_rules(path: str, source: str,
                        pygls_private: frozenset[str] | None = None) -> list[Violation]:
    """The ``pygls-internals`` rule (outside :data:`ADAPTER`: no pygls private
    name read on an object, no pygls method overridden but ``__init__``) and,
    in ``hlo_lsp/lsp/handlers/``, the ``handlers`` rule (no off-loop call, no
    module-level mutable state)."""
    tree = ast.parse(source, filename=path)
    out: list[Violation] = []
    if path != ADAPTER and path.startswith(f"{PACKAGE}/lsp/"):
        private = _pygls_private_names() if pygls_private is None else pygls_private
        own = _own_private_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in private \
                    and node.attr not in own:
                out.append(Violation(path, node.lineno, "pygls-internals",
                                     f"reads pygls' {node.attr}: only in {ADAPTER}"))
        bases = _pygls_bases(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                cls = bases.get(base.id) if isinstance(base, ast.Name) else None
                if cls is None:
                    continue
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                            and item.name != "__init__" and hasattr(cls, item.name):
                        out.append(Violation(path, item.lineno, "pygls-internals",
                                             f"overrides pygls' {cls.__name__}.{item.name}: "
                                             f"only in {ADAPTER}"))
    if path.startswith(HANDLERS):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in OFF_LOOP_CALLS:
                    out.append(Violation(path, node.lineno, "handlers",
                                         f"{name}: a handler does not choose a thread "
                                         "(hlo_lsp/analysis/ owns them)"))
                elif name in ANALYSIS_CALLS and isinstance(func, ast.Attribute):
                    out.append(Violation(path, node.lineno, "handlers",
                                         f".{name}(): the analysis' work, asked of the "
                                         "host's snapshot (hlo_lsp/analysis/host.py)"))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.extend(_handler_violations(path, node))
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            mutable = isinstance(value, (ast.Set, ast.Dict, ast.List, ast.SetComp,
                                         ast.DictComp, ast.ListComp))
            if isinstance(value, ast.Call):
                func = value.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                mutable = name in MUTABLE_CALLS
            if mutable:
                out.append(Violation(path, node.lineno, "handlers",
                                     "module-level mutable state: it belongs to the "
                                     "server or the analysis layer"))
    return out


def _handler_violations(path: str, fn: ast.FunctionDef | ast.AsyncFunctionDef
                        ) -> list[Violation]:
    """A function registered as a handler: through ``route`` only, and a body of
    at most :data:`MAX_HANDLER_LINES` lines (its docstring left out)."""
    out = []
    registered = False
    for deco in fn.decorator_list:
        call = deco.func if isinstance(deco, ast.Call) else deco
        name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
        if name in DIRECT_REGISTRATION:
            out.append(Violation(path, deco.lineno, "handlers",
                                 f"{fn.name} registered with .{name}(): through its row "
                                 "of lsp.dispatch.ROUTES (route) only"))
        registered = registered or name == "route" or name in DIRECT_REGISTRATION
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if registered and body:
        length = body[-1].end_lineno - body[0].lineno + 1
        if length > MAX_HANDLER_LINES:
            out.append(Violation(path, fn.lineno, "handlers",
                                 f"{fn.name}: a body of {length} lines (at most "
                                 f"{MAX_HANDLER_LINES}): a handler converts, the "
                                 "analysis layer answers"))
    return out


def test_pygls_internals_and_handlers():
    private = _pygls_private_names()
    out: list[Violation] = []
    for file in package_files():
        path = file.relative_to(ROOT).as_posix()
        out.extend(check_adapter_rules(path, file.read_text(encoding="utf-8"), private))
    assert not out, "violations:\n" + "\n".join(map(str, out))
    assert (ROOT / ADAPTER).is_file()


def test_adapter_rules_catch_violations():
    private = frozenset({"_request_futures", "_send_response"})
    where = f"{PACKAGE}/lsp/x.py"
    assert [v.rule for v in check_adapter_rules(where, "p._request_futures.get(1)\n",
                                                private)] == ["pygls-internals"]
    assert check_adapter_rules(ADAPTER, "p._request_futures.get(1)\n", private) == []
    # a private name of the module's own is its own
    assert check_adapter_rules(where, "class A:\n    def _send_response(self): pass\n"
                                      "A()._send_response()\n", private) == []
    override = ("from pygls.protocol import LanguageServerProtocol\n"
                "class P(LanguageServerProtocol):\n"
                "    def __init__(self): pass\n"
                "    def handle_message(self, m): pass\n"
                "    def mine(self): pass\n")
    assert [(v.line, v.rule) for v in check_adapter_rules(where, override, private)] == \
        [(4, "pygls-internals")]
    handler = f"{HANDLERS}x.py"
    source = ("import asyncio\n_seen: set[str] = set()\nCACHE = {}\nLIMIT = 5\n"
              "async def f(loop):\n    await asyncio.to_thread(print)\n"
              "    await loop.run_in_executor(None, print)\n")
    assert [(v.line, v.rule) for v in check_adapter_rules(handler, source, private)] == \
        [(6, "handlers"), (7, "handlers"), (2, "handlers"), (3, "handlers")]


def test_handler_rules_catch_analysis_work_direct_registration_and_long_bodies():
    long_body = "".join(f"        x{i} = {i}\n" for i in range(MAX_HANDLER_LINES + 1))
    source = ("def register(server):\n"
              "    @route(server, 'hover')\n"
              "    async def short(ls, params):\n"
              "        \"\"\"A docstring, not counted.\"\"\"\n"
              "        return await ls.host.snapshot().hover(params)\n"
              "    @server.feature('x')\n"
              "    async def direct(ls, params):\n"
              "        async with ls.lease(params) as a:\n"
              "            return await ls.store.derive(a, 'k', len)\n"
              "    @route(server, 'y')\n"
              "    def long(ls, params):\n" + long_body +
              "async def helper(ls):\n"
              "    return await in_thread(print)\n")
    got = [(v.line, v.message.split(":")[0])
           for v in check_adapter_rules(f"{HANDLERS}x.py", source, frozenset())]
    assert sorted(got) == sorted([
        (6, "direct registered with .feature()"), (8, ".lease()"), (9, ".derive()"),
        (11, "long"), (14 + MAX_HANDLER_LINES, "in_thread")]), got
