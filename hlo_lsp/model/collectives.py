"""Collectives explained: replica groups in every written form, what the ids in
them are, and how many bytes each device moves.

Three questions, one function each:

- :func:`parse_replica_groups`: the text of a ``replica_groups=`` value
  (explicit ``{{0,1},{2,3}}``, empty ``{}``, iota ``[2,4]<=[4,2]T(1,0)``, mesh
  axes ``mesh['a'=2,'b'=4] {'b'}`` with optional ``device_ids=(...)`` and
  sub-axes ``'b':(1)2``) -> :class:`ReplicaGroups`, expanded to lists of ids.
  Mirrors xla/hlo/ir/replica_group.h (``CollectiveDeviceList``,
  ``IotaReplicaGroupList``, ``MeshAxesReplicaGroupList``), xla/hlo/ir/tile_assignment.h
  (iota reshape/transpose) and xla/hlo/ir/mesh_and_axis.h (``Mesh``, ``AxisRef``).
- :func:`group_mode`: which ids the groups hold (replica ids, partition ids or
  global device ids), from ``channel_id`` and ``use_global_device_ids``, as
  ``GetCollectiveOpGroupMode`` in xla/service/collective_ops_utils.h
  (``CollectiveOpGroupMode``).
- :func:`collective_bytes`: the bytes one device sends and receives under the
  usual ring lower bound (the bus-bandwidth factors of nccl-tests'
  doc/PERFORMANCE.md): a lower bound, not a measurement.

:func:`explain_collective` puts the three together for one instruction (hover,
inlay hints, the kernel summary); :func:`async_partner` pairs a ``-start`` with
its ``-done``.

Everything here reads untrusted text: expansion stops at
:data:`MAX_EXPANDED_IDS` ids (counts stay exact when they can be computed
without expanding), iota and mesh forms at :data:`MAX_DIMS` dimensions, and
nothing raises: a form that does not parse comes back with ``error`` set.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field, replace
from enum import Enum

from hlo_lsp.model.markdown import code
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.memo import short_text_cache
from hlo_lsp.model.shapes import format_bytes

#: At most this many ids are expanded into groups (bounded work on hostile
#: dumps); beyond it the groups are counted, not listed.
MAX_EXPANDED_IDS = 1 << 16
#: At most this many dimensions in an iota or mesh form (XLA's own meshes have a
#: handful).
MAX_DIMS = 64
#: Integers of more than this many digits are rejected (Python refuses to
#: convert strings of more than 4300 digits; no device count comes close).
MAX_DIGITS = 18
#: Longer ``source_target_pairs`` values are counted, not expanded.
MAX_PAIRS = MAX_EXPANDED_IDS

#: The collectives explained here (xla/hlo/ir/hlo_opcode.h).
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
               "collective-permute", "collective-broadcast")
#: Opcodes explained here: each collective and its asynchronous ``-start``
#: (all-reduce-start, ..., and the ``reduce-scatter-start`` style XLA prints for
#: an ``async-start`` wrapping one collective). ``-done`` halves are explained
#: through their start (:func:`async_partner`); ``async-start(...), calls=``
#: through the collective it wraps (:func:`wrapped_collective`).
EXPLAINED_OPCODES = frozenset(COLLECTIVES) | frozenset(f"{c}-start" for c in COLLECTIVES)


class GroupMode(Enum):
    """What the ids of ``replica_groups`` are: xla/service/collective_ops_utils.h
    ``CollectiveOpGroupMode`` (values: its enumerator names)."""

    CROSS_REPLICA = "kCrossReplica"
    CROSS_PARTITION = "kCrossPartition"
    CROSS_REPLICA_AND_PARTITION = "kCrossReplicaAndPartition"
    FLATTENED_ID = "kFlattenedID"

    @property
    def ids(self) -> str:
        """What one id in a group is: "replica ids", "partition ids", "global device ids"."""
        return _MODE_IDS.get(self, "replica ids")

    @property
    def meaning(self) -> str:
        """One sentence on who talks to whom in this mode."""
        return _MODE_MEANINGS[self]


_MODE_IDS = {GroupMode.CROSS_PARTITION: "partition ids",
             GroupMode.FLATTENED_ID: "global device ids"}
_MODE_MEANINGS = {
    GroupMode.CROSS_REPLICA:
        "groups of replica ids; each partition runs the collective among the "
        "replicas of its group separately",
    GroupMode.CROSS_PARTITION:
        "groups of partition ids; each replica runs the collective among the "
        "partitions of its group separately",
    GroupMode.CROSS_REPLICA_AND_PARTITION:
        "groups of replica ids; a group takes every partition of those replicas",
    GroupMode.FLATTENED_ID:
        "groups of global device ids (replica_id * num_partitions + partition_id)",
}


@dataclass(frozen=True, slots=True)
class MeshAxis:
    """One axis of a ``mesh[...]`` form: name and size."""

    name: str
    size: int


@dataclass(frozen=True, slots=True)
class AxisRef:
    """An axis of the grouping ``{...}`` of a mesh form: a whole mesh axis, or the
    sub-axis ``name:(pre_size)size`` (xla/hlo/ir/mesh_and_axis.h ``AxisRef``)."""

    name: str
    pre_size: int | None = None
    size: int | None = None

    @property
    def text(self) -> str:
        return self.name if self.pre_size is None else f"{self.name}:({self.pre_size}){self.size}"


@dataclass(frozen=True, slots=True)
class ReplicaGroups:
    """A ``replica_groups=`` value, decoded.

    ``form``: "list" (explicit ``{{0,1},{2,3}}``), "all" (empty ``{}``: one group
    of every participant), "iota" (``[G,S]<=[dims]T(perm)``), "mesh"
    (``mesh[...] {axes}``), or "invalid". ``group_count`` and ``group_size`` are
    exact whenever the text says them (None for "all", which depends on the
    module, and when groups differ in size: ``sizes`` then lists them).
    ``groups`` holds the expanded ids, None when not expanded: more than
    :data:`MAX_EXPANDED_IDS` ids (``truncated``) or an error. ``mesh`` and
    ``axes`` are the mesh axes and the grouped axes of a mesh form;
    ``iota`` the iota text of an iota form. ``error`` says what is wrong with
    a text that does not decode."""

    text: str
    form: str
    groups: tuple[tuple[int, ...], ...] | None = None
    group_count: int | None = None
    group_size: int | None = None
    sizes: tuple[int, ...] = ()
    mesh: tuple[MeshAxis, ...] = ()
    axes: tuple[AxisRef, ...] = ()
    device_ids: str = ""
    truncated: bool = False
    error: str | None = None

    @property
    def id_count(self) -> int | None:
        """Ids in all groups together, None when unknown."""
        if self.sizes:
            return sum(self.sizes)
        if self.group_count is None or self.group_size is None:
            return None
        return self.group_count * self.group_size


def _invalid(text: str, why: str) -> ReplicaGroups:
    return ReplicaGroups(_short(text), "invalid", error=why)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


#: Explicit lists longer than this (characters) are counted with ``str.count``
#: (linear, in C) instead of being checked group by group.
MAX_CHECKED_TEXT = 1 << 22
_LIST_CHARS = str.maketrans("", "", "{},0123456789")
# The whole explicit form, checked in one linear pass (possessive: no backtracking).
_LIST_FORM = re.compile(r"\{(?:\{(?:\d{1,18}+(?:,\d{1,18}+)*+)?\}"
                        r"(?:,\{(?:\d{1,18}+(?:,\d{1,18}+)*+)?\})*+)?\}")
_GROUP = re.compile(r"\{([\d,]*+)\}")
_IOTA = re.compile(r"\[([\d,]*)\]<=\[([\d,]*)\](?:T\(([\d,]*)\))?")
_MESH_HEAD = re.compile(r"mesh\[(.*?)\]")
_MESH_AXIS = re.compile(r"""(['"]?)([^'"=,]+)\1=(\d{1,18})""")
_AXIS_REF = re.compile(r"""(['"]?)([^'":,]+)\1(?::\((\d{1,18})\)(\d{1,18}))?""")
_MAXIMAL = re.compile(r"maximal_mesh\[device_id=(\d{1,18})\]")
_DEVICE_IDS = re.compile(r",?device_ids=\((.*)\)")
_IOTA_DEVICE_IDS = re.compile(r"\[([\d,]*)\](?:T\(([\d,]*)\))?")


def parse_replica_groups(text: str, limit: int = MAX_EXPANDED_IDS) -> ReplicaGroups:
    """Decode the text of a ``replica_groups=`` value (whitespace ignored).
    The last 1,024 decodings of texts up to :data:`GROUPS_CACHE_CHARS` characters
    are remembered (a module repeats a few groupings over thousands of
    collectives; a longer text is not kept).

    Forms (xla/hlo/parser/hlo_parser.cc, printed by xla/hlo/ir/replica_group.cc):

    - ``{}``: one group of every participant (form "all"; how many depends on
      the module header and the group mode, see :func:`participants`);
    - ``{{0,1},{2,3}}``: explicit groups (form "list");
    - ``[G,S]<=[d0,d1,...]`` optionally followed by ``T(p0,p1,...)``: G groups
      of S ids, the ids ``0..G*S-1`` reshaped to ``dims``, transposed by ``perm``,
      read in row-major order (form "iota", xla/hlo/ir/tile_assignment.h
      ``IotaTileAssignment``);
    - ``mesh['a'=2,'b'=4] {'b'}`` with optional ``, device_ids=(...)`` (an iota
      ``[dims]T(perm)`` or an explicit list) and sub-axes ``'b':(pre)size``:
      one group per coordinate of the axes not listed, its ids along the listed
      axes in the order written (form "mesh", xla/hlo/ir/replica_group.cc
      ``MeshAxesReplicaGroupList::flattened_replica_groups``); also
      ``maximal_mesh[device_id=N]``.

    Expands at most ``limit`` ids (``truncated`` beyond; counts stay exact;
    ``limit=0`` only counts); work is linear in the text plus ``limit``. Never
    raises: a text that does not decode gives form "invalid" with ``error`` set."""
    return _parse_replica_groups(text, limit)


#: Longest ``replica_groups`` text whose decoding :func:`parse_replica_groups` keeps.
GROUPS_CACHE_CHARS = 4096


@short_text_cache(maxsize=1024, max_chars=GROUPS_CACHE_CHARS)
def _parse_replica_groups(text: str, limit: int) -> ReplicaGroups:
    compact = "".join(text.split())
    if not compact:
        return _invalid(text, "empty replica_groups value")
    if compact.startswith("{"):
        out = _parse_list(compact, limit)
    elif compact.startswith("["):
        out = _parse_iota(compact, limit)
    elif compact.startswith("mesh[") or compact.startswith("maximal_mesh["):
        out = _parse_mesh(compact, limit)
    else:
        return _invalid(text, "not a replica group form: expected `{...}`, `[G,S]<=[...]` "
                              "or `mesh[...]`")
    return replace(out, text=_short(text.strip()))


def _parse_list(text: str, limit: int) -> ReplicaGroups:
    if text == "{}":
        return ReplicaGroups(text, "all")
    malformed = "malformed group list: expected `{{id,...},...}` of non-negative integers"
    if len(text) > MAX_CHECKED_TEXT:
        # Huge: only counted (a few passes in C); sizes are known for one group.
        if text.translate(_LIST_CHARS) or not text.startswith("{{") or \
                not text.endswith("}}") or text.count("{") != text.count("}"):
            return _invalid(text, malformed)
        count = text.count("{") - 1
        ids = text.count(",") + 1 - text.count("{}")
        return ReplicaGroups(_short(text), "list", None, count,
                             ids if count == 1 else None, truncated=True)
    if _LIST_FORM.fullmatch(text) is None:
        return _invalid(text, malformed)
    # Counted without building the groups (linear, in C). Well-formed, so there
    # are count - 1 commas between groups and k - 1 inside a group of k ids:
    # ids = commas + 1 - (empty groups).
    count = text.count("{") - 1
    ids = text.count(",") + 1 - text.count("{}")
    if count > MAX_EXPANDED_IDS:  # too many groups to even list their sizes
        return ReplicaGroups(_short(text), "list", None, count, None, truncated=True)
    bodies = [m.group(1) for m in _GROUP.finditer(text, 1)]
    sizes = [b.count(",") + 1 if b else 0 for b in bodies]
    uniform = all(s == sizes[0] for s in sizes)
    size = sizes[0] if uniform else None
    ragged = () if uniform else tuple(sizes)
    if ids > limit:
        return ReplicaGroups(_short(text), "list", None, count, size, ragged, truncated=True)
    groups = tuple(tuple(int(x) for x in b.split(",")) if b else () for b in bodies)
    return ReplicaGroups(_short(text), "list", groups, count, size, ragged)


def _ints(text: str) -> list[int] | None:
    if text == "":
        return []
    parts = text.split(",")
    if len(parts) > MAX_DIMS or not all(p.isdigit() and len(p) <= MAX_DIGITS for p in parts):
        return None
    return [int(p) for p in parts]


def _transposed(values, dims: list[int], perm: list[int]) -> list[int]:
    """``values`` (a row-major array of shape ``dims``) transposed by ``perm``
    and read in row-major order (numpy's ``values.reshape(dims).transpose(perm).ravel()``)."""
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    pstrides = [strides[p] for p in perm]
    out = []
    for index in itertools.product(*(range(dims[p]) for p in perm)):
        out.append(values[sum(i * s for i, s in zip(index, pstrides))])
    return out


def _check_perm(perm: list[int], rank: int) -> str | None:
    if sorted(perm) != list(range(rank)):
        return (f"T({','.join(map(str, perm))}) is not a permutation of the {rank} "
                "reshape dimensions")
    return None


def _chunks(flat: list[int], size: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(flat[i:i + size]) for i in range(0, len(flat), size)) if size else ()


def _parse_iota(text: str, limit: int) -> ReplicaGroups:
    m = _IOTA.fullmatch(text)
    if m is None:
        return _invalid(text, "malformed iota form: expected `[G,S]<=[d0,...]` with an "
                              "optional `T(p0,...)`")
    shape, dims = _ints(m.group(1)), _ints(m.group(2))
    perm = _ints(m.group(3)) if m.group(3) is not None else None
    if shape is None or dims is None or (m.group(3) is not None and perm is None):
        return _invalid(text, f"iota form with sizes that are not integers of at most "
                              f"{MAX_DIGITS} digits, or with more than {MAX_DIMS} dimensions")
    if len(shape) != 2:
        return _invalid(text, f"iota form `[{m.group(1)}]` must be [groups,group_size]")
    if not dims:
        return _invalid(text, "iota form without reshape dimensions")
    perm = perm if perm is not None else list(range(len(dims)))
    why = _check_perm(perm, len(dims))
    if why:
        return _invalid(text, why)
    count, size = shape
    if math.prod(dims) != count * size:
        return _invalid(text, f"iota sizes do not match: [{count},{size}] holds "
                              f"{count * size} ids, the reshape [{m.group(2)}] holds "
                              f"{math.prod(dims)}")
    if count * size > limit:
        return ReplicaGroups(text, "iota", None, count, size, truncated=True)
    flat = _transposed(range(count * size), dims, perm)
    return ReplicaGroups(text, "iota", _chunks(flat, size), count, size)


def _parse_mesh(text: str, limit: int) -> ReplicaGroups:
    m = _MAXIMAL.fullmatch(text)
    if m is not None:
        return ReplicaGroups(text, "mesh", ((int(m.group(1)),),), 1, 1)
    head = _MESH_HEAD.match(text)
    if head is None:
        return _invalid(text, "malformed mesh form: expected `mesh['axis'=size,...]`")
    rest = text[head.end():]
    mesh: list[MeshAxis] = []
    for part in head.group(1).split(",") if head.group(1) else []:
        am = _MESH_AXIS.fullmatch(part)
        if am is None:
            return _invalid(text, f"malformed mesh axis {code(_short(part, 40))}: expected "
                                  "'name'=size")
        mesh.append(MeshAxis(am.group(2), int(am.group(3))))
        if len(mesh) > MAX_DIMS:
            return _invalid(text, f"mesh with more than {MAX_DIMS} axes")
    if not mesh:
        return _invalid(text, "mesh without axes")
    names = [a.name for a in mesh]
    if len(set(names)) != len(names):
        return _invalid(text, "mesh with duplicate axis names")
    if any(a.size < 1 for a in mesh):
        return _invalid(text, "mesh axis of size 0")
    # The grouped axes: the last `{...}`; device_ids=(...) between.
    brace = rest.rfind("{")
    if brace < 0 or not rest.endswith("}"):
        return _invalid(text, "mesh form without the grouped axes `{'axis',...}`")
    device_ids_text = rest[:brace]
    axes_text = rest[brace + 1:-1]
    axes: list[AxisRef] = []
    for part in axes_text.split(",") if axes_text else []:
        xm = _AXIS_REF.fullmatch(part)
        if xm is None or xm.group(2) not in names:
            return _invalid(text, f"grouped axis {code(_short(part, 40))} is not an axis of the mesh")
        if xm.group(3) is not None:
            axes.append(AxisRef(xm.group(2), int(xm.group(3)), int(xm.group(4))))
        else:
            axes.append(AxisRef(xm.group(2)))
        if len(axes) > MAX_DIMS:
            return _invalid(text, f"more than {MAX_DIMS} grouped axes")
    total = math.prod(a.size for a in mesh)
    ids_spec = ""
    if device_ids_text:
        dm = _DEVICE_IDS.fullmatch(device_ids_text)
        if dm is None:
            return _invalid(text, "malformed `device_ids=(...)` of the mesh")
        ids_spec = dm.group(1)
    # Factor each mesh axis into the sub-axes written for it (replica_group.cc,
    # GetDimToReshapeAndAggregateAxes): a whole axis is one factor; sub-axes
    # `(pre)size` split it as [pre, size, rest] and in between.
    sizes = {a.name: a.size for a in mesh}
    by_axis: dict[str, list[AxisRef]] = {}
    for ref in axes:
        by_axis.setdefault(ref.name, []).append(ref)
    factors: list[int] = []           # the reshaped dims, mesh axis by mesh axis
    factor_of: dict[AxisRef, int] = {}  # grouped axis -> its factor index
    for axis in mesh:
        refs = by_axis.get(axis.name, [])
        whole = [r for r in refs if r.pre_size is None]
        if whole and len(refs) > 1:
            return _invalid(text, f"axis '{axis.name}' grouped whole and by sub-axes")
        if whole:
            factor_of[whole[0]] = len(factors)
            factors.append(axis.size)
            continue
        product = 1
        for ref in sorted(refs, key=lambda r: r.pre_size):
            if ref.size < 1 or ref.pre_size < product or ref.pre_size % product or \
                    axis.size % (ref.pre_size * ref.size):
                return _invalid(text, f"sub-axis {ref.text} does not fit axis "
                                      f"'{axis.name}' of size {axis.size}")
            if ref.pre_size > product:
                factors.append(ref.pre_size // product)
            factor_of[ref] = len(factors)
            factors.append(ref.size)
            product = ref.pre_size * ref.size
        if product != axis.size or not refs:
            factors.append(axis.size // product)
    if len(factors) > MAX_DIMS:
        return _invalid(text, f"more than {MAX_DIMS} mesh dimensions")
    size = math.prod(ref.size if ref.pre_size is not None else sizes[ref.name] for ref in axes)
    count = total // size if size else 0
    result = dict(text=text, form="mesh", group_count=count, group_size=size,
                  mesh=tuple(mesh), axes=tuple(axes), device_ids=ids_spec)
    if total > limit:
        return ReplicaGroups(groups=None, truncated=True, **result)
    values = _device_ids(ids_spec, total)
    if isinstance(values, str):
        return _invalid(text, values)
    grouped = [factor_of[r] for r in axes]
    perm = [i for i in range(len(factors)) if i not in grouped] + grouped
    flat = _transposed(values, factors, perm)
    return ReplicaGroups(groups=_chunks(flat, size), **result)


def _device_ids(spec: str, total: int) -> list[int] | range | str:
    """The mesh's device ids in row-major order, or why they do not decode."""
    if not spec:
        return range(total)
    m = _IOTA_DEVICE_IDS.fullmatch(spec)
    if m is not None:
        dims = _ints(m.group(1))
        perm = _ints(m.group(2)) if m.group(2) is not None else None
        if dims is None or (m.group(2) is not None and perm is None):
            return f"device_ids {code(_short(spec, 60))}: bad dimensions"
        if math.prod(dims) != total:
            return (f"device_ids [{m.group(1)}] hold {math.prod(dims)} devices, the mesh "
                    f"{total}")
        perm = perm if perm is not None else list(range(len(dims)))
        why = _check_perm(perm, len(dims))
        if why:
            return f"device_ids: {why}"
        return _transposed(range(total), dims, perm)
    ids = re.findall(r"\d+", spec)
    if any(len(x) > MAX_DIGITS for x in ids):
        return f"device_ids with an id of more than {MAX_DIGITS} digits"
    if len(ids) != total:
        return f"device_ids list {len(ids)} devices, the mesh {total}"
    values = [int(x) for x in ids]
    if sorted(values) != list(range(total)):
        return "device_ids are not a permutation of 0..N-1"
    return values


# --------------------------------------------------------------------------
# Who takes part
# --------------------------------------------------------------------------

def replica_and_partition_count(module: HloModule | None) -> tuple[int, int]:
    """``(replica_count, num_partitions)`` from the HloModule header (printed by
    xla/hlo/ir/hlo_module.cc only when not 1; 1 when absent or not a positive
    integer)."""
    out = []
    for name in ("replica_count", "num_partitions"):
        attr = module.header_attribute(name) if module is not None else None
        value = attr.value.strip() if attr is not None else ""
        out.append(int(value) if value.isdigit() and 0 < len(value) < 10 and int(value) > 0
                   else 1)
    return out[0], out[1]


def _flag(ins: Instruction, name: str) -> bool | None:
    attr = ins.attribute(name)
    if attr is None:
        return None
    return attr.value.strip() == "true"


def group_mode(ins: Instruction) -> tuple[GroupMode | None, str | None]:
    """``(mode, error)``: what the ids of ``ins``'s replica groups are, as
    ``GetCollectiveOpGroupMode`` in xla/service/collective_ops_utils.h (in newer
    XLA in xla/hlo/ir/collective_op_group_mode.h).

    all-reduce, all-gather and reduce-scatter (and their ``-start``) read
    ``channel_id`` and ``use_global_device_ids`` (false when not printed): no
    channel_id -> kCrossReplica; channel_id -> kCrossReplicaAndPartition, or
    kFlattenedID with ``use_global_device_ids=true``. The other collectives have
    no ``use_global_device_ids``: channel_id -> kCrossPartition, else
    kCrossReplica. ``use_global_device_ids=true`` without ``channel_id`` is an
    error (mode None)."""
    has_channel = ins.attribute("channel_id") is not None
    opcode = ins.opcode.removesuffix("-start")
    if opcode in ("all-reduce", "all-gather", "reduce-scatter"):
        global_ids = bool(_flag(ins, "use_global_device_ids"))
        if not has_channel:
            if global_ids:
                return None, "use_global_device_ids=true needs a channel_id"
            return GroupMode.CROSS_REPLICA, None
        return (GroupMode.FLATTENED_ID if global_ids
                else GroupMode.CROSS_REPLICA_AND_PARTITION), None
    return (GroupMode.CROSS_PARTITION if has_channel else GroupMode.CROSS_REPLICA), None


def participants(mode: GroupMode | None, groups: ReplicaGroups,
                 replicas: int, partitions: int) -> tuple[int | None, int | None]:
    """``(devices per group, number of device groups)`` for groups of ``mode``
    in a module of ``replicas`` x ``partitions`` devices
    (xla/service/collective_ops_utils.h ``GetParticipatingDevices``): an empty
    ``{}`` means every replica (every partition in kCrossPartition);
    kCrossReplicaAndPartition groups take every partition of their replicas;
    kCrossReplica groups repeat per partition, kCrossPartition groups per
    replica. (None, None) when unknown (ragged or invalid groups, or ``{}``
    in kFlattenedID, which XLA rejects)."""
    if mode is None or groups.form == "invalid":
        return None, None
    if groups.form == "all":
        if mode == GroupMode.FLATTENED_ID:
            return None, None
        size = partitions if mode == GroupMode.CROSS_PARTITION else replicas
        count = 1
    else:
        size, count = groups.group_size, groups.group_count
        if size is None or count is None:
            return None, None
    if mode == GroupMode.CROSS_REPLICA:
        return size, count * partitions
    if mode == GroupMode.CROSS_PARTITION:
        return size, count * replicas
    if mode == GroupMode.CROSS_REPLICA_AND_PARTITION:
        return size * partitions, count
    return size, count


# --------------------------------------------------------------------------
# Bytes on the wire
# --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CollectiveTraffic:
    """Bytes one device sends and receives for one collective, under the ring
    lower bound (nccl-tests doc/PERFORMANCE.md, "bus bandwidth": the factor
    each algorithm moves relative to the buffer): all-reduce 2(n-1)/n of the
    buffer, all-gather (n-1)/n of the gathered output, reduce-scatter (n-1)/n
    of the input, all-to-all (n-1)/n of the buffer, collective-permute and
    collective-broadcast the whole buffer. ``n`` the devices per group,
    ``buffer`` the bytes the factor applies to, ``formula`` how
    ``sent``/``received`` were computed. ``exact`` is False for
    ragged-all-to-all (sizes known at run time: the numbers are an upper
    bound, the whole input and output buffers). A lower bound on the bytes
    moved, not a measurement: PERFORMANCE.md derives the factors for any
    algorithm built from point-to-point sends (a ring reaches them, a tree
    needs as many transfers); protocol overheads move more, and in-network
    reduction (NVLink SHARP: (n-1)/(n+1) for all-reduce) moves less."""

    opcode: str
    n: int
    buffer: int
    sent: int
    received: int
    formula: str
    exact: bool = True


def _size(shape) -> int | None:
    try:
        return shape.decode().byte_size
    except (ValueError, AttributeError):
        return None


def operand_bytes(ins: Instruction, index: int | None = None) -> int | None:
    """Bytes of operand ``index`` of ``ins`` (all operands summed when None), from
    the shape printed with the operand or its definition's; None when a shape is
    unknown."""
    comp = ins.computation
    scope = comp.by_name if comp is not None else {}
    ops = ins.operands if index is None else ins.operands[index:index + 1]
    if not ops:
        return None
    total = 0
    for op in ops:
        shape = op.shape
        if shape is None:
            target = scope.get(op.ref.name)
            shape = target.shape if target is not None else None
        size = _size(shape) if shape is not None else None
        if size is None:
            return None
        total += size
    return total


def collective_bytes(ins: Instruction, module: HloModule | None = None,
                     n: int | None = None) -> CollectiveTraffic | None:
    """Per-device bytes sent and received by the collective ``ins`` (a ``-start``
    counts for its pair; a ``-done`` gives None), for ``n`` devices per group
    (default: from its replica groups and ``module``'s header, see
    :func:`explain_collective`). See :class:`CollectiveTraffic` for the model
    and its source. None when ``ins`` is not a collective, a shape is unknown
    or the group size is. Sizes in bytes."""
    if ins.opcode not in EXPLAINED_OPCODES:
        ins = wrapped_collective(ins, module)
        if ins is None:
            return None
    opcode = ins.opcode.removesuffix("-start")
    if opcode == "collective-permute":
        # Point to point: each source sends the whole buffer to its target.
        buffer = operand_bytes(ins, 0)
        if buffer is None:
            return None
        pairs = parse_source_target_pairs(_value(ins, "source_target_pairs"))
        sends = receives = 1
        if pairs.pairs is not None:
            sends = max(_counts(s for s, _ in pairs.pairs).values(), default=0)
            receives = max(_counts(t for _, t in pairs.pairs).values(), default=0)
        return CollectiveTraffic(ins.opcode, 2, buffer, buffer * sends, buffer * receives,
                                 "the whole buffer from each source to its target "
                                 "(collective-permute)")
    if n is None:
        n = explain_collective(ins, module).devices_per_group
    if n is None or n < 1:
        return None
    if opcode == "ragged-all-to-all":
        sent = operand_bytes(ins, 0)
        received = operand_bytes(ins, 1)
        if sent is None or received is None:
            return None
        return CollectiveTraffic(ins.opcode, n, sent, sent, received,
                                 "at most the input and output buffers (sizes are "
                                 "known at run time)", exact=False)
    buffer = operand_bytes(ins)
    if buffer is None:
        return None
    if opcode == "all-reduce":
        moved = 2 * (n - 1) * buffer // n
        formula = "2(n-1)/n × buffer (ring all-reduce)"
    elif opcode == "all-gather":
        buffer *= n  # the gathered output: n inputs
        moved = (n - 1) * buffer // n
        formula = "(n-1)/n × output (ring all-gather)"
    elif opcode in ("reduce-scatter", "all-to-all"):
        moved = (n - 1) * buffer // n
        formula = f"(n-1)/n × input ({opcode})"
    elif opcode == "collective-broadcast":
        moved = buffer
        formula = "the whole buffer (broadcast)"
    else:
        return None
    return CollectiveTraffic(ins.opcode, n, buffer, moved, moved, formula)


def _counts(items) -> dict[int, int]:
    out: dict[int, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


# --------------------------------------------------------------------------
# collective-permute
# --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SourceTargetPairs:
    """A ``source_target_pairs={{0,1},{1,2}}`` value: ``pairs`` (None when not
    expanded: more than :data:`MAX_PAIRS`, or an error), ``count``, ``error``."""

    text: str
    pairs: tuple[tuple[int, int], ...] | None
    count: int | None
    error: str | None = None

    @property
    def shift(self) -> str | None:
        """The pattern of a regular permutation: "ring shift by k" when every pair is
        ``(i, (i + k) mod m)`` over the ids ``0..m-1`` (shifted by the smallest id),
        "ring shift by k within blocks of b" when that holds in consecutive blocks
        of b ids; None for any other pattern."""
        pairs = self.pairs
        if not pairs:
            return None
        sources = sorted(s for s, _ in pairs)
        base = sources[0]
        if sources != list(range(base, base + len(pairs))) or \
                sorted(t for _, t in pairs) != sources:
            return None
        total = len(pairs)
        for block in range(2, total + 1):
            if total % block:
                continue
            k = (pairs[0][1] - pairs[0][0]) % block
            if k and all((s - base) // block == (t - base) // block and (t - s) % block == k
                         for s, t in pairs):
                return f"ring shift by {k}" + (f" within blocks of {block}"
                                               if block < total else "")
        return None


_PAIR_FORM = re.compile(r"\{(?:\{\d{1,18}+,\d{1,18}+\}(?:,\{\d{1,18}+,\d{1,18}+\})*+)?\}")


def parse_source_target_pairs(text: str | None, limit: int = MAX_PAIRS) -> SourceTargetPairs:
    """Decode a ``source_target_pairs`` value (xla/hlo/ir/source_target_pairs.h):
    ``{{source,target},...}`` of the ids of the group mode (partition ids with a
    channel_id, else replica ids). At most ``limit`` pairs are expanded; never
    raises."""
    if text is None:
        return SourceTargetPairs("", (), 0)
    compact = "".join(text.split())
    if len(compact) > MAX_CHECKED_TEXT:
        return SourceTargetPairs(_short(compact), None, compact.count("{") - 1,
                                 None if compact.translate(_LIST_CHARS) == "" else
                                 "malformed source_target_pairs: expected {{source,target},...}")
    if _PAIR_FORM.fullmatch(compact) is None:
        return SourceTargetPairs(_short(compact), None, None,
                                 "malformed source_target_pairs: expected {{source,target},...}")
    count = compact.count("{") - 1
    if count > limit:
        return SourceTargetPairs(_short(compact), None, count)
    pairs = tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", compact))
    return SourceTargetPairs(_short(compact), pairs, count)


# --------------------------------------------------------------------------
# One instruction
# --------------------------------------------------------------------------

def _value(ins: Instruction, name: str) -> str | None:
    attr = ins.attribute(name)
    return attr.value if attr is not None else None


def replica_groups_text(ins: Instruction) -> str | None:
    """The ``replica_groups=`` value of ``ins`` as XLA wrote it, None when absent.
    A mesh form with ``device_ids=(...)`` is written
    ``mesh[...], device_ids=(...) {...}``; its two comma-separated pieces are
    joined back here."""
    attr = ins.attribute("replica_groups")
    if attr is None:
        return None
    value = attr.value
    if value.lstrip().startswith("mesh[") and not value.rstrip().endswith("}"):
        ids = ins.attribute("device_ids")
        if ids is not None:
            value = f"{value}, device_ids={ids.value}"
    return value


@dataclass(frozen=True, slots=True)
class CollectiveExplanation:
    """What a collective instruction does, in the field's terms.

    ``groups``: its replica groups (None for ops without, e.g.
    collective-permute); ``pairs``: its source_target_pairs; ``mode`` and
    ``mode_error`` from :func:`group_mode`; ``replicas``/``partitions`` from
    the module header; ``devices_per_group`` and ``group_count`` from
    :func:`participants`; ``traffic`` from :func:`collective_bytes`;
    ``channel_id`` as written; ``warning`` when an id is outside the ids the mode
    allows (:func:`id_range_warning`)."""

    opcode: str
    groups: ReplicaGroups | None
    pairs: SourceTargetPairs | None
    mode: GroupMode | None
    mode_error: str | None
    replicas: int
    partitions: int
    devices_per_group: int | None
    group_count: int | None
    channel_id: str | None
    use_global_device_ids: bool | None
    traffic: CollectiveTraffic | None = field(default=None)
    warning: str | None = None

    @property
    def devices(self) -> int:
        """Devices of the module: replica_count × num_partitions."""
        return self.replicas * self.partitions

    def hint(self) -> str:
        """The short form for an inlay hint: ``8 devices · 2 groups · 4.0 MiB/dev``
        (bytes each device sends)."""
        parts = [f"{self.devices} device{'s' if self.devices != 1 else ''}"]
        if self.pairs is not None and self.pairs.count is not None:
            parts.append(f"{self.pairs.count} pair{'s' if self.pairs.count != 1 else ''}")
        elif self.group_count is not None:
            parts.append(f"{self.group_count} group{'s' if self.group_count != 1 else ''}"
                         + (f" of {self.devices_per_group}" if self.devices_per_group else ""))
        elif self.groups is not None and self.groups.error:
            parts.append("groups invalid")
        if self.traffic is not None:
            size = format_bytes(self.traffic.sent)
            size = size[size.find("(") + 1:-1] if "(" in size else size
            parts.append(("≤" if not self.traffic.exact else "") + f"{size}/dev")
        return " · ".join(parts)


def explain_collective(ins: Instruction, module: HloModule | None = None,
                       limit: int = MAX_EXPANDED_IDS) -> CollectiveExplanation | None:
    """The :class:`CollectiveExplanation` of ``ins`` (one of
    :data:`EXPLAINED_OPCODES`, or an ``async-start`` running one: then of the
    collective it wraps, :func:`wrapped_collective`; None for any other
    instruction) in ``module`` (its header gives replica_count and
    num_partitions; 1 each without it). At most ``limit`` ids are expanded
    (:func:`parse_replica_groups`; 0 for counts only, as the inlay hints of a
    whole document ask)."""
    if ins.opcode not in EXPLAINED_OPCODES:
        ins = wrapped_collective(ins, module)
        if ins is None:
            return None
    replicas, partitions = replica_and_partition_count(module)
    mode, error = group_mode(ins)
    text = replica_groups_text(ins)
    groups = parse_replica_groups(text, limit) if text is not None else None
    pairs = None
    if ins.opcode.startswith("collective-permute"):
        pairs = parse_source_target_pairs(_value(ins, "source_target_pairs"))
        size, count = None, pairs.count
    else:
        size, count = participants(mode, groups or ReplicaGroups("{}", "all"),
                                   replicas, partitions)
    traffic = collective_bytes(ins, module, n=size) if size or pairs else None
    return CollectiveExplanation(ins.opcode, groups, pairs, mode, error, replicas, partitions,
                                 size, count, _value(ins, "channel_id"),
                                 _flag(ins, "use_global_device_ids"), traffic,
                                 id_range_warning(mode, groups, pairs, replicas, partitions))


def id_range_warning(mode: GroupMode | None, groups: ReplicaGroups | None,
                     pairs: SourceTargetPairs | None, replicas: int,
                     partitions: int) -> str | None:
    """Why the expanded ids of ``groups`` or ``pairs`` cannot be ``mode``'s ids
    in a module of ``replicas`` x ``partitions`` devices (replica ids below
    replica_count, partition ids below num_partitions, global device ids below
    their product; XLA's verifier rejects them), else None. Only expanded ids
    are checked."""
    if mode is None:
        return None
    if mode == GroupMode.CROSS_PARTITION:
        bound, what = partitions, f"num_partitions={partitions}"
    elif mode == GroupMode.FLATTENED_ID:
        bound, what = replicas * partitions, f"{replicas * partitions} devices"
    else:
        bound, what = replicas, f"replica_count={replicas}"
    ids: list[int] = []
    if groups is not None and groups.groups is not None:
        ids = [max(g) for g in groups.groups if g]
    if pairs is not None and pairs.pairs:
        ids += [max(p) for p in pairs.pairs]
    top = max(ids, default=-1)
    if top >= bound:
        return f"id {top} is not a {mode.ids.removesuffix('s')}: {what}"
    return None


def wrapped_collective(ins: Instruction, module: HloModule | None) -> Instruction | None:
    """The collective an ``async-start`` runs: the root of its ``calls=``
    computation when that is one of :data:`COLLECTIVES` (XLA wraps collectives
    in async computations, xla/hlo/ir/hlo_instructions.h ``HloAsyncInstruction``);
    None otherwise."""
    if ins.opcode != "async-start" or module is None:
        return None
    for cref in ins.called:
        callee = module.by_name.get(cref.ref.name)
        root = callee.root if callee is not None else None
        if cref.attr == "calls" and root is not None and root.opcode in COLLECTIVES:
            return root
    return None


def async_partner(ins: Instruction) -> list[Instruction]:
    """The other half of an asynchronous pair: for an ``X-start`` its ``X-done``
    users (async-start -> async-done too), for an ``X-done`` the ``X-start``
    operand; [] otherwise. Same computation only (XLA's rule)."""
    comp = ins.computation
    if comp is None:
        return []
    if ins.opcode.endswith("-start"):
        done = ins.opcode[:-len("-start")] + "-done"
        if comp.by_name.get(ins.name.name) is not ins:
            return []
        return [u for u in comp.users_by_name.get(ins.name.name, ()) if u.opcode == done]
    if ins.opcode.endswith("-done") and ins.operands:
        start = ins.opcode[:-len("-done")] + "-start"
        target = comp.by_name.get(ins.operands[0].ref.name)
        if target is not None and target.opcode == start:
            return [target]
    return []


__all__ = [
    "AxisRef", "EXPLAINED_OPCODES", "CollectiveExplanation", "CollectiveTraffic",
    "COLLECTIVES", "GroupMode", "MAX_EXPANDED_IDS", "MeshAxis", "ReplicaGroups",
    "SourceTargetPairs", "async_partner", "collective_bytes", "explain_collective",
    "group_mode", "id_range_warning", "operand_bytes", "wrapped_collective",
    "parse_replica_groups", "parse_source_target_pairs",
    "participants", "replica_and_partition_count", "replica_groups_text",
]
