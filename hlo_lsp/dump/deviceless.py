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
``jax.experimental.topologies``, ``Lowered.compile(compiler_options=...)``, and
``jax.extend.source_info_util.register_exclusion``, through
:func:`hlo_lsp.dump.runner_support.hide_frames`, so that this file's frames are
not the outermost "user" frames of every instruction's stack in the dump: the
stacks then end at the program's ``<module>``, as in its own run);
:func:`check_jax` verifies it is there and stops with a clear message when JAX
changed under it. tests/e2e/test_gpu_deviceless.py asserts both, and fails
loudly when JAX changes. What the two runners share (running the program, the
``jax.jit`` wrapper, the record file, ``XLA_FLAGS``) is
:mod:`hlo_lsp.dump.runner_support`, this file's sibling.
"""

from __future__ import annotations

import argparse
import atexit
import os
import re
import sys
import traceback

if __package__:  # imported as hlo_lsp.dump.deviceless (the tests)
    from hlo_lsp.dump import runner_support as support
else:  # run as a script by the program's interpreter: the sibling file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import runner_support as support
    support.unlist_siblings()

RECORD_FILE = "hlo-lsp-deviceless.json"
RECORD_FORMAT = "hlo-lsp-deviceless/1"
# jax versions this runner was checked with; others run after check_jax() passes,
# with a warning.
CHECKED_JAX = ((0, 6), (0, 10))
#: ``XLA_FLAGS`` without the dump flags (hlo_lsp.dump.xla_flags, XLA's word splitting).
strip_dump_flags = support.strip_dump_flags


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
        #: the program's ``jax.jit`` before :func:`install` replaced it
        self.original_jit = jax_module.jit

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
            key = (id(wrapper), support.call_signature(jax, (abstract_args, abstract_kwargs)))
            if key in self.done:
                return
            self.done.add(key)
            options = dict(wrapper.options)
            for k in ("in_shardings", "out_shardings"):
                if k in options:
                    options[k] = self.convert_shardings(options[k])
            target_jit = self.original_jit(wrapper.fun, **options)
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


class TargetJit(support.WrappedJit):
    """What the wrapped ``jax.jit`` returns: calls compile for the target first
    (:meth:`TargetCompiler.compile`), then the program's own jitted function."""

    def __init__(self, compiler: TargetCompiler, original_jit, fun, options: dict):
        super().__init__(original_jit, fun, options)
        self._compiler = compiler
        nums = options.get("static_argnums", ()) or ()
        self.static_argnums = (nums,) if isinstance(nums, int) else tuple(nums)
        names = options.get("static_argnames", ()) or ()
        self.static_argnames = (names,) if isinstance(names, str) else tuple(names)

    def call(self, args: tuple, kwargs: dict):
        self._compiler.compile(self, args, kwargs)
        return self.jitted(*args, **kwargs)


def install(jax_module, compiler: TargetCompiler) -> None:
    """Replace ``jax.jit`` by one returning :class:`TargetJit`
    (:func:`hlo_lsp.dump.runner_support.install_jit`); the compiler keeps the
    original for the target's compiles."""
    compiler.original_jit = support.install_jit(
        jax_module, lambda original, fun, options: TargetJit(compiler, original, fun, options))


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
    support.write_record(compiler.dump_dir, RECORD_FILE, record, "hlo-lsp deviceless")


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
    program = support.program_of(parser, args.program)
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
    if not support.hide_frames(__file__):
        print(f"hlo-lsp deviceless: jax {jax.__version__} has no "
              f"{', '.join(support.exclusion_problems())}: the dump's Python stacks "
              "will show this runner's frames", file=sys.stderr)
    install(jax, compiler)
    atexit.register(write_record, compiler, args, jax, xla_flags)

    support.run_program(program)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
