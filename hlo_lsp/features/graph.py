"""The dataflow graph of a computation, or of the neighbourhood of one
instruction, as plain data: what the ``hlo/graph`` request, ``hlo-lsp graph``
and its HTML page draw.

Nodes are instructions (name, opcode, shape without layout, kind, source
offsets); an edge goes from an operand's defining instruction to its user, with
the operand index and the operand's shape. A fusion's fused computation, a
``while`` body and condition, a ``conditional``'s branches and a ``call``'s callee
are *clusters*: their instructions carry the cluster id, the cluster names its
caller (``owner``), so a renderer can draw them as collapsible boxes. A cluster
is expanded only while the node budget allows; the rest is counted, never
silently dropped (:attr:`Graph.omitted`, :attr:`GraphNode.hidden`).

Big computations: with ``around`` (an instruction) the graph is the
breadth-first neighbourhood over operands and users up to ``hops`` hops, capped
at ``limit`` nodes; a whole computation larger than ``limit`` is answered the
same way around its ROOT. The cost is that of the nodes shown (plus one pass
over the computation to index its users, kept by the model).

Measured time: given a profile of the module's compile
(:class:`hlo_lsp.model.profile.ModuleProfile`, joined by
:func:`hlo_lsp.dump.profiles.join_file`), each node the profile measured
carries its :class:`~hlo_lsp.model.profile.Measured` (count, total and self
time in µs), and the DOT shades such nodes by measured self time instead of
filling them by kind (:func:`heat_color`), the time in their label and tooltip.

Kinds (the one answer for each: :mod:`hlo_lsp.model.kernels`,
:data:`hlo_lsp.model.summary.COLLECTIVE_OPCODES`): ``fusion`` (``label``:
"Triton GEMM fusion", "loop fusion", ...), ``custom-call`` (``library``:
cuBLAS, cuBLASLt FP8, cuDNN, Triton...), ``collective`` (also the ``-done`` half
of an async collective), ``parameter``, ``constant``, ``control-flow`` (while,
conditional, call, async-*), ``other``. Offsets are code points into the
module's text, as everywhere in the model. Pure; never raises on a partial
module.
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from dataclasses import dataclass, field

from hlo_lsp.model.backend_config import target_library
from hlo_lsp.model.hlo import Computation, HloModule, Instruction
from hlo_lsp.model.kernels import (BACKEND_KIND_LABELS, HLO_KIND_LABELS, custom_call_target,
                                   fusion_backend_kind, hlo_fusion_kind, short_shape)
from hlo_lsp.model.profile import Measured, ModuleProfile
from hlo_lsp.model.summary import COLLECTIVE_OPCODES
from hlo_lsp.model.units import format_seconds

#: Nodes shown at most by default (the request and the command may ask for others).
DEFAULT_LIMIT = 200
#: Hops around an instruction by default.
DEFAULT_HOPS = 3
#: Nodes shown at most, whatever is asked.
MAX_LIMIT = 5000
#: Nested clusters (fusion in fusion, while in while) expanded at most.
MAX_DEPTH = 8

KINDS = ("fusion", "custom-call", "collective", "parameter", "constant", "control-flow",
         "other")
_CONTROL_FLOW = frozenset("while conditional call async-start async-update async-done".split())
#: Attributes whose computations are drawn as clusters, per opcode.
_CLUSTER_ATTRS = {
    "fusion": ("calls",),
    "while": ("condition", "body"),
    "conditional": ("true_computation", "false_computation", "branch_computations"),
    "call": ("to_apply", "calls"),
    "async-start": ("calls",),
}


@dataclass(slots=True)
class GraphNode:
    """One instruction. ``id`` is unique in the graph (the name at the top level,
    ``<cluster id>/<name>`` inside a cluster); ``start``/``end`` the instruction's
    text, ``name_start``/``name_end`` its name (with ``%``); ``hidden``: operands
    and users of this instruction that are not shown; ``calls``: ids of the
    clusters this node owns (expanded or not); ``measured``: its measured
    times when the graph was drawn with a profile that measured it (µs)."""

    id: str
    name: str
    opcode: str
    shape: str
    kind: str
    computation: str
    start: int
    end: int
    name_start: int
    name_end: int
    cluster: str | None = None
    label: str = ""
    library: str = ""
    target: str = ""
    is_root: bool = False
    hidden: int = 0
    calls: list[str] = field(default_factory=list)
    measured: Measured | None = None


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """Operand ``operand`` of ``target`` is ``source`` (node ids); ``shape`` is the
    operand's shape without layout."""

    source: str
    target: str
    operand: int
    shape: str


