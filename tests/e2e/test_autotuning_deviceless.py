"""What XLA writes about autotuning when it compiles for an H100 here, without a
GPU (jax[cuda12]; the full tier, as tests/e2e/test_gpu_deviceless.py):

- ``hlo-lsp dump --target h100`` with ``--xla_gpu_dump_autotune_results_to`` and
  ``--xla_gpu_dump_autotune_logs_to`` in XLA_FLAGS: XLA writes neither file (it
  autotunes nothing) but writes ``<module>.autotune_results.pbtxt`` in the dump
  holding only ``version: 3``; the summary's Autotuning line (and
  ``hlo-lsp summary``'s) then says each kernel was chosen by heuristics
  (deviceless).
- a compile loading openxla/xla's public H100 results
  (``--xla_gpu_load_autotune_results_from``) copies them into the dump's
  ``autotune_results.pbtxt``; its cuBLASLt call (jax 0.10.2 picks cuBLASLt, the
  public entry is a ``__cublas$gemm``) is not joined to them: no false match.
"""

from __future__ import annotations

import subprocess
import sys

from hlo_lsp.dump.autotuning import autotune_paths, read_autotune_file
from hlo_lsp.features.autotuning import autotuning_for, autotuning_note
from hlo_lsp.model.summary import kernel_summary
from hlo_lsp.syntax.parser import parse
from tests.helpers import EXAMPLES, ROOT, compile_env, needs_gpu_compile

pytestmark = needs_gpu_compile()

PROGRAM = EXAMPLES / "gpu" / "programs" / "fp8_matmul.py"
DB = ROOT / "tests" / "data" / "autotuning" / "gpu_compiler_test_autotune_db.textproto"
H100 = ROOT / "hlo_lsp" / "dump" / "targets" / "h100.txtpb"
TIMEOUT_S = 300

LOADING = '''
import sys, jax, jax.numpy as jnp
from jax.experimental import topologies
topo = topologies.get_topology_desc(platform="cuda", target_config=open(sys.argv[1]).read(),
                                    topology="1x1x1")
s = jax.ShapeDtypeStruct((128, 1024, 1024), jnp.bfloat16,
                         sharding=jax.sharding.SingleDeviceSharding(topo.devices[0]))
jax.jit(lambda a, b: jnp.einsum("bij,bjk->bik", a, b)).lower(s, s).compile(compiler_options={
    "xla_dump_to": sys.argv[2], "xla_dump_hlo_as_text": True,
    "xla_gpu_enable_triton_gemm": False, "xla_gpu_load_autotune_results_from": sys.argv[3]})
'''


def _after(dump):
    [path] = dump.glob("*.sm_9.0a_gpu_after_optimizations.txt")
    return path


def test_deviceless_dump_names_no_autotuning(tmp_path):
    results, logs = tmp_path / "results.textproto", tmp_path / "logs.textproto"
    flags = (f"--xla_gpu_dump_autotune_results_to={results} "
             f"--xla_gpu_dump_autotune_logs_to={logs}")
    done = subprocess.run(
        [sys.executable, "-m", "hlo_lsp", "dump", "--target", "h100", "--out",
         str(tmp_path / "dump"), "--", sys.executable, str(PROGRAM)],
        cwd=tmp_path, env=compile_env(flags), capture_output=True, text=True,
        timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not results.exists() and not logs.exists()
    [path] = autotune_paths(str(tmp_path / "dump"))
    assert path.endswith(".autotune_results.pbtxt")
    f = read_autotune_file(path)
    assert f.empty and f.version == 3
    module = parse(_after(tmp_path / "dump").read_text())
    note = autotuning_note(module, [k.offset for k in kernel_summary(module).kernels], [f],
                           deviceless=True)
    assert note.startswith("Autotuning: ") and note.endswith("chosen by heuristics (deviceless)")
    # `hlo-lsp summary` prints the same line under the deviceless statement, and
    # its JSON has it as "autotuning"
    after = str(_after(tmp_path / "dump"))
    out = subprocess.run([sys.executable, "-m", "hlo_lsp", "summary", after], env=compile_env(),
                         capture_output=True, text=True, timeout=TIMEOUT_S).stdout
    assert f"(no device).\n{note}\n" in out
    data = subprocess.run([sys.executable, "-m", "hlo_lsp", "summary", "--json", after],
                          env=compile_env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S).stdout
    import json
    assert json.loads(data)["autotuning"] == note


def test_loaded_public_results_are_copied_into_the_dump_and_not_joined(tmp_path):
    script = tmp_path / "load.py"
    script.write_text(LOADING)
    dump = tmp_path / "dump"
    done = subprocess.run([sys.executable, str(script), str(H100), str(dump), str(DB)],
                          env={**compile_env(), "JAX_PLATFORMS": "cpu"},
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    [path] = autotune_paths(str(dump))
    written, public = read_autotune_file(path), read_autotune_file(DB)
    assert written.message is None
    assert [(r.device, r.hlo, r.winner) for r in written.results] == \
        [(r.device, r.hlo, r.winner) for r in public.results]
    module = parse(_after(dump).read_text())
    [call] = [i for c in module.computations for i in c.instructions
              if i.opcode == "custom-call"]
    assert '"__cublas$lt$matmul"' in module.text[call.start:call.end]
    assert autotuning_for(module, call, [written]) is None
