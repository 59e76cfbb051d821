"""Run a JAX program under ``jax.profiler``, tracing calls of its jitted functions.

This file runs INSIDE the user's program, as a script started by the program's own
Python interpreter (``python .../hlo_lsp/dump/profiling_hook.py --profile-dir DIR
--calls N -- train.py ARGS`` or ``... -- -m package ARGS``), like the deviceless
runner (:mod:`hlo_lsp.dump.deviceless`, which may run this file as its program:
``python deviceless.py ... -- profiling_hook.py ... -- train.py``). It is never
imported by the language server nor by any other hlo_lsp module
(tests/unit/test_layers.py checks both) and imports only the standard library and
jax, so it works wherever the program's jax is installed.

What it does:

1. ``jax.jit`` is replaced by a wrapper before the program runs (the public
   ``jax.jit``; the program's own jitted function runs unchanged).
2. The first call of each jitted function with a given argument signature (array
   shapes, dtypes and shardings, static values) compiles it: it is not traced.
   The profiler starts (``jax.profiler.start_trace(DIR)``) at the first call of a
   function already called with that signature, and stops
   (``jax.profiler.stop_trace()``) once ``N`` such calls ran, after the outputs of
   the N-th are ready (``jax.block_until_ready``), or when the program ends. So
   ``N`` counts the traced calls, over all jitted functions; a function's first
   call made while the trace runs is traced too (its compile is not a measured
   instruction) but not counted. Calls made inside another trace (a jitted
   function calling another) are inlined there and not counted.
3. ``jax.profiler`` writes ``DIR/plugins/profile/<run>/<host>.xplane.pb`` and
   ``<host>.trace.json.gz`` (tsl/profiler/rpc/client/save_profile.cc).
4. At the end, ``DIR/hlo-lsp-profile.json`` records what was traced (format:
   :data:`RECORD_FORMAT`, read by :mod:`hlo_lsp.dump.capture`): the calls asked
   and traced, per module (``jit_<function name>``), the platform and devices the
   program ran on, and the jax/jaxlib versions.

When no jitted function is called twice, nothing is traced; the record says so and
the program's run is otherwise unchanged. A problem of the profiler (it cannot
start, cannot write) is reported on stderr and in the record; the program goes on.

The JAX API used is public (``jax.jit``, ``jax.profiler.start_trace``,
``stop_trace``, ``jax.block_until_ready``, ``jax.tree_util``, and
``jax.extend.source_info_util.register_exclusion``, which keeps this file's frames
out of the Python stacks JAX writes into the dump's metadata, as the deviceless
runner does). What the two runners share (running the program, the ``jax.jit``
wrapper, the record file) is :mod:`hlo_lsp.dump.runner_support`, this file's
sibling.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

if __package__:  # imported as hlo_lsp.dump.profiling_hook (the tests)
    from hlo_lsp.dump import runner_support as support
else:  # run as a script by the program's interpreter (or the deviceless runner's)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import runner_support as support
    support.unlist_siblings()

RECORD_FILE = "hlo-lsp-profile.json"
RECORD_FORMAT = "hlo-lsp-profile/1"


class Tracer:
    """The profiling of one program run: which (function, signature) pairs ran
    already, the calls traced (per module name) and the trace's state."""

    def __init__(self, jax_module, profile_dir: str, calls: int) -> None:
        self.jax = jax_module
        self.profile_dir = profile_dir
        self.calls = calls
        self.seen: set = set()
        self.traced: dict[str, int] = {}
        self.count = 0
        self.active = False
        self.done = False
        self.errors: list[str] = []

    def _error(self, what: str, exc: BaseException) -> None:
        message = f"{what}: {type(exc).__name__}: {exc}".splitlines()[0][:500]
        self.errors.append(message)
        print(f"hlo-lsp profile: {message}", file=sys.stderr, flush=True)
        if os.environ.get("HLO_LSP_PROFILE_DEBUG"):
            traceback.print_exc()

    def start(self) -> None:
        try:
            os.makedirs(self.profile_dir, exist_ok=True)
            self.jax.profiler.start_trace(self.profile_dir)
            self.active = True
        except Exception as exc:  # noqa: BLE001 - the program must go on
            self.done = True
            self._error("could not start jax.profiler", exc)

    def stop(self) -> None:
        if not self.active:
            return
        self.active, self.done = False, True
        try:
            self.jax.profiler.stop_trace()
        except Exception as exc:  # noqa: BLE001
            self._error("could not write the profile", exc)

    def call(self, wrapper, args: tuple, kwargs: dict):
        """Run ``wrapper``'s jitted function, traced as the module docstring says."""
        jax = self.jax
        if self.done or any(isinstance(x, jax.core.Tracer)
                            for x in jax.tree_util.tree_leaves((args, kwargs))):
            return wrapper.jitted(*args, **kwargs)
        try:
            key = (id(wrapper), support.call_signature(jax, (args, kwargs)))
        except Exception:  # noqa: BLE001 - an argument we cannot describe: a new one
            key = (id(wrapper), object())
        if key not in self.seen:
            self.seen.add(key)
            return wrapper.jitted(*args, **kwargs)
        if not self.active:
            self.start()
            if not self.active:
                return wrapper.jitted(*args, **kwargs)
        out = wrapper.jitted(*args, **kwargs)
        self.count += 1
        self.traced[wrapper.module] = self.traced.get(wrapper.module, 0) + 1
        if self.count >= self.calls:
            try:
                jax.block_until_ready(out)
            except Exception as exc:  # noqa: BLE001
                self._error("waiting for the last traced call", exc)
            self.stop()
        return out