@dataclass(slots=True)
class GraphCluster:
    """A called computation drawn inside its caller: ``owner`` is the calling
    node's id, ``attr`` the attribute that calls it (``calls``, ``body``...),
    ``expanded`` whether its instructions are in the graph, ``size`` its
    instruction count, ``shown`` how many of them are nodes."""

    id: str
    computation: str
    owner: str
    attr: str
    size: int
    shown: int = 0
    expanded: bool = False
    parent: str | None = None


@dataclass(slots=True)
class Graph:
    """The answer: the computation drawn (``computation``), the instruction the
    neighbourhood is around (``focus``, a node id, else None), ``nodes``,
    ``edges``, ``clusters``; ``total`` instructions of the computation and of the
    clusters offered, ``omitted`` of those not shown; ``message`` says so
    ("1234 more not shown: ..."), "" when everything is shown."""

    computation: str
    focus: str | None
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    clusters: list[GraphCluster]
    total: int
    omitted: int
    message: str = ""
    hops: int | None = None
    limit: int = DEFAULT_LIMIT
    #: the profile's largest self time among the nodes (µs), the top of the
    #: shading; None when drawn without a profile or none of its nodes measured
    measured_max_us: float | None = None

    def node(self, node_id: str) -> GraphNode | None:
        """The node with ``node_id``, None when absent."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        return None


def classify_node(ins: Instruction) -> tuple[str, str, str, str]:
    """``(kind, label, library, target)`` of one instruction (see the module
    docstring): a fusion's label from its backend or HLO kind, a custom-call's
    library and target."""
    op = ins.opcode
    if op == "fusion":
        backend, _ = fusion_backend_kind(ins)
        if backend:
            label = BACKEND_KIND_LABELS.get(backend, backend) + " fusion"
        else:
            hlo = hlo_fusion_kind(ins)
            label = HLO_KIND_LABELS.get(hlo, hlo or "?") + " fusion"
        return "fusion", label, "", ""
    if op == "custom-call":
        target = custom_call_target(ins) or ""
        library = target_library(target)
        return "custom-call", f"{library} call", library, target
    if op in COLLECTIVE_OPCODES or (op.endswith("-done")
                                    and op[:-5] + "-start" in COLLECTIVE_OPCODES):
        return "collective", op, "", ""
    if op == "parameter":
        return "parameter", op, "", ""
    if op == "constant":
        return "constant", op, "", ""
    if op in _CONTROL_FLOW:
        return "control-flow", op, "", ""
    return "other", op, "", ""


class _Builder:
    def __init__(self, module: HloModule, limit: int) -> None:
        self.module = module
        self.limit = limit
        self.nodes: list[GraphNode] = []
        self.edges: list[GraphEdge] = []
        self.clusters: list[GraphCluster] = []
        self.total = 0
        self.shown = 0

    def room(self) -> int:
        return self.limit - len(self.nodes)

    def add_nodes(self, comp: Computation, chosen: list[Instruction], cluster: str | None,
                  depth: int, active: set[str]) -> dict[str, str]:
        """Nodes for ``chosen`` (instructions of ``comp``) and the edges between
        them; then the clusters of their calls. Returns name -> node id."""
        prefix = f"{cluster}/" if cluster else ""
        ids = {ins.name.name: prefix + ins.name.name for ins in chosen}
        users = comp.users_by_name
        by_name = comp.by_name
        # users of each shown instruction that are shown too (cost: the shown edges)
        shown_users: dict[str, int] = {}
        for ins in chosen:
            for used in {r.name for r in ins.uses()}:
                if used in ids:
                    shown_users[used] = shown_users.get(used, 0) + 1
        added: list[tuple[Instruction, GraphNode]] = []
        for ins in chosen:
            kind, label, library, target = classify_node(ins)
            name = ins.name.name
            operands = {op.ref.name for op in ins.operands if op.ref.name in by_name}
            hidden = sum(1 for n in operands if n not in ids) + \
                len(users.get(name, ())) - shown_users.get(name, 0)
            node = GraphNode(ids[name], name, ins.opcode,
                             short_shape(ins.shape.text) if ins.shape is not None else "",
                             kind, comp.name.name, ins.start, ins.end, ins.name.start,
                             ins.name.end, cluster, label, library, target, ins.is_root,
                             hidden)
            self.nodes.append(node)
            added.append((ins, node))
            for i, op in enumerate(ins.operands):
                src = ids.get(op.ref.name)
                if src is None:
                    continue
                producer = comp.by_name.get(op.ref.name)
                shape = op.shape.text if op.shape is not None else (
                    producer.shape.text if producer is not None and producer.shape else "")
                self.edges.append(GraphEdge(src, node.id, i, short_shape(shape)))
        for ins, node in added:
            self.add_clusters(ins, node, depth, active)
        return ids

    def add_clusters(self, ins: Instruction, node: GraphNode, depth: int,
                     active: set[str]) -> None:
        attrs = _CLUSTER_ATTRS.get(ins.opcode)
        if not attrs:
            return
        for cref in ins.called:
            if cref.attr not in attrs:
                continue
            callee = self.module.by_name.get(cref.ref.name)
            if callee is None:
                continue
            cid = f"{node.id}:{callee.name.name}"
            cluster = GraphCluster(cid, callee.name.name, node.id, cref.attr,
                                   len(callee.instructions), parent=node.cluster)
            self.clusters.append(cluster)
            node.calls.append(cid)
            self.total += cluster.size
            if depth >= MAX_DEPTH or callee.name.name in active \
                    or cluster.size > self.room():
                continue
            cluster.expanded = True
            cluster.shown = cluster.size
            self.add_nodes(callee, list(callee.instructions), cid, depth + 1,
                           active | {callee.name.name})


def neighbourhood(comp: Computation, center: Instruction, hops: int,
                  limit: int) -> list[Instruction]:
    """The instructions of ``comp`` at most ``hops`` operand/user steps from
    ``center``, nearest first (breadth-first; operands before users, each in
    text order), at most ``limit`` of them; shown in text order."""
    by_name = comp.by_name
    users = comp.users_by_name
    seen = {center.name.name: 0}
    queue = deque([center])
    while queue and len(seen) < limit:
        ins = queue.popleft()
        d = seen[ins.name.name]
        if d >= hops:
            continue
        for nb in chain((by_name.get(op.ref.name) for op in ins.operands),
                        users.get(ins.name.name, ())):
            if nb is None or nb.name.name in seen:
                continue
            seen[nb.name.name] = d + 1
            queue.append(nb)
            if len(seen) >= limit:
                break
    order = {id(i): k for k, i in enumerate(comp.instructions)} \
        if len(seen) * 8 > len(comp.instructions) else None
    chosen = [by_name[n] for n in seen]
    if order is not None:
        chosen.sort(key=lambda i: order[id(i)])
    else:
        chosen.sort(key=lambda i: i.start)
    return chosen


def collapsed_note(clusters: list[GraphCluster], instructions: int) -> str:
    """What the header says of the called computations not drawn: ``instructions``
    (the count of theirs not shown) in how many of ``clusters`` are collapsed, and
    how many others are drawn expanded, e.g. "222 in 18 of 40 called computations
    (collapsed; the other 22 are drawn)"."""
    collapsed = sum(1 for c in clusters if not c.expanded)
    if collapsed == len(clusters):
        return (f"{instructions} in {_plural(collapsed, 'called computation')} "
                f"(collapsed)")
    drawn = len(clusters) - collapsed
    return (f"{instructions} in {collapsed} of {len(clusters)} called computations "
            f"(collapsed; the other {drawn} {'is' if drawn == 1 else 'are'} drawn)")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def graph(module: HloModule, computation: str | None = None, around: int | str | None = None,
          hops: int | None = None, limit: int = DEFAULT_LIMIT,
          profile: ModuleProfile | None = None) -> Graph | None:
    """The graph of ``computation`` (a name; default: the one holding ``around``,
    else ENTRY), or of the neighbourhood of ``around`` (an instruction name, or an
    offset inside an instruction or on its name) up to ``hops`` hops
    (default :data:`DEFAULT_HOPS`). At most ``limit`` nodes (1 to
    :data:`MAX_LIMIT`). None when there is no such computation or instruction.

    An offset on a computation's header (not inside an instruction) asks for that
    whole computation. ``profile``: measured times of this module's compile
    (the caller joined them); its nodes carry their :class:`Measured` and are
    shaded by self time."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    center: Instruction | None = None
    comp: Computation | None = None
    if isinstance(around, int):
        center = module.instruction_at(around)
        comp = center.computation if center is not None else module.computation_at(around)
        if comp is None:
            return None
    if computation:
        named = module.by_name.get(computation.lstrip("%"))
        if named is None:
            return None
        if comp is not None and comp is not named:
            center = None
        comp = named
    if comp is None:
        comp = module.entry
    if comp is None:
        return None
    if isinstance(around, str):
        center = comp.by_name.get(around.lstrip("%"))
        if center is None and computation is None:  # the instruction wherever it is
            center = module.instruction_named(around.lstrip("%"))
            if center is not None:
                comp = center.computation
        if center is None:
            return None
    b = _Builder(module, limit)
    b.total = len(comp.instructions)
    implicit = False
    if center is None and len(comp.instructions) > limit and comp.root is not None:
        center, implicit = comp.root, True
        hops = hops if hops is not None else len(comp.instructions)
    if center is not None:
        hops = DEFAULT_HOPS if hops is None else max(0, int(hops))
        chosen = neighbourhood(comp, center, hops, limit)
    else:
        chosen = list(comp.instructions)
    b.add_nodes(comp, chosen, None, 0, {comp.name.name})
    omitted = b.total - len(b.nodes)
    message = ""
    if omitted > 0:
        top = len(comp.instructions) - len(chosen)
        parts = []
        if top:
            parts.append(f"{top} of {len(comp.instructions)} instructions of "
                         f"{comp.name.name}")
        inner = omitted - top
        if inner:
            parts.append(collapsed_note(b.clusters, inner))
        message = f"{omitted} more not shown: " + ", ".join(parts)
        if implicit and top:
            message += f" (the {limit} nearest to ROOT {center.name.name})"
        elif center is not None and top:
            message += f" (within {hops} hops of {center.name.name}, at most {limit} nodes)"
    focus = center.name.name if center is not None else None
    top = None
    if profile is not None:
        for n in b.nodes:
            n.measured = profile.ops.get(n.name)
        selfs = [n.measured.self_us for n in b.nodes if n.measured is not None]
        top = max(selfs) if selfs else None
    return Graph(comp.name.name, focus, b.nodes, b.edges, b.clusters, b.total, omitted,
                 message, hops if center is not None else None, limit, top)


# ------------------------------------------------------------------- DOT ---

#: Fill colour per kind (the HTML page's legend uses the same).
KIND_COLORS = {"fusion": "#cfe2ff", "custom-call": "#ffd8a8", "collective": "#fcc2d7",
               "parameter": "#d3f9d8", "constant": "#e9ecef", "control-flow": "#e5dbff",
               "other": "#ffffff"}


#: The shading of measured self time, from none to the graph's largest (RGB);
#: a node without a measurement is :data:`UNMEASURED_COLOR`.
HEAT_LOW = (0xff, 0xf5, 0xf5)
HEAT_HIGH = (0xe0, 0x31, 0x31)
UNMEASURED_COLOR = "#f1f3f5"


def heat_color(self_us: float, max_us: float) -> str:
    """The fill of a node whose measured self time is ``self_us`` in a graph
    whose largest is ``max_us`` (µs): linear from :data:`HEAT_LOW` to
    :data:`HEAT_HIGH`, ``#rrggbb``."""
    t = 0.0 if max_us <= 0 else min(1.0, max(0.0, self_us / max_us))
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(HEAT_LOW, HEAT_HIGH))


