"""Which events of a profile are executions of instructions
(hlo_lsp.dump.profile_layout), on the GPU layout of XLA's and xprof's sources.

No real GPU profile of an XLA program is available here (see the module's
docstring): the events below are unit inputs built in the test in the layout
those sources describe (device planes ``/device:GPU:N``, stream lines, derived
lines, ``scope_range_id``, CUDA graphs), not a profile presented as XLA's. The
same events written as a trace JSON go through ``read_trace_json`` to show the
JSON reader applies the same rule."""

from __future__ import annotations

import json

from hlo_lsp.dump.profile_layout import (RawEvent, instruction_events, is_command_buffer,
                                         is_derived_line)
from hlo_lsp.dump.profiles import read_trace_json

GPU = "/device:GPU:0"
STREAM = "Stream #13(Kernel,MemcpyD2D)"


def _kernel(name, start, duration, line=STREAM, **stats):
    stats = {"hlo_module": "jit_step", "program_id": 7, **stats}
    return RawEvent(GPU, line, f"{GPU}/{line}", name, start, duration, stats)


def test_derived_lines_are_not_measurements():
    assert is_derived_line("XLA Ops") and is_derived_line("XLA Modules - from #13")
    assert is_derived_line("Steps") and is_derived_line("TensorFlow Name Scope")
    assert not is_derived_line(STREAM) and not is_derived_line("tf_XLAPjRtCpuClient/12")
    events, skipped = instruction_events([
        _kernel("loop_add_fusion", 0.0, 5.0, hlo_op="add_fusion.1"),
        # xprof's derived line repeating the same kernel's time under the op's name
        _kernel("add_fusion.1", 0.0, 5.0, line="XLA Ops", hlo_op="add_fusion.1"),
        _kernel("add_fusion.1", 0.0, 5.0, line="XLA Ops - from #13", hlo_op="add_fusion.1"),
    ])
    assert skipped == 0
    (e,) = events
    assert (e.op, e.kernel, e.device, e.program_id, e.module) == \
        ("add_fusion.1", "loop_add_fusion", GPU, 7, "jit_step")


def test_kernel_launches_on_the_host_are_not_executions():
    """The CUPTI driver API events merged into /host:CPU carry the kernel's
    annotation and a correlation_id; the kernel on the device is the
    measurement. A CPU thunk (no correlation_id) is one."""
    host = "/host:CPU"
    launch = RawEvent(host, "Host Threads/77", f"{host}/77", "cuLaunchKernelEx", 0.0, 3.0,
                      {"hlo_op": "add_fusion.1", "hlo_module": "jit_step", "program_id": 7,
                       "correlation_id": 812, "device_id": 0})
    nvtx = RawEvent(host, "Host Threads/77/NVTX", f"{host}/77n", "NVTX:add_fusion.1", 0.0,
                    3.0, {"hlo_op": "add_fusion.1", "hlo_module": "jit_step"})
    thunk = RawEvent(host, "tf_XLAPjRtCpuClient/1", f"{host}/1", "sort.0", 0.0, 2.0,
                     {"hlo_op": "sort.0", "hlo_module": "jit_net", "run_id": 3})
    kernel = _kernel("loop_add_fusion", 4.0, 5.0, hlo_op="add_fusion.1", correlation_id=812)
    events, skipped = instruction_events([launch, nvtx, thunk, kernel])
    assert skipped == 0
    assert [(e.device, e.op) for e in events] == [(host, "sort.0"), (GPU, "add_fusion.1")]


def test_kernel_fragments_of_one_execution_are_merged():
    """XLA's join: fragments sharing a scope_range_id are one span from the
    first start to the last end; without one, each event is an execution."""
    events, _ = instruction_events([
        _kernel("gemm_part_1", 10.0, 4.0, hlo_op="dot.3", scope_range_id=41),
        _kernel("gemm_part_2", 15.0, 6.0, hlo_op="dot.3", scope_range_id=41),
        _kernel("gemm_part_1", 30.0, 4.0, hlo_op="dot.3", scope_range_id=42),
        _kernel("copy", 40.0, 1.0, hlo_op="copy.1"),
        _kernel("copy", 50.0, 1.0, hlo_op="copy.1"),
    ])
    assert [(e.op, e.start_us, e.duration_us) for e in events] == [
        ("dot.3", 10.0, 11.0), ("dot.3", 30.0, 4.0), ("copy.1", 40.0, 1.0),
        ("copy.1", 50.0, 1.0)]


def test_nested_hlo_op_values_name_the_innermost_instruction():
    (e,), _ = instruction_events([_kernel("k", 0.0, 1.0, hlo_op="while.2::fusion.5")])
    assert e.op == "fusion.5"