class ProfiledJit(support.WrappedJit):
    """What the wrapped ``jax.jit`` returns: calls go through :meth:`Tracer.call`."""

    def __init__(self, tracer: Tracer, original_jit, fun, options: dict):
        super().__init__(original_jit, fun, options)
        self._tracer = tracer

    def call(self, args: tuple, kwargs: dict):
        return self._tracer.call(self, args, kwargs)


def install(jax_module, tracer: Tracer) -> None:
    """Replace ``jax.jit`` by one returning :class:`ProfiledJit`
    (:func:`hlo_lsp.dump.runner_support.install_jit`)."""
    support.install_jit(
        jax_module, lambda original, fun, options: ProfiledJit(tracer, original, fun, options))


def write_record(tracer: Tracer) -> None:
    """Write :data:`RECORD_FILE` into the profile directory (best effort)."""
    jax = tracer.jax
    try:
        import jaxlib
        jaxlib_version = getattr(jaxlib, "__version__", "")
    except ImportError:
        jaxlib_version = ""
    try:
        devices = [str(d) for d in jax.devices()][:16]
        platform = jax.default_backend()
    except Exception:  # noqa: BLE001
        devices, platform = [], ""
    record = {"format": RECORD_FORMAT, "calls": tracer.calls, "traced": tracer.count,
              "modules": dict(tracer.traced), "platform": platform, "devices": devices,
              "jax_version": jax.__version__, "jaxlib_version": jaxlib_version,
              "errors": tracer.errors}
    support.write_record(tracer.profile_dir, RECORD_FILE, record, "hlo-lsp profile")


def main(argv: list[str]) -> int:
    """Parse the hook's options, install the wrapper and run the program."""
    parser = argparse.ArgumentParser(
        prog="profiling_hook.py", description="Run a JAX program under jax.profiler, "
        "tracing N calls of its jitted functions after the first call of each.")
    parser.add_argument("--profile-dir", required=True,
                        help="where jax.profiler writes plugins/profile/<run>/")
    parser.add_argument("--calls", type=int, required=True,
                        help="how many calls are traced (after each function's first)")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    program = support.program_of(parser, args.program)
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    try:
        import jax
        import jax.profiler  # noqa: F401 - jax.profiler is a submodule
    except ImportError as exc:
        print(f"hlo-lsp profile: jax is not installed for {sys.executable} ({exc})",
              file=sys.stderr)
        return 3
    missing = [n for n in ("start_trace", "stop_trace")
               if not callable(getattr(jax.profiler, n, None))]
    if missing or not callable(getattr(jax, "block_until_ready", None)):
        print(f"hlo-lsp profile: jax {jax.__version__} lacks "
              f"{', '.join(f'jax.profiler.{n}' for n in missing) or 'jax.block_until_ready'}",
              file=sys.stderr)
        return 3
    if not support.hide_frames(__file__):
        print(f"hlo-lsp profile: jax {jax.__version__} has no "
              f"{', '.join(support.exclusion_problems())}: the dump's Python stacks "
              "will show this hook's frames", file=sys.stderr)
    tracer = Tracer(jax, os.path.abspath(args.profile_dir), args.calls)
    install(jax, tracer)

    try:
        support.run_program(program)
    finally:
        # Before the interpreter's exit handlers (jax's own shut its backends down).
        tracer.stop()
        write_record(tracer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