def measured_text(m: Measured) -> str:
    """``self 12 µs of 40 µs, 5x``: a node's measured times, summed over the
    profile's events."""
    us = lambda x: format_seconds(x * 1e-6)  # noqa: E731
    total = f" of {us(m.total_us)}" if m.self_us < m.total_us * 0.999 else ""
    return f"self {us(m.self_us)}{total}, {m.count}x"


def dot_quote(text: str) -> str:
    """``text`` as a DOT double-quoted string: backslashes and quotes escaped,
    line breaks and other control characters dropped (names come from an
    untrusted file; a backslash would otherwise start a Graphviz escape such
    as ``\\N``)."""
    clean = "".join(ch if ch >= " " and ch != "\x7f" else " " for ch in text)
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(*lines: str) -> str:
    """A multi-line DOT label: each line quoted on its own, joined by ``\\n``."""
    return '"' + "\\n".join(dot_quote(line)[1:-1] for line in lines if line) + '"'


def dot_ids(g: Graph) -> tuple[dict[str, str], dict[str, str]]:
    """Identifiers that are safe anywhere (DOT, SVG ``id``, CSS): node id ->
    ``n<i>`` and cluster id -> ``c<i>``, in graph order. Edge ``i`` is ``e<i>``."""
    return ({n.id: f"n{i}" for i, n in enumerate(g.nodes)},
            {c.id: f"c{i}" for i, c in enumerate(g.clusters)})


