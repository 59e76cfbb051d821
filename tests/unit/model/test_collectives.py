"""Collectives explained (hlo_lsp.model.collectives): every written form of
replica groups expanded, checked against the explicit lists XLA wrote for the
same groups in the real 8-device dump of examples/sharded/ and against numpy's
reshape/transpose for iota; group modes; bytes per device; -start/-done
pairs; hostile inputs with bounded work."""

from __future__ import annotations

import itertools
import re

import pytest

from hlo_lsp.model.collectives import (
    MAX_EXPANDED_IDS, GroupMode, async_partner, collective_bytes, explain_collective,
    group_mode, parse_replica_groups, parse_source_target_pairs, participants,
    replica_and_partition_count, replica_groups_text, wrapped_collective)
from hlo_lsp.syntax.parser import parse
from tests.helpers import (COLLECTIVES_STEP, COLLECTIVES_STEP_IOTA, MESH_MATMUL_DATA,
                           MESH_MATMUL_MODEL, SPMD_MESH8_GPU, cpu_seconds, read)


def _collectives(module):
    return [i for c in module.computations for i in c.instructions
            if i.attribute("replica_groups") is not None]


def _by_name(module) -> dict[str, object]:
    return {i.name.name: i for i in _collectives(module)}


# -- explicit and empty ------------------------------------------------------

def test_explicit_list_and_empty():
    g = parse_replica_groups("{{0,1},{2,3}}")
    assert (g.form, g.groups, g.group_count, g.group_size) == ("list", ((0, 1), (2, 3)), 2, 2)
    assert parse_replica_groups(" { {0, 1} ,{2,3} } ").groups == ((0, 1), (2, 3))
    ragged = parse_replica_groups("{{0,1,2},{3}}")
    assert ragged.group_size is None and ragged.sizes == (3, 1) and ragged.id_count == 4
    empty = parse_replica_groups("{}")
    assert empty.form == "all" and empty.groups is None and empty.error is None


def test_every_explicit_list_of_the_real_dump_is_read_as_written():
    module = parse(read(COLLECTIVES_STEP))
    seen = 0
    for ins in _collectives(module):
        text = replica_groups_text(ins)
        expected = tuple(tuple(int(x) for x in g.split(","))
                         for g in re.findall(r"\{([\d,]+)\}", text))
        g = parse_replica_groups(text)
        assert g.form == "list" and g.groups == expected and g.error is None
        seen += 1
    assert seen >= 5  # all-reduce x2, all-gather, reduce-scatter, all-to-all


# -- iota --------------------------------------------------------------------

def test_iota_plain_and_transposed():
    assert parse_replica_groups("[2,4]<=[8]").groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert parse_replica_groups("[4,2]<=[2,4]T(1,0)").groups == (
        (0, 4), (1, 5), (2, 6), (3, 7))
    g = parse_replica_groups("[2,4]<=[4,2]T(1,0)")
    assert g.form == "iota" and g.groups == ((0, 2, 4, 6), (1, 3, 5, 7))