def test_a_command_buffer_measurement_covers_the_instructions_inside_it():
    assert is_command_buffer("command_buffer_12")
    assert is_command_buffer("command_buffer_12 (disabled for profiling)")
    assert not is_command_buffer("fusion.12") and not is_command_buffer("call.4")
    events, _ = instruction_events([
        # a graph whose kernels were traced node by node (cuda_graph_id), then
        # the same graph's execution measured as one event (cuda_graph_exec_id)
        _kernel("fusion_kernel", 0.0, 2.0, hlo_op="fusion.1", cuda_graph_id=5),
        _kernel("reduce_kernel", 2.0, 3.0, hlo_op="reduce.2", cuda_graph_id=5),
        _kernel("CudaGraph", 10.0, 4.0, hlo_op="command_buffer_9", cuda_graph_exec_id=5),
        # a command buffer run thunk by thunk under the profiler: its thunks'
        # hlo_op path runs through it
        _kernel("k1", 20.0, 1.0, hlo_op="command_buffer_3 (disabled for profiling)::fusion.7"),
        _kernel("k2", 21.0, 1.0, hlo_op="command_buffer_3 (disabled for profiling)::fusion.8"),
        _kernel("CudaGraph", 30.0, 2.0, hlo_op="command_buffer_3", cuda_graph_exec_id=6),
    ])
    covers = {(e.op, e.start_us): e.covers for e in events}
    assert covers[("command_buffer_9", 10.0)] == ("fusion.1", "reduce.2")
    assert covers[("command_buffer_3", 30.0)] == ("fusion.7", "fusion.8")
    assert covers[("fusion.1", 0.0)] == () and covers[("fusion.7", 20.0)] == ()


def test_events_that_cannot_be_read_are_counted():
    events, skipped = instruction_events([
        _kernel("k", float("nan"), 1.0, hlo_op="a.1"),
        _kernel("k", 0.0, -1.0, hlo_op="a.1"),
        _kernel("k", 0.0, 1.0, hlo_op=["a.1"]),
        RawEvent(GPU, STREAM, "t", "k", 0.0, 1.0, {"hlo_op": "a.1"}),   # no hlo_module
        _kernel("k", 0.0, 1.0, hlo_op="a.1", run_id="17"),
    ])
    assert skipped == 4 and [(e.op, e.run) for e in events] == [("a.1", "17")]


def test_the_trace_json_reader_applies_the_same_rule(tmp_path):
    """The events above in the Chrome trace format (process_name /device:GPU:0,
    thread names the lines'), written here, not a trace of XLA's."""
    def x(tid, name, ts, dur, **args):
        return {"ph": "X", "pid": 3, "tid": tid, "ts": ts, "dur": dur, "name": name,
                "args": {"hlo_module": "jit_step", **args}}
    doc = {"traceEvents": [
        {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": GPU}},
        {"ph": "M", "pid": 3, "tid": 13, "name": "thread_name", "args": {"name": STREAM}},
        {"ph": "M", "pid": 3, "tid": 99, "name": "thread_name", "args": {"name": "XLA Ops"}},
        x(13, "gemm_part_1", 10.0, 4.0, hlo_op="dot.3", scope_range_id="41"),
        x(13, "gemm_part_2", 15.0, 6.0, hlo_op="dot.3", scope_range_id="41"),
        x(99, "dot.3", 10.0, 11.0, hlo_op="dot.3"),
        x(13, "CudaGraph", 30.0, 2.0, hlo_op="command_buffer_3", cuda_graph_exec_id="6"),
        x(13, "k1", 20.0, 1.0, hlo_op="command_buffer_3 (disabled for profiling)::fusion.7"),
    ]}
    path = tmp_path / "gpu.trace.json"
    path.write_text(json.dumps(doc))
    trace = read_trace_json(str(path))
    assert trace.devices == (GPU,) and trace.skipped == 0
    assert [(e.op, e.start_us, e.duration_us, e.kernel, e.track, e.covers)
            for e in trace.events] == [
        ("dot.3", 10.0, 11.0, "gemm_part_1", "3/13", ()),
        ("command_buffer_3", 30.0, 2.0, "CudaGraph", "3/13", ("fusion.7",)),
        ("fusion.7", 20.0, 1.0, "k1", "3/13", ())]


def test_a_hostile_trace_json_is_read_or_skipped_not_a_traceback(tmp_path):
    """Unhashable pids and tids, a name that is not text: written here."""
    doc = {"traceEvents": [
        {"ph": "M", "pid": [1], "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": [1], "tid": {}, "name": "thread_name", "args": {"name": "t"}},
        {"ph": "X", "pid": [1], "tid": {}, "ts": 1, "dur": 2, "name": 5,
         "args": {"hlo_op": "a.1", "hlo_module": "m"}},
    ]}
    path = tmp_path / "odd.trace.json"
    path.write_text(json.dumps(doc))
    (e,) = read_trace_json(str(path)).events
    assert (e.op, e.device, e.kernel) == ("a.1", "/host:CPU", "")