#: A node with more shown users than this is drawn once more beside each user
#: (a *stub*, DOT id ``s<i>`` for edge ``i``) instead of with an edge to each:
#: long edges from one hub (a parameter every step reads) make Graphviz's
#: layout take minutes; XLA's own graph dumper inlines such operands too.
HUB_EDGES = 8
#: Above this many edges, edges carry no shape label (labels are layout nodes).
LABELLED_EDGES = 120
#: A node's label shows at most this much of its shape (the tooltip has all of it).
SHAPE_CHARS = 60


def stub_edges(g: Graph) -> set[int]:
    """Indices of the edges drawn from a stub (their source has more than
    :data:`HUB_EDGES` edges out)."""
    out: dict[str, int] = {}
    for e in g.edges:
        out[e.source] = out.get(e.source, 0) + 1
    return {i for i, e in enumerate(g.edges) if out[e.source] > HUB_EDGES}


def to_dot(g: Graph, edge_labels: bool | None = None) -> str:
    """The graph as Graphviz DOT, top to bottom: nodes filled by kind
    (:data:`KIND_COLORS`), or with measured times by measured self time
    (:func:`heat_color`), labelled with name, label (fusion or library), shape
    and measured time; expanded clusters as ``subgraph cluster_*`` (nested as called), each
    with a dashed edge from its ROOT to its caller; edges labelled with the
    operand's shape (``edge_labels``; default: up to :data:`LABELLED_EDGES`
    edges); edges from hubs drawn from stubs (:func:`stub_edges`). Every name is
    quoted by :func:`dot_quote`; ids are :func:`dot_ids`."""
    node_ids, cluster_ids = dot_ids(g)
    if edge_labels is None:
        edge_labels = len(g.edges) <= LABELLED_EDGES
    stubs = stub_edges(g)
    heat = g.measured_max_us is not None
    out = ["digraph hlo {",
           f"  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, label={_label(g.message)}, "
           "labelloc=t, nodesep=0.25, ranksep=0.35, mclimit=0.5, nslimit=20, nslimit1=20, "
           "searchsize=30];",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
           'margin="0.08,0.04", height=0.3];',
           '  edge [fontname="Helvetica", fontsize=8, color="#666666", arrowsize=0.6];']
    members: dict[str | None, list[GraphNode]] = {}
    by_id: dict[str, GraphNode] = {}
    for n in g.nodes:
        members.setdefault(n.cluster, []).append(n)
        by_id[n.id] = n
    stub_scope: dict[str | None, list[int]] = {}
    for i in sorted(stubs):
        stub_scope.setdefault(by_id[g.edges[i].target].cluster, []).append(i)
    children: dict[str | None, list[GraphCluster]] = {}
    for c in g.clusters:
        if c.expanded:
            children.setdefault(c.parent, []).append(c)

    def node_line(n: GraphNode, indent: str) -> str:
        detail = n.label if n.label != n.opcode else ""
        if n.kind == "custom-call" and n.target:
            detail = f"{n.library}: {n.target}"
        more = f"+{n.hidden} not shown" if n.hidden else ""
        shape = n.shape if len(n.shape) <= SHAPE_CHARS else n.shape[:SHAPE_CHARS - 3] + "..."
        timed = measured_text(n.measured) if n.measured is not None else ""
        fill = KIND_COLORS.get(n.kind, "#ffffff")
        if heat:
            fill = heat_color(n.measured.self_us, g.measured_max_us) \
                if n.measured is not None else UNMEASURED_COLOR
        tooltip = f"{n.opcode} {n.shape}".strip() + (f"; measured {timed}" if timed else "")
        attrs = [f"id={dot_quote(node_ids[n.id])}",
                 f"label={_label(n.name, detail or n.opcode, shape, timed, more)}",
                 f"fillcolor={dot_quote(fill)}",
                 f"class={dot_quote('kind-' + n.kind)}",
                 f"tooltip={dot_quote(tooltip)}"]
        if n.id == g.focus:
            attrs.append("penwidth=3")
        if n.hidden:
            attrs.append('color="#d9480f"')
        return f"{indent}{node_ids[n.id]} [{', '.join(attrs)}];"

    def stub_line(i: int, indent: str) -> str:
        hub = by_id[g.edges[i].source]
        return (f"{indent}s{i} [id=\"s{i}\", label={dot_quote(hub.name)}, fontsize=8, "
                f"height=0.2, style=\"rounded,filled,dashed\", "
                f"fillcolor={dot_quote(KIND_COLORS.get(hub.kind, '#ffffff'))}, "
                f"class={dot_quote('stub kind-' + hub.kind)}, "
                f"tooltip={dot_quote(f'{hub.name}, drawn beside each of its users')}];")

    # Clusters nested as they are called, depth first: a stack of the clusters
    # to write (None: the top level) and of the lines that close them.
    pending: list[tuple[GraphCluster | None, str] | str] = [(None, "  ")]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        c, indent = item
        key = None if c is None else c.id
        if c is not None:
            cid = cluster_ids[c.id]
            owner = by_id.get(c.owner)
            title = f"{c.computation} ({c.attr} of {owner.name if owner else c.owner})"
            out.append(f"{indent}subgraph cluster_{cid} {{")
            indent += "  "
            out.append(f"{indent}id={dot_quote(cid)}; label={dot_quote(title)}; "
                       'style="rounded,dashed"; color="#868e96"; fontsize=9;')
            pending.append(f"{indent[:-2]}}}")
        out.extend(node_line(n, indent) for n in members.get(key, ()))
        out.extend(stub_line(i, indent) for i in stub_scope.get(key, ()))
        pending.extend((child, indent) for child in reversed(children.get(key, ())))

    for i, e in enumerate(g.edges):
        attrs = [f"id=\"e{i}\"", f"tooltip={dot_quote(f'operand {e.operand}: {e.shape}')}"]
        if edge_labels and e.shape:
            attrs.append(f"label={dot_quote(e.shape)}")
        source = f"s{i}" if i in stubs else node_ids[e.source]
        out.append(f"  {source} -> {node_ids[e.target]} [{', '.join(attrs)}];")
    for c in g.clusters:
        root = next((n for n in members.get(c.id, ()) if n.is_root), None) if c.expanded else None
        if root is not None and c.owner in node_ids:
            out.append(f"  {node_ids[root.id]} -> {node_ids[c.owner]} "
                       f"[id=\"r{cluster_ids[c.id]}\", style=dashed, color=\"#adb5bd\", "
                       "arrowhead=empty];")
    out.append("}")
    return "\n".join(out) + "\n"


__all__ = ["DEFAULT_HOPS", "DEFAULT_LIMIT", "Graph", "GraphCluster", "GraphEdge", "GraphNode",
           "HEAT_HIGH", "HEAT_LOW", "HUB_EDGES", "KINDS", "KIND_COLORS", "LABELLED_EDGES",
           "MAX_LIMIT", "UNMEASURED_COLOR", "classify_node", "dot_ids", "dot_quote", "graph",
           "heat_color", "measured_text", "neighbourhood", "stub_edges", "to_dot"]
