"""What hlo-lsp's two runners share: they run INSIDE the user's JAX program.

The runners (:mod:`hlo_lsp.dump.deviceless`, which compiles every jitted function
for a GPU this machine lacks, and :mod:`hlo_lsp.dump.profiling_hook`, which traces
jitted calls with ``jax.profiler``) are started as scripts by the program's own
Python interpreter, where hlo-lsp may not be installed. They import this file as
their sibling (``import runner_support``: a script's directory is first on
``sys.path``; then :func:`unlist_siblings`), so it imports only the standard
library, jax's public ``jax.extend`` (inside the functions that need it, once the
runner imported jax) and, the same way, :mod:`hlo_lsp.dump.xla_flags`
(``XLA_FLAGS`` as XLA splits it). No module of the server imports it.

What is here, once for both:

- :func:`hide_frames`: keep the runners' files (and runpy's) out of the Python
  stacks JAX writes into the dump's metadata, through the public
  ``jax.extend.source_info_util.register_exclusion`` (jax's API for extensions;
  no ``jax._src``: :mod:`hlo_lsp.syntax.xla` is the one module touching JAX's
  private API).
- :func:`program_of`, :func:`run_program`: the program after ``--`` (``SCRIPT.py
  ARGS`` or ``-m MODULE ARGS``) and running it as ``__main__`` with ``runpy``.
- :func:`call_signature`: what decides whether a jitted call compiles anew.
- :class:`WrappedJit`, :func:`install_jit`: ``jax.jit`` replaced by a wrapper
  that is otherwise the jitted function.
- :func:`write_record`: a runner's JSON record, written atomically.
- :func:`strip_dump_flags`: :func:`hlo_lsp.dump.xla_flags.strip_dump_flags`.
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import sys

if __name__ == "runner_support":  # loaded by a runner run as a script: the sibling file
    from xla_flags import strip_dump_flags
else:
    from hlo_lsp.dump.xla_flags import strip_dump_flags

#: The bare module names a runner run as a script imports its siblings under.
SIBLINGS = ("runner_support", "xla_flags")
#: The public JAX API :func:`hide_frames` uses.
EXCLUSION_API = "jax.extend.source_info_util.register_exclusion"


def unlist_siblings() -> None:
    """Undo what a runner run as a script did to import this file: take this
    directory off the front of ``sys.path`` (the runner put it there: a script's
    own directory is not on it under ``python -P`` or ``PYTHONSAFEPATH``) and the
    bare names of :data:`SIBLINGS` out of ``sys.modules`` (the modules stay
    referenced by the runner), so that the user's program importing a module of
    its own named ``xla_flags`` gets its own."""
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    for name in SIBLINGS:
        sys.modules.pop(name, None)


def exclusion_problems() -> list[str]:
    """The public JAX API :func:`hide_frames` needs that the program's jax lacks
    (empty when it is there): :data:`EXCLUSION_API`. Imports ``jax.extend``."""
    try:
        from jax.extend import source_info_util
    except ImportError:
        return [EXCLUSION_API]
    return [] if callable(getattr(source_info_util, "register_exclusion", None)) \
        else [EXCLUSION_API]


def hide_frames(*files: str) -> bool:
    """Exclude ``files`` (the runners' own, by absolute path), this file and
    runpy from the Python frames JAX records in HLO metadata, as JAX excludes its
    own files and the standard library, so that the dump's stacks end at the
    program's ``<module>`` as in its own run. runpy is frozen in CPython 3.11+:
    its frames are named ``<frozen runpy>``, not under the standard library path
    JAX excludes. Returns False, changing nothing, when
    :func:`exclusion_problems` finds the API missing."""
    if exclusion_problems():
        return False
    from jax.extend import source_info_util
    for name in (*files, __file__, "<frozen runpy>", runpy.__file__):
        source_info_util.register_exclusion(os.path.abspath(name)
                                            if not name.startswith("<") else name)
    return True


def program_of(parser, words: list[str]) -> list[str]:
    """The program of a runner's command line: ``words`` after an optional
    ``--``, ``SCRIPT.py ARGS`` or ``-m MODULE ARGS``; ``parser.error`` (an
    ``argparse`` parser: exits 2) when there is none."""
    program = words[1:] if words[:1] == ["--"] else list(words)
    if not program or (program[0] == "-m" and len(program) < 2):
        parser.error("give the program after --: SCRIPT.py ARGS or -m MODULE ARGS")
    return program


def run_program(program: list[str]) -> None:
    """Run ``program`` (see :func:`program_of`) as ``__main__``, as ``python
    SCRIPT.py ARGS`` or ``python -m MODULE ARGS`` would: ``sys.argv`` is the
    program's, ``sys.path[0]`` the script's directory (the working directory
    for ``-m``) unless the interpreter runs with a safe path (``-P``), which
    puts no such entry first. The program's exceptions and ``SystemExit``
    propagate."""
    sys.argv = list(program[1:]) if program[0] == "-m" else list(program)
    first = os.getcwd() if program[0] == "-m" else os.path.dirname(os.path.abspath(program[0]))
    if not sys.flags.safe_path:  # python -P / PYTHONSAFEPATH: no such entry
        sys.path[0] = first  # was the runner's own directory
    if program[0] == "-m":
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(program[0], run_name="__main__")


def call_signature(jax_module, tree) -> tuple:
    """What decides whether a jitted call with the arguments ``tree`` compiles
    anew, as JAX's cache keys it: the tree's structure, each array leaf's (or
    ``ShapeDtypeStruct``'s) shape, dtype, weak type and sharding, each other
    leaf's value when hashable, else its identity."""
    leaves, treedef = jax_module.tree_util.tree_flatten(tree)
    out = []
    for leaf in leaves:
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            out.append(("A", tuple(leaf.shape), str(leaf.dtype),
                        bool(getattr(leaf, "weak_type", False)),
                        repr(getattr(leaf, "sharding", None))))
        else:
            try:
                hash(leaf)
                out.append(("S", type(leaf).__name__, leaf))
            except TypeError:
                out.append(("U", id(leaf)))
    return (str(treedef), tuple(out))


class WrappedJit:
    """What a runner's ``jax.jit`` returns: ``jitted`` is the program's own
    jitted function (the original ``jax.jit(fun, **options)``); calls go to
    :meth:`call`, which a runner defines; every other attribute (``lower``,
    ``trace``, ``eval_shape``...) is the jitted function's. ``module`` is the
    module name JAX gives it (``jit_<function name>``)."""

    def __init__(self, original_jit, fun, options: dict) -> None:
        self.fun = fun
        self.options = options
        self.jitted = original_jit(fun, **options)
        self.module = f"jit_{getattr(fun, '__name__', 'fun')}"
        functools.update_wrapper(self, fun, updated=())

    def call(self, args: tuple, kwargs: dict):
        """Run the call (the runner's work around ``self.jitted(*args, **kwargs)``)."""
        return self.jitted(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self.call(args, kwargs)

    def __get__(self, instance, owner=None):
        return self if instance is None else functools.partial(self, instance)

    def __getattr__(self, name):
        return getattr(self.__dict__["jitted"], name)


def install_jit(jax_module, make) -> object:
    """Replace ``jax_module.jit`` by one returning ``make(original_jit, fun,
    options)`` (a :class:`WrappedJit`), also as a decorator factory
    (``jax.jit(static_argnums=0)``, ``functools.partial(jax.jit, ...)``).
    Returns the original ``jax.jit``."""
    original = jax_module.jit

    @functools.wraps(original)
    def jit(fun=None, /, **options):
        if fun is None:
            return lambda f: make(original, f, options)
        return make(original, fun, options)

    jax_module.jit = jit
    return original


def write_record(directory: str, name: str, record: dict, who: str) -> None:
    """Write ``record`` as ``directory/name`` (indented JSON), atomically (a
    temporary file renamed over it); a failure is said on stderr as ``who:
    cannot write NAME: ...``, never raised (the program's run must go on)."""
    try:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
        os.replace(path + ".tmp", path)
    except OSError as exc:
        print(f"{who}: cannot write {name}: {exc}", file=sys.stderr)


__all__ = ["EXCLUSION_API", "SIBLINGS", "WrappedJit", "call_signature", "exclusion_problems",
           "hide_frames", "install_jit", "program_of", "run_program", "strip_dump_flags",
           "unlist_siblings", "write_record"]
