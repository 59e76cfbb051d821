"""The model: plain Python data for an HLO module, and pure queries over it.

Standard library only; nothing here parses text or touches the disk.

- :mod:`.hlo`: HloModule, Computation, Instruction, Ref (names with exact
  character offsets), Problem; mirrors xla/hlo/ir.
- :mod:`.shapes`: element types, dimensions, layouts (``minor_to_major``, tiles).
- :mod:`.opcodes`: XLA's opcodes and their families.
- :mod:`.backend_config`: custom-call targets and GPU ``backend_config`` fields.
- :mod:`.kernels`: what an instruction runs as (fusion kind, custom-call target,
  the meaning of a cuBLAS call's tuple results).
- :mod:`.summary`: what a module runs (``kernel_summary``: fusions, custom-calls,
  collectives, from ENTRY through control flow); :mod:`.folding`: the summary
  folded to fit a screen; :mod:`.op_names`: op_name patterns (the repeated scope
  of an unrolled loop).
- :mod:`.comparison`: what changed between two modules of one program, the one
  comparison (:mod:`.instruction_diff`: instructions; :mod:`.cost_change`: cost).
- :mod:`.collectives`: what a collective does (replica groups in every written
  form, group mode, bytes per device, ``-start``/``-done`` pairs).
- :mod:`.cost`: FLOPs, transcendentals and bytes accessed per instruction and
  per fusion as XLA's HloCostAnalysis counts them (:mod:`.shape_costs`: the
  arithmetic of shapes, dots and convolutions); :mod:`.roofline`: the time
  that takes on a device; :mod:`.units`: counts and times as text.
- :mod:`.accelerators`: peak FLOP/s and memory bandwidth of common devices,
  each number with its datasheet.
- :mod:`.frames`: the Python call stack of an instruction (``python_stack``).
- :mod:`.index`: ``find_at(module, offset)``, the one "what is here" query.
- :mod:`.callsites`: which operand feeds a called computation's parameter.
- :mod:`.check`: semantic problems (undefined names, duplicate definitions...).
- :mod:`.spans`: Span and FileTarget, what features point at.
"""

from hlo_lsp.model.hlo import (Computation, HloModule, Instruction, Problem, Ref, Severity,
                               SourceFrame)
from hlo_lsp.model.spans import FileTarget, Span

__all__ = ["Computation", "FileTarget", "HloModule", "Instruction", "Problem", "Ref",
           "Severity", "SourceFrame", "Span"]
