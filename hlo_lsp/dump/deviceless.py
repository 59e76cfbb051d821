"""Run a JAX program on the CPU and compile every function it jits for a target GPU too.

This file runs INSIDE the user's program, as a script started by the program's own
Python interpreter (``python .../hlo_lsp/dump/deviceless.py [options] -- train.py ARGS``
or ``... -- -m package ARGS``); it is never imported by the language server nor by
any other hlo_lsp module (tests/unit/test_layers.py checks both). It imports only
the standard library and jax, so it works in any environment that has
``jax[cuda12]`` installed, whether or not hlo-lsp is installed there.

What it does (JAX's deviceless ahead-of-time compilation, as tested upstream in
jax ``tests/deviceless_aot_test.py``):

1. ``--xla_dump_to`` and ``--xla_dump_hlo_as_text`` are taken out of ``XLA_FLAGS``
   before jax is imported, so the program's own CPU compiles dump nothing; every
   other flag of ``XLA_FLAGS`` (``--xla_gpu_enable_triton_gemm=false``...) stays
   and applies to the target compiles.
2. ``jax.experimental.topologies.get_topology_desc(platform="cuda",
   target_config=<GpuTargetConfig text>, topology="1x1xN")`` gives compile-only
   devices of the target (one topology per device count N the program uses).
3. ``jax.jit`` is replaced by a wrapper before the program runs. On every call with
   concrete arguments (not inside another trace), the wrapper lowers the same
   function with the same ``jit`` options for ``jax.ShapeDtypeStruct`` arguments
   placed on the target's devices (a ``NamedSharding`` over a mesh of N CPU
   devices becomes the same mesh shape over N target devices) and compiles it with
   ``compiler_options`` ``xla_dump_to=<dump dir>``, ``xla_dump_hlo_as_text`` and
   ``xla_gpu_autotune_level=0`` (autotuning needs the device). Once per function
   and argument signature, like JAX's own cache. Then the program's own call runs
   on the CPU, unchanged. Module names are JAX's (``jit_<function name>``), so the
   dump has the names the program's run on the GPU gives.
4. At exit, ``hlo-lsp-deviceless.json`` in the dump directory records the target,
   the jax/jaxlib versions, the XLA flags and every module compiled or failed
   (format: :data:`RECORD_FORMAT`, read by :mod:`hlo_lsp.dump.targets`).

Not covered: JAX's own per-operation modules of code run outside ``jit``
(``jit_multiply``... for eager ``x * 2``) are compiled for the CPU only;
``jax.pmap`` is not wrapped. A function that fails to compile for the target is
reported on stderr and in the record; the program continues.

The JAX API used is public (``jax.jit``, ``jax.ShapeDtypeStruct``, ``jax.sharding``,
``jax.experimental.topologies``, ``Lowered.compile(compiler_options=...)``);
:func:`check_jax` verifies it is there and stops with a clear message when JAX
changed under it. One JAX internal is used, in :func:`hide_runner_frames` only:
``jax._src.source_info_util.register_exclusion``, so that this file's frames are
not the outermost "user" frames of every instruction's stack in the dump (the
stacks then end at the program's ``<module>``, as in its own run);
:func:`internal_api_problems` reports when it is gone. Both are asserted by
tests/e2e/test_gpu_deviceless.py, which fails loudly when JAX changes.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import os
import re
import runpy
import sys
import traceback

RECORD_FILE = "hlo-lsp-deviceless.json"
RECORD_FORMAT = "hlo-lsp-deviceless/1"
# jax versions this runner was checked with; others run after check_jax() passes,
# with a warning.
CHECKED_JAX = ((0, 6), (0, 10))
DUMP_FLAG = re.compile(r"^--xla_dump_(?:to|hlo_as_text)(?:=|$)")


def strip_dump_flags(xla_flags: str) -> str:
    """``xla_flags`` without ``--xla_dump_to`` and ``--xla_dump_hlo_as_text``
    (whitespace-separated tokens; a quoted dump path with spaces is removed whole)."""
    out, skipping = [], False
    for token in xla_flags.split():
        if skipping:
            skipping = not token.endswith('"')
            continue
        if DUMP_FLAG.match(token):
            skipping = token.count('"') == 1
            continue
        out.append(token)
    return " ".join(out)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def check_jax(jax_module) -> list[str]:
    """The public JAX API this runner needs that ``jax_module`` lacks (empty when
    all is there): ``jax.experimental.topologies.get_topology_desc``,
    ``jax.ShapeDtypeStruct(sharding=)``, ``jax.sharding.{SingleDeviceSharding,
    NamedSharding, Mesh}``, ``jax.core.Tracer``, ``jit(...).lower(...).compile(
    compiler_options=...)``."""
    import inspect
    missing = []
    try:
        from jax.experimental import topologies
        params = inspect.signature(topologies.get_topology_desc).parameters
        if "platform" not in params:
            missing.append("get_topology_desc(platform=...)")
    except (ImportError, AttributeError):
        missing.append("jax.experimental.topologies.get_topology_desc")
    for dotted in ("ShapeDtypeStruct", "sharding.SingleDeviceSharding",
                   "sharding.NamedSharding", "sharding.Mesh", "core.Tracer", "jit",
                   "tree_util.tree_map", "stages.Lowered.compile"):
        obj = jax_module
        for part in dotted.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            missing.append(f"jax.{dotted}")
    if "sharding" not in inspect.signature(jax_module.ShapeDtypeStruct).parameters:
        missing.append("jax.ShapeDtypeStruct(sharding=...)")
    compile_fn = getattr(getattr(jax_module, "stages", None), "Lowered", None)
    if compile_fn is not None and "compiler_options" not in inspect.signature(
            compile_fn.compile).parameters:
        missing.append("Lowered.compile(compiler_options=...)")
    return missing


def internal_api_problems() -> list[str]:
    """The JAX internals :func:`hide_runner_frames` needs that are missing."""
    try:
        from jax._src import source_info_util
    except ImportError:
        return ["jax._src.source_info_util"]
    return ([] if callable(getattr(source_info_util, "register_exclusion", None))
            else ["jax._src.source_info_util.register_exclusion"])


def hide_runner_frames() -> bool:
    """Exclude this file from the Python frames JAX records in HLO metadata (as
    JAX excludes its own files and the standard library, runpy included). Returns
    False, changing nothing, when the internal is gone (the dump's stacks then
    show this runner below the program's frames)."""
    if internal_api_problems():
        return False
    from jax._src import source_info_util
    source_info_util.register_exclusion(os.path.abspath(__file__))
    # runpy, which runs the program here, is frozen in CPython 3.11+: its frames are
    # named "<frozen runpy>", not under the standard library path JAX excludes.
    source_info_util.register_exclusion("<frozen runpy>")
    source_info_util.register_exclusion(os.path.abspath(runpy.__file__))
    return True


class TargetCompiler:
    """Compiles jitted functions for the target GPU described by ``config_text``
    (an XLA ``GpuTargetConfig`` text proto) into ``dump_dir``."""

    def __init__(self, jax_module, config_text: str, dump_dir: str, target: str):
        self.jax = jax_module
        self.config_text = config_text
        self.dump_dir = dump_dir
        self.target = target
        self.topologies: dict[int, object] = {}
        self.done: set = set()
        self.compiled: list[dict] = []
        self.failed: list[dict] = []

    def devices(self, count: int) -> list:
        """``count`` compile-only devices of the target (a ``1x1x<count>`` topology)."""
        if count not in self.topologies:
            from jax.experimental import topologies
            self.topologies[count] = topologies.get_topology_desc(
                platform="cuda", target_config=self.config_text, topology=f"1x1x{count}")
        return list(self.topologies[count].devices)

    def sharding(self, sharding):
        """The target's version of a CPU ``sharding`` (None: one device)."""
        jax = self.jax
        import numpy as np
        if isinstance(sharding, jax.sharding.NamedSharding):
            mesh = sharding.mesh
            devices = np.array(self.devices(mesh.size), dtype=object).reshape(
                mesh.devices.shape)
            kwargs = {}
            if getattr(mesh, "axis_types", None) is not None:
                kwargs["axis_types"] = mesh.axis_types
            target_mesh = jax.sharding.Mesh(devices, mesh.axis_names, **kwargs)
            return jax.sharding.NamedSharding(target_mesh, sharding.spec)
        if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
            return jax.sharding.SingleDeviceSharding(self.devices(1)[0])
        count = len(getattr(sharding, "device_set", ()) or ())
        if count <= 1:
            return jax.sharding.SingleDeviceSharding(self.devices(1)[0])
        raise NotImplementedError(f"{type(sharding).__name__} over {count} devices")

    def abstract(self, leaf):
        """A ``ShapeDtypeStruct`` on the target for an array leaf; other leaves as is."""
        jax = self.jax
        if isinstance(leaf, jax.ShapeDtypeStruct) or not (
                hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            return leaf
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                    sharding=self.sharding(getattr(leaf, "sharding", None)),
                                    weak_type=bool(getattr(leaf, "weak_type", False)))

    def convert_shardings(self, value):
        """``in_shardings``/``out_shardings`` of ``jit`` with CPU shardings moved to the target."""
        jax = self.jax
        return jax.tree_util.tree_map(
            lambda s: self.sharding(s) if isinstance(s, jax.sharding.Sharding) else s, value)

    def compile(self, wrapper, args: tuple, kwargs: dict) -> None:
        """Compile ``wrapper``'s function for the target for these concrete arguments,
        once per signature; errors are recorded and reported, never raised."""
        jax = self.jax
        leaves = jax.tree_util.tree_leaves((args, kwargs))
        if any(isinstance(x, jax.core.Tracer) for x in leaves):
            return  # called inside another trace: inlined there
        name = f"jit_{getattr(wrapper.fun, '__name__', 'fun')}"
        try:
            statics = set(wrapper.static_argnums)
            abstract_args = tuple(a if i in statics else jax.tree_util.tree_map(self.abstract, a)
                                  for i, a in enumerate(args))
            abstract_kwargs = {k: v if k in wrapper.static_argnames else
                               jax.tree_util.tree_map(self.abstract, v)
                               for k, v in kwargs.items()}
            key = (id(wrapper), _signature(jax, (abstract_args, abstract_kwargs)))
            if key in self.done:
                return
            self.done.add(key)
            options = dict(wrapper.options)
            for k in ("in_shardings", "out_shardings"):
                if k in options:
                    options[k] = self.convert_shardings(options[k])
            target_jit = _ORIGINAL_JIT(wrapper.fun, **options)
            lowered = target_jit.lower(*abstract_args, **abstract_kwargs)
            lowered.compile(compiler_options={
                "xla_dump_to": self.dump_dir, "xla_dump_hlo_as_text": True,
                "xla_gpu_autotune_level": 0})
            devices = max((len(getattr(getattr(x, "sharding", None), "device_set", ()) or ())
                           for x in jax.tree_util.tree_leaves((abstract_args, abstract_kwargs))),
                          default=1)
            self.compiled.append({"module": name, "devices": max(devices, 1)})
        except Exception as exc:  # noqa: BLE001 - the program must go on
            message = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            self.failed.append({"module": name, "error": message})
            print(f"hlo-lsp deviceless: could not compile {name} for {self.target}: "
                  f"{message}", file=sys.stderr, flush=True)
            if os.environ.get("HLO_LSP_DEVICELESS_DEBUG"):
                traceback.print_exc()


def _signature(jax, tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    out = []
    for leaf in leaves:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            out.append(("A", leaf.shape, str(leaf.dtype), leaf.weak_type, repr(leaf.sharding)))
        else:
            try:
                hash(leaf)
                out.append(("S", type(leaf).__name__, leaf))
            except TypeError:
                out.append(("U", id(leaf)))
    return (str(treedef), tuple(out))


_ORIGINAL_JIT = None


class TargetJit:
    """What the wrapped ``jax.jit`` returns: calls compile for the target first
    (:meth:`TargetCompiler.compile`), then the program's own jitted function;
    every other attribute (``lower``, ``trace``, ``eval_shape``...) is the jitted
    function's."""

    def __init__(self, compiler: TargetCompiler, fun, options: dict):
        self._compiler = compiler
        self.fun = fun
        self.options = options
        self.jitted = _ORIGINAL_JIT(fun, **options)
        nums = options.get("static_argnums", ()) or ()
        self.static_argnums = (nums,) if isinstance(nums, int) else tuple(nums)
        names = options.get("static_argnames", ()) or ()
        self.static_argnames = (names,) if isinstance(names, str) else tuple(names)
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args, **kwargs):
        self._compiler.compile(self, args, kwargs)
        return self.jitted(*args, **kwargs)

    def __get__(self, instance, owner=None):
        return self if instance is None else functools.partial(self, instance)

    def __getattr__(self, name):
        return getattr(self.__dict__["jitted"], name)


def install(jax_module, compiler: TargetCompiler) -> None:
    """Replace ``jax.jit`` by one returning :class:`TargetJit` (also as a decorator
    factory: ``jax.jit(static_argnums=0)`` and ``functools.partial(jax.jit, ...)``)."""
    global _ORIGINAL_JIT
    _ORIGINAL_JIT = jax_module.jit

    @functools.wraps(_ORIGINAL_JIT)
    def jit(fun=None, /, **options):
        if fun is None:
            return lambda f: TargetJit(compiler, f, options)
        return TargetJit(compiler, fun, options)

    jax_module.jit = jit


def write_record(compiler: TargetCompiler, args, jax_module, xla_flags: str) -> None:
    """Write :data:`RECORD_FILE` into the dump directory (best effort)."""
    import jaxlib
    record = {
        "format": RECORD_FORMAT, "target": compiler.target,
        "target_config": os.path.abspath(args.target_config),
        "jax_version": jax_module.__version__,
        "jaxlib_version": getattr(jaxlib, "__version__", ""),
        "xla_flags": xla_flags, "autotuning": False,
        "compiler_options": {"xla_gpu_autotune_level": 0},
        "compiled": compiler.compiled, "failed": compiler.failed,
    }
    try:
        os.makedirs(compiler.dump_dir, exist_ok=True)
        path = os.path.join(compiler.dump_dir, RECORD_FILE)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
        os.replace(path + ".tmp", path)
    except OSError as exc:
        print(f"hlo-lsp deviceless: cannot write {RECORD_FILE}: {exc}", file=sys.stderr)


def main(argv: list[str]) -> int:
    """Parse the runner's options, set up the target compiles and run the program."""
    parser = argparse.ArgumentParser(
        prog="deviceless.py", description="Run a JAX program on the CPU and compile "
        "every function it jits for a target GPU, dumping the target's HLO.")
    parser.add_argument("--target-config", required=True,
                        help="XLA GpuTargetConfig text proto file")
    parser.add_argument("--target", default="", help="the target's name (for the record)")
    parser.add_argument("--dump-to", required=True, help="dump directory")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program or (program[0] == "-m" and len(program) < 2):
        parser.error("give the program after --: SCRIPT.py ARGS or -m MODULE ARGS")
    with open(args.target_config, encoding="utf-8") as f:
        config_text = f.read()
    xla_flags = strip_dump_flags(os.environ.get("XLA_FLAGS", ""))
    os.environ["XLA_FLAGS"] = xla_flags
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

    try:
        import jax
    except ImportError as exc:
        print(f"hlo-lsp deviceless: jax is not installed for {sys.executable} ({exc}); "
              "compiling for a GPU without one needs jax[cuda12] there "
              "(pip install 'jax[cuda12]' or 'hlo-lsp[cuda]')", file=sys.stderr)
        return 3
    missing = check_jax(jax)
    if missing:
        print(f"hlo-lsp deviceless: jax {jax.__version__} lacks what compiling for a "
              f"GPU without one needs: {', '.join(missing)}", file=sys.stderr)
        return 3
    if _version(jax.__version__)[:2] < CHECKED_JAX[0]:
        print(f"hlo-lsp deviceless: jax {jax.__version__} is older than "
              f"{'.'.join(map(str, CHECKED_JAX[0]))}", file=sys.stderr)
        return 3
    compiler = TargetCompiler(jax, config_text, os.path.abspath(args.dump_to),
                              args.target or os.path.basename(args.target_config))
    try:
        compiler.devices(1)
    except Exception as exc:  # noqa: BLE001 - say why, in one line
        print(f"hlo-lsp deviceless: cannot make a {compiler.target} device from "
              f"{args.target_config} (is jax[cuda12] installed for this Python, "
              f"{sys.executable}?): {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    if not hide_runner_frames():
        print(f"hlo-lsp deviceless: jax {jax.__version__} has no "
              f"{', '.join(internal_api_problems())}: the dump's Python stacks will show "
              "this runner's frames", file=sys.stderr)
    install(jax, compiler)
    atexit.register(write_record, compiler, args, jax, xla_flags)

    sys.argv = list(program[1:]) if program[0] == "-m" else list(program)
    if program[0] == "-m":
        sys.path[0] = os.getcwd()
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(program[0]))
        runpy.run_path(program[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