@pytest.mark.parametrize("dims", [(8,), (2, 4), (4, 2), (2, 2, 2), (3, 2, 4), (2, 3, 2, 2)])
def test_iota_matches_numpy_for_every_permutation(dims):
    np = pytest.importorskip("numpy")
    n = int(np.prod(dims))
    for perm in itertools.permutations(range(len(dims))):
        for size in (d for d in range(1, n + 1) if n % d == 0):
            text = (f"[{n // size},{size}]<=[{','.join(map(str, dims))}]"
                    f"T({','.join(map(str, perm))})")
            want = np.arange(n).reshape(dims).transpose(perm).reshape(n // size, size)
            assert parse_replica_groups(text).groups == tuple(map(tuple, want.tolist())), text


def test_iota_input_derived_from_the_real_dump():
    """tests/data/README.md: the committed dump with its explicit groups rewritten
    as iota; each iota form expands to the groups it replaced."""
    real, iota = read(COLLECTIVES_STEP), read(COLLECTIVES_STEP_IOTA)
    rewrites = {"{{0,1,2,3},{4,5,6,7}}": "[2,4]<=[8]",
                "{{0,4},{1,5},{2,6},{3,7}}": "[4,2]<=[2,4]T(1,0)",
                "{{0,1,2,3,4,5,6,7}}": "[1,8]<=[8]"}
    rewritten = real
    for explicit, form in rewrites.items():
        rewritten = rewritten.replace(f"replica_groups={explicit}", f"replica_groups={form}")
        assert parse_replica_groups(form).groups == parse_replica_groups(explicit).groups
    assert rewritten == iota
    explicit_groups = {k: parse_replica_groups(replica_groups_text(i)).groups
                       for k, i in _by_name(parse(real)).items()}
    iota_module = parse(iota)
    assert not iota_module.problems
    assert len(explicit_groups) == 5
    for key, ins in _by_name(iota_module).items():
        g = parse_replica_groups(replica_groups_text(ins))
        assert g.form == "iota" and g.groups == explicit_groups[key], key


def test_xla_accepts_the_hand_written_iota_input():
    pytest.importorskip("jax")
    from jax._src.lib import xla_client as xc

    printed = xc.hlo.hlo_module_from_text(read(COLLECTIVES_STEP_IOTA)).to_string()
    assert "replica_groups=[4,2]<=[2,4]T(1,0)" in printed


# -- mesh --------------------------------------------------------------------

def test_mesh_forms_of_the_real_dump_expand_to_the_groups_xla_wrote_explicitly():
    """The same program on the same 2x4 mesh ("data" x "model"): the psum over
    "model" is an explicit list in collectives_step, the partitioner's all-reduce
    over "model" (and over "data") a mesh form in sharded_matmul."""
    step = _by_name(parse(read(COLLECTIVES_STEP)))
    over_model = parse_replica_groups(replica_groups_text(step["psum_invariant.14"])).groups
    over_data = parse_replica_groups(replica_groups_text(step["all_gather.3"])).groups
    assert "/psum_invariant" in step["psum_invariant.14"].metadata["op_name"]
    assert over_model == ((0, 1, 2, 3), (4, 5, 6, 7))   # as XLA wrote it
    for path, expected, device_ids in ((MESH_MATMUL_MODEL, over_model, "[2,4]T(1,0)"),
                                       (MESH_MATMUL_DATA, over_data, "")):
        [ins] = _collectives(parse(read(path)))
        g = parse_replica_groups(replica_groups_text(ins))
        assert g.form == "mesh" and g.error is None
        assert g.device_ids == device_ids
        assert [a.name for a in g.axes] == ["axis_1"]
        assert g.groups == expected, path.name


def test_mesh_with_device_ids_is_one_value_although_written_as_two_attributes():
    [ins] = _collectives(parse(read(MESH_MATMUL_MODEL)))
    assert ins.attribute("device_ids") is not None  # the parser splits at the comma
    assert replica_groups_text(ins) == (
        "mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}")


def test_mesh_axes_sub_axes_order_and_maximal():
    g = parse_replica_groups("mesh['a'=2,'b'=4] {'b'}")
    assert [(a.name, a.size) for a in g.mesh] == [("a", 2), ("b", 4)]
    assert g.groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert parse_replica_groups("mesh['a'=2,'b'=4] {'a'}").groups == (
        (0, 4), (1, 5), (2, 6), (3, 7))
    # Axes in the order written: "b" then "a" within the one group.
    assert parse_replica_groups("mesh['a'=2,'b'=4] {'b','a'}").groups == (
        (0, 4, 1, 5, 2, 6, 3, 7),)
    # Sub-axis "a":(2)2 of an axis of 8: [2,2,2], the middle factor.
    sub = parse_replica_groups("mesh['a'=8] {'a':(2)2}")
    assert sub.groups == ((0, 2), (1, 3), (4, 6), (5, 7)) and sub.axes[0].text == "a:(2)2"
    assert parse_replica_groups("mesh['a'=8] {'a':(1)2,'a':(4)2}").groups == (
        (0, 1, 4, 5), (2, 3, 6, 7))
    assert parse_replica_groups("mesh['a'=2,'b'=4] {}").groups == tuple((i,) for i in range(8))
    assert parse_replica_groups("mesh[a=2,b=4] {b}").groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert parse_replica_groups("maximal_mesh[device_id=3]").groups == ((3,),)
    explicit = parse_replica_groups("mesh['a'=2,'b'=2], device_ids=(3,1,2,0) {'b'}")
    assert explicit.groups == ((3, 1), (2, 0))


# -- hostile input: clear messages, bounded work -------------------------------

@pytest.mark.parametrize("text, message", [
    ("[2,4]<=[9]", "iota sizes do not match: [2,4] holds 8 ids, the reshape [9] holds 9"),
    ("[2,4]<=[2,4]T(0,0)", "not a permutation"),
    ("[2,4]<=[8]T(1,0)", "not a permutation"),
    ("[8]<=[8]", "must be [groups,group_size]"),
    ("[2,4]<=[" + ",".join(["1"] * 100) + ",8]", "more than 64 dimensions"),
    ("{{0,a}}", "malformed group list"),
    ("{{0,1}", "malformed group list"),
    ("{{-1,0}}", "malformed group list"),
    ("mesh['a'=2,'a'=4] {'a'}", "duplicate axis names"),
    ("mesh['a'=2,'b'=4] {'c'}", "not an axis of the mesh"),
    ("mesh['a'=8] {'a':(3)2}", "does not fit axis 'a'"),
    ("mesh['a'=2,'b'=4], device_ids=(0,1,2) {'a'}", "device_ids list 3 devices, the mesh 8"),
    ("mesh['a'=2,'b'=2], device_ids=(0,0,1,2) {'a'}", "not a permutation"),
    ("mesh['a'=2,'b'=4]", "without the grouped axes"),
    ("bogus", "not a replica group form"),
])
def test_malformed_forms_say_what_is_wrong(text, message):
    g = parse_replica_groups(text)
    assert g.form == "invalid" and g.groups is None and message in g.error


def test_ten_million_devices_are_counted_not_expanded():
    text = "{{" + ",".join(map(str, range(10 ** 7))) + "}}"
    g, cpu_s = cpu_seconds(parse_replica_groups, text)
    assert (g.form, g.group_count, g.group_size, g.truncated) == ("list", 1, 10 ** 7, True)
    assert g.groups is None and len(g.text) <= 200
    assert cpu_s < 5, cpu_s  # a few passes in C over 79 MB (processor time)
    many = "{" + ",".join(f"{{{i},{i + 1}}}" for i in range(0, 2 * 10 ** 5, 2)) + "}"
    g = parse_replica_groups(many)
    assert g.truncated and g.groups is None and g.group_count == 10 ** 5


def test_huge_iota_and_mesh_are_counted_in_constant_time():
    g, iota_s = cpu_seconds(parse_replica_groups, "[1000000000,100000000]<=[100000000000000000]")
    m, mesh_s = cpu_seconds(parse_replica_groups, "mesh['a'=100000,'b'=100000] {'b'}")
    assert iota_s + mesh_s < 0.5     # processor time; expanding 10^9 ids: hours
    assert (g.group_count, g.group_size, g.truncated, g.groups) == (10 ** 9, 10 ** 8, True, None)
    assert (m.group_count, m.group_size, m.truncated) == (10 ** 5, 10 ** 5, True)
    assert parse_replica_groups(f"[1,{MAX_EXPANDED_IDS}]<=[{MAX_EXPANDED_IDS}]").groups is not None


# -- group modes, participants, traffic -----------------------------------------

MODULE = """HloModule m, replica_count=2, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %e (p: f32[1024]) -> f32[1024] {
  %p = f32[1024]{0} parameter(0)
  %r = f32[1024]{0} all-reduce(%p), replica_groups={}, to_apply=%add
  %rp = f32[1024]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, to_apply=%add
  %g = f32[1024]{0} all-reduce(%p), channel_id=2, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add
  %bad = f32[1024]{0} all-reduce(%p), replica_groups={}, use_global_device_ids=true, to_apply=%add
  %ag = f32[4096]{0} all-gather(%p), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
  %rs = f32[256]{0} reduce-scatter(%p), channel_id=4, replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add, use_global_device_ids=true
  %out = f32[1024]{0} all-reduce(%p), replica_groups={{0,1,2,3}}, to_apply=%add
  %a2a = f32[1024]{0} all-to-all(%p), channel_id=5, replica_groups={{0,1,2,3}}, dimensions={0}
  %cp = f32[1024]{0} collective-permute(%p), channel_id=6, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %cb = f32[1024]{0} collective-broadcast(%p), replica_groups={{0,1}}
  %ra = f32[1024]{0} ragged-all-to-all(%p, %p, s32[4]{0} %o, s32[4]{0} %o, s32[4]{0} %o, s32[4]{0} %o), channel_id=7, replica_groups={{0,1,2,3}}
  %st = f32[1024]{0} all-reduce-start(%p), channel_id=8, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add
  ROOT %dn = f32[1024]{0} all-reduce-done(%st)
}
"""


def _named(module):
    return {i.name.name: i for c in module.computations for i in c.instructions}


def test_group_mode_follows_channel_id_and_use_global_device_ids():
    ins = _named(parse(MODULE))
    assert group_mode(ins["r"]) == (GroupMode.CROSS_REPLICA, None)
    assert group_mode(ins["rp"]) == (GroupMode.CROSS_REPLICA_AND_PARTITION, None)
    assert group_mode(ins["g"]) == (GroupMode.FLATTENED_ID, None)
    assert group_mode(ins["a2a"]) == (GroupMode.CROSS_PARTITION, None)
    assert group_mode(ins["cb"]) == (GroupMode.CROSS_REPLICA, None)
    mode, error = group_mode(ins["bad"])
    assert mode is None and "needs a channel_id" in error
    assert GroupMode.FLATTENED_ID.ids == "global device ids"


def test_participants_from_the_module_header():
    module = parse(MODULE)
    ins = _named(module)
    assert replica_and_partition_count(module) == (2, 4)
    assert replica_and_partition_count(parse("HloModule m\n")) == (1, 1)
    # {} in cross-replica mode: every replica, once per partition.
    assert participants(GroupMode.CROSS_REPLICA, parse_replica_groups("{}"), 2, 4) == (2, 4)
    assert participants(GroupMode.CROSS_PARTITION, parse_replica_groups("{}"), 2, 4) == (4, 2)
    # Replica ids with a channel: each group takes every partition of its replicas.
    assert explain_collective(ins["rp"], module).devices_per_group == 2 * 4
    assert explain_collective(ins["rp"], module).warning is None
    # Replica ids 2 and 3 in a module of 2 replicas.
    assert explain_collective(ins["out"], module).warning == (
        "id 3 is not a replica id: replica_count=2")
    ex = explain_collective(ins["g"], module)
    assert (ex.devices_per_group, ex.group_count, ex.devices) == (4, 2, 8)
    assert participants(GroupMode.FLATTENED_ID, parse_replica_groups("{}"), 2, 4) == (None, None)


def test_bytes_per_device_under_the_ring_model():
    module = parse(MODULE)
    ins = _named(module)
    buffer = 1024 * 4
    r = collective_bytes(ins["g"], module)            # all-reduce, n = 4
    assert (r.n, r.sent, r.received) == (4, 2 * 3 * buffer // 4, 2 * 3 * buffer // 4)
    ag = collective_bytes(ins["ag"], module)          # output 4 x input
    assert (ag.buffer, ag.sent) == (4 * buffer, 3 * buffer)
    rs = collective_bytes(ins["rs"], module)          # (n-1)/n of the input
    assert (rs.buffer, rs.sent) == (buffer, 3 * buffer // 4)
    assert collective_bytes(ins["a2a"], module).sent == 3 * buffer // 4
    cp = collective_bytes(ins["cp"], module)
    assert (cp.sent, cp.received) == (buffer, buffer)
    assert collective_bytes(ins["cb"], module).sent == buffer
    ra = collective_bytes(ins["ra"], module)
    assert ra is not None and not ra.exact and ra.sent == buffer
    assert collective_bytes(ins["st"], module).sent == 2 * 3 * buffer // 4
    assert collective_bytes(ins["dn"], module) is None
    assert collective_bytes(ins["p"], module) is None


def test_explanation_hint_is_short():
    module = parse(MODULE)
    ins = _named(module)
    assert explain_collective(ins["g"], module).hint() == (
        "8 devices · 2 groups of 4 · 6.0 KiB/dev")
    assert explain_collective(ins["cp"], module).hint() == "8 devices · 4 pairs · 4.0 KiB/dev"
    assert explain_collective(ins["ra"], module).hint().endswith("≤4.0 KiB/dev")


def test_source_target_pairs():
    real = parse(read(COLLECTIVES_STEP))
    [cp] = [i for c in real.computations for i in c.instructions
            if i.opcode == "collective-permute"]
    pairs = parse_source_target_pairs(cp.attribute("source_target_pairs").value)
    assert pairs.count == 8 and pairs.pairs[:2] == ((0, 1), (1, 2))
    assert pairs.shift == "ring shift by 1 within blocks of 4"  # ppermute over "model"
    assert parse_source_target_pairs("{{0,1},{1,0}}").shift == "ring shift by 1"
    assert parse_source_target_pairs("{{0,2},{2,0}}").shift is None
    assert parse_source_target_pairs("{{0,1},{1}}").error
    big = "{" + ",".join(f"{{{i},{i + 1}}}" for i in range(10 ** 5)) + "}"
    assert parse_source_target_pairs(big).pairs is None


def test_start_and_done_are_paired():
    module = parse(read(SPMD_MESH8_GPU))
    ins = _named(module)
    start, done = ins["all-reduce-start"], ins["all-reduce-done"]
    assert async_partner(start) == [done] and async_partner(done) == [start]
    assert async_partner(ins["gemm_fusion_dot"]) == []
    ex = explain_collective(start, module)
    assert ex.mode == GroupMode.FLATTENED_ID and ex.groups.groups == (tuple(range(8)),)
    assert explain_collective(done, module) is None


# -- asynchronous forms ----------------------------------------------------------

ASYNC = """HloModule m, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%wrapped_rs (x: f32[1024]) -> f32[256] {
  %x = f32[1024]{0} parameter(0)
  ROOT %rs = f32[256]{0} reduce-scatter(%x), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
}

ENTRY %e (p: f32[1024]) -> (f32[256], f32[1024]) {
  %p = f32[1024]{0} parameter(0)
  %start = ((f32[1024]{0}), f32[256]{0}) async-start(%p), calls=%wrapped_rs
  %done = f32[256]{0} async-done(%start)
  %a2a-start = ((f32[1024]{0}), f32[1024]{0}) all-to-all-start(%p), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={0}
  %a2a-done = f32[1024]{0} all-to-all-done(%a2a-start)
  ROOT %t = (f32[256]{0}, f32[1024]{0}) tuple(%done, %a2a-done)
}
"""


def test_async_wrappers_are_explained_through_the_collective_they_run():
    """XLA parses both spellings and prints the first as ``reduce-scatter-start``
    (checked with jaxlib 0.10.2's hlo_module_from_text)."""
    module = parse(ASYNC)
    assert not module.problems
    ins = _named(module)
    assert wrapped_collective(ins["start"], module) is ins["rs"]
    assert wrapped_collective(ins["a2a-start"], module) is None
    ex = explain_collective(ins["start"], module)
    assert ex.opcode == "reduce-scatter" and ex.mode == GroupMode.FLATTENED_ID
    assert collective_bytes(ins["start"], module).sent == 3 * 1024 * 4 // 4
    ex = explain_collective(ins["a2a-start"], module)
    assert ex.mode == GroupMode.CROSS_PARTITION and ex.traffic.sent == 3 * 1024 * 4 // 4
    assert async_partner(ins["done"]) == [ins["start"]]
    assert async_partner(ins["a2a-start"]) == [ins["a2a-done"]]


@pytest.mark.parametrize("text", [
    "[1,2]<=[" + "9" * 5000 + "]", "{{" + "9" * 5000 + "}}", "mesh[a=" + "9" * 5000 + "] {a}",
    "maximal_mesh[device_id=" + "9" * 5000 + "]",
    "mesh[a=2], device_ids=(" + "9" * 5000 + ",1) {a}",
])
def test_integers_too_long_for_python_are_rejected_not_raised(text):
    # int() refuses strings of more than 4300 digits (ValueError).
    assert parse_replica_groups(text).error
    assert parse_source_target_pairs("{{" + "9" * 5000 + ",1}}").error
