"""Which instruction of one module is which of another: the matcher that
survives renames, behind the one comparison (:mod:`hlo_lsp.model.comparison`:
``hlo-lsp diff``, the compare command, the recompile report) and the way to
follow an instruction across the pass snapshots of a dump (:func:`match_modules`).

XLA renames as it goes: ``rename-instructions`` and ``rename_fusions`` rename
instructions and fusions between two passes, and every compile numbers names
afresh (``%cublas-gemm.clone.1.0`` in one JAX version is
``%gemm_fusion_dot.19.0`` in the next). So names are one signal among others.
In the spirit of XLA's ``hlo_diff`` (xla/hlo/tools/hlo_diff: call graph first,
then greedy exact subgraphs top-down, then bottom-up by Dice similarity), the
stages of :func:`match_structure`, each pairing only what the earlier left:

1. **Exact subgraphs, top-down.** Every instruction gets a structural
   fingerprint: opcode, shape (layouts removed), attributes (metadata,
   backend_config and the names of called computations left out), the
   fingerprints of its operands in order and of the computations it calls (a
   fusion is compared by its fused computation's structure, whatever its
   name). A fingerprint found exactly once on each side pairs the two
   instructions and everything below them, operand by operand, fused
   computations included; the tallest subgraphs first.
2. **Names where they are stable**: the same name, the same opcode and shape,
   the same ``op_name`` when both sides have one.
3. **Metadata**: the ``op_name`` of the metadata, the opcode and the innermost
   Python frame (file base name, function, column, line), then without the
   line, then ``op_name`` and opcode alone (what
   :func:`hlo_lsp.model.instruction_diff.match_instructions` pairs), each key's
   instructions in text order.
4. **Propagation**: from every pair, its operands at the same position, the
   computations it calls (roots and parameters) and its users at the same
   operand position, when they are alike (same opcode, no conflicting
   ``op_name``) and the choice is unique.
5. **Bottom-up by similarity** for what is left, operands before users: the
   candidates are the unpaired instructions reached from the partners of an
   instruction's paired ancestors through their users (the nearest
   :data:`CANDIDATES` of at most :data:`CANDIDATE_VISITS` visited); each is
   scored by the Dice similarity of the two instructions' ancestors (the share
   of paired ones, at most :data:`ANCESTORS` of each), plus the agreement of
   direct operands, shape, opcode and ``op_name``; a candidate none of whose
   operands is the partner of one of the instruction's paired operands is out;
   the best at or above :data:`MIN_DICE` wins. An instruction may pair with one
   of another opcode when both do the same work (:func:`instruction_role`: a
   ``dot``, a cuBLAS GEMM call and a GEMM fusion are each "dot"), so a
   cuBLASLt call and the Triton GEMM fusion that replaced it are the same dot.
   Then propagation again.
6. **Leftovers**: computations nothing paired (a reducer no instruction
   calls) by their roots' fingerprints, in text order; then in computations
   that correspond, the parameters left by number and shape, and the
   instructions nothing uses (a dead constant) by opcode and shape, in text
   order.

Pairs never conflict in ``op_name`` (both present and different), nor cross
kinds of computation (ENTRY and ordinary computations, fused computations,
applied computations such as a reduce's ``to_apply``) but by the ``op_name``
and opcode of stage 3 (an instruction that moved into a fusion) and around
such a pair. Pure, standard library only, deterministic (text order breaks
every tie), linear in the module size but for the bounded searches of stage 5:
0.53 s for a 4.3 MB CPU dump (30,784 instructions) against a second parse
of itself, 0.57 s with every name changed, 0.76 s renamed and f32 made bf16,
every instruction paired with its renamed self (benchmarks/bench_matcher.py,
docs/benchmarks.md; the budget is 2 s per MB).
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from hlo_lsp.model.backend_config import target_library
from hlo_lsp.model.frames import python_stack, source_key
from hlo_lsp.model.hlo import HloModule, Instruction
from hlo_lsp.model.kernels import (BACKEND_KIND_LABELS, HLO_KIND_LABELS, custom_call_target,
                                   fusion_backend_kind, hlo_fusion_kind)

#: At most this many ancestors of an instruction take part in its similarity.
ANCESTORS = 32
#: At most this many instructions are visited looking for candidates of one.
CANDIDATE_VISITS = 64
#: At most this many candidates (the nearest) are scored for one instruction.
CANDIDATES = 16
#: The least Dice similarity of ancestors for a bottom-up pair.
MIN_DICE = 0.4

#: cuBLAS GEMM and cuDNN convolution targets: the work they do
#: (``IsCublasGemm``, ``IsCustomCallToDnnConvolution``, xla/service/gpu/cublas_cudnn.cc).
_TARGET_ROLES = {"__cublas$gemm": "dot", "__cublas$lt$matmul": "dot",
                 "__cublas$lt$matmul$f8": "dot", "__cublas$lt$matmul$mx": "dot",
                 "__cublas$lt$groupedMatmul": "dot",
                 "__cudnn$convForward": "convolution", "__cudnn$convBackwardInput": "convolution",
                 "__cudnn$convBackwardFilter": "convolution",
                 "__cudnn$convBiasActivationForward": "convolution",
                 "__cudnn$convForwardGraph": "convolution"}
#: Opcodes whose work names a role of their own.
_ROLE_OPCODES = ("dot", "convolution", "ragged-dot", "scaled-dot")
#: Attributes left out of the structural fingerprint: they differ between
#: compiles or passes without changing what is computed.
_NOT_STRUCTURE = frozenset({"metadata", "backend_config", "frontend_attributes", "statistics_viz",
                            "origin", "control-predecessors", "schedule", "sharding"})
_LAYOUT = re.compile(r"\{[^{}]*\}")
#: ``op_name="..."`` in a metadata value (the key as
#: :func:`hlo_lsp.model.hlo.decode_metadata` reads keys: no word character before it).
_OP_NAME = re.compile(r'(?<![A-Za-z0-9_])op_name=("(?:[^"\\]|\\.)*+")')
#: Computation kinds (pairs never cross them).
_PLAIN, _FUSED, _APPLIED = 0, 1, 2


class Matching(NamedTuple):
    """What a matcher found (:data:`hlo_lsp.model.comparison.Matcher`): ``pairs``
    of (old, new) instructions, the old ones left (``removed``) and the new ones
    left (``added``), each in text order (pairs in the old module's)."""

    pairs: list[tuple[Instruction, Instruction]]
    removed: list[Instruction]
    added: list[Instruction]


def instruction_role(module: HloModule, ins: Instruction) -> str:
    """The work ``ins`` does when another opcode could do the same: "dot" for a
    ``dot``, a cuBLAS(Lt) GEMM custom-call or a fusion whose fused computation
    holds a dot (a Triton GEMM fusion, a cuDNN GEMM fusion); "convolution"
    likewise; "" otherwise. The same role lets the matcher pair a cuBLASLt call
    with the GEMM fusion that replaced it."""
    if ins.opcode in _ROLE_OPCODES:
        return "dot" if ins.opcode != "convolution" else "convolution"
    if ins.opcode == "custom-call":
        return _TARGET_ROLES.get(custom_call_target(ins) or "", "")
    if ins.opcode == "fusion":
        comps = module.by_name
        found = ""
        for ref in ins.called:
            comp = comps.get(ref.ref.name)
            for inner in comp.instructions if comp is not None else ():
                role = (inner.opcode if inner.opcode in ("dot", "convolution")
                        else "dot" if inner.opcode in _ROLE_OPCODES else "")
                if role == "dot":
                    return "dot"
                found = found or role
        return found
    return ""


def op_name_text(ins: Instruction) -> str:
    """The ``op_name`` of ``ins``'s metadata as written (quoted, escapes kept:
    for comparing, not for showing; :attr:`Instruction.metadata` decodes it),
    "" without one. Reads only that field: decoding whole metadata of every
    instruction of a large module costs more than the matching."""
    attr = ins.attribute("metadata")
    if attr is None:
        return ""
    m = _OP_NAME.search(attr.value)
    return m.group(1) if m is not None and m.group(1) != '""' else ""


def kernel_label(ins: Instruction) -> str:
    """What ``ins`` runs as, in words of a fixed vocabulary (never text of the
    dump): "Triton GEMM fusion", "loop fusion" (the backend kind's label,
    :data:`hlo_lsp.model.kernels.BACKEND_KIND_LABELS`, else the HLO kind's),
    "cuBLASLt FP8 call" (the library of a known custom-call target), else
    "custom-call" or the opcode."""
    if ins.opcode == "fusion":
        backend, _ = fusion_backend_kind(ins)
        if backend in BACKEND_KIND_LABELS:
            return f"{BACKEND_KIND_LABELS[backend]} fusion"
        return f"{HLO_KIND_LABELS.get(hlo_fusion_kind(ins), 'unknown')} fusion"
    if ins.opcode == "custom-call":
        library = target_library(custom_call_target(ins) or "")
        return f"{library} call" if library != "custom" else "custom-call"
    return ins.opcode


@dataclass(slots=True, eq=False)
class _Graph:
    """One module's instructions as a graph of indexes (text order). Holds no
    reference to the module (:meth:`HloModule.derived`)."""

    nodes: list[Instruction] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    opcode: list[str] = field(default_factory=list)
    shape: list[str] = field(default_factory=list)
    op_name: list[str] = field(default_factory=list)
    operands: list[list[int]] = field(default_factory=list)
    users: list[list[int]] = field(default_factory=list)
    #: Per instruction, the computations it calls (indexes into ``roots``/``params``).
    called: list[list[int]] = field(default_factory=list)
    roots: list[int | None] = field(default_factory=list)
    #: Per computation, the range of its instructions' indexes.
    spans: list[range] = field(default_factory=list)
    params: list[dict[int, int]] = field(default_factory=list)
    by_name: dict[str, int] = field(default_factory=dict)
    #: :func:`instruction_role` per instruction, filled when asked.
    role: dict[int, str] = field(default_factory=dict)


def _graph(module: HloModule) -> _Graph:
    return module.derived("match_graph", _make_graph)


def _make_graph(module: HloModule) -> _Graph:
    g = _Graph()
    comps = module.computations
    comp_index = {id(c): i for i, c in enumerate(comps)}
    by_comp_name: dict[str, int] = {}
    for i, c in enumerate(comps):
        by_comp_name.setdefault(c.name.name, i)
    comp_kind = [_PLAIN] * len(comps)
    for c in comps:
        for ins in c.instructions:
            for ref in ins.called:
                j = by_comp_name.get(ref.ref.name)
                if j is not None and comp_kind[j] == _PLAIN and not comps[j].is_entry:
                    comp_kind[j] = (_FUSED if ins.opcode == "fusion" and ref.attr == "calls"
                                    else _APPLIED if ref.attr == "to_apply" else _PLAIN)
    g.roots = [None] * len(comps)
    g.params = [{} for _ in comps]
    for ci, c in enumerate(comps):
        local: dict[str, int] = {}
        start = len(g.nodes)
        for ins in c.instructions:
            i = len(g.nodes)
            g.nodes.append(ins)
            local.setdefault(ins.name.name, i)
            g.by_name.setdefault(ins.name.name, i)
            g.kind.append(comp_kind[ci])
            g.opcode.append(ins.opcode)
            g.shape.append(_LAYOUT.sub("", ins.shape.text) if ins.shape is not None else "")
            g.op_name.append(op_name_text(ins))
            g.called.append([j for ref in ins.called
                             if (j := by_comp_name.get(ref.ref.name)) is not None])
            if ins.is_root:
                g.roots[ci] = i
            if ins.parameter_number is not None:
                g.params[ci].setdefault(ins.parameter_number, i)
        g.spans.append(range(start, len(g.nodes)))
        if g.roots[ci] is None and len(g.nodes) > start:
            g.roots[ci] = len(g.nodes) - 1
        for i in range(start, len(g.nodes)):
            g.operands.append([j for op in g.nodes[i].operands
                               if (j := local.get(op.ref.name)) is not None])
    g.users = [[] for _ in g.nodes]
    for i, ops in enumerate(g.operands):
        for j in dict.fromkeys(ops):
            g.users[j].append(i)
    return g


def _postorder(n: int, children: Callable[[int], list[int]]) -> list[int]:
    """Every index of ``range(n)``, each after its children (cycles cut), the
    roots taken in index order."""
    state = bytearray(n)
    out: list[int] = []
    for s in range(n):
        if state[s]:
            continue
        state[s] = 1
        stack = [(s, iter(children(s)))]
        while stack:
            v, it = stack[-1]
            for c in it:
                if not state[c]:
                    state[c] = 1
                    stack.append((c, iter(children(c))))
                    break
            else:
                stack.pop()
                out.append(v)
    return out


def _fingerprints(g: _Graph, ids: dict[tuple, int]) -> tuple[list[int], list[int]]:
    """(fingerprint, height) per instruction; ``ids`` interns structural keys
    (shared by both modules of one comparison so equal subgraphs get equal ints)."""
    n = len(g.nodes)
    fp = [0] * n
    height = [0] * n
    kids = [ops + [r for c in called if (r := g.roots[c]) is not None] if called else ops
            for ops, called in zip(g.operands, g.called)]
    for i in _postorder(n, kids.__getitem__):
        ins = g.nodes[i]
        attrs = tuple((a.name, a.value) for a in ins.attributes
                      if a.name not in _NOT_STRUCTURE and a.value[:1] != "%")
        called = g.called[i]
        subs = tuple(fp[r] if (r := g.roots[c]) is not None else -1 for c in called) \
            if called else ()
        key = (g.opcode[i], g.shape[i], ins.parameter_number, ins.literal, attrs,
               tuple([fp[j] for j in g.operands[i]]), subs)
        fp[i] = ids.setdefault(key, len(ids))
        k = kids[i]
        height[i] = 1 + max([height[j] for j in k]) if k else 1
    return fp, height


class _State:
    """The pairs being built between graphs ``a`` (old) and ``b`` (new)."""

    def __init__(self, ma: HloModule, mb: HloModule, a: _Graph, b: _Graph):
        self.ma, self.mb, self.a, self.b = ma, mb, a, b
        self.fwd: list[int] = [-1] * len(a.nodes)
        self.back: list[int] = [-1] * len(b.nodes)
        #: Stage 1's fingerprints of each side.
        self.fa: list[int] = []
        self.fb: list[int] = []

    def pair(self, i: int, j: int) -> bool:
        if self.fwd[i] >= 0 or self.back[j] >= 0:
            return False
        self.fwd[i], self.back[j] = j, i
        return True

    def alike(self, i: int, j: int, loose: bool = False, cross: bool = False) -> bool:
        """Whether old ``i`` and new ``j`` may pair: the same kind of computation
        (unless ``cross``: they are reached from a pair that crossed kinds, an
        instruction that moved into a fusion), no conflicting op_name, and the
        same opcode (or, when ``loose``, the same :func:`instruction_role`)."""
        a, b = self.a, self.b
        if a.kind[i] != b.kind[j] and not cross:
            return False
        if a.op_name[i] and b.op_name[j] and a.op_name[i] != b.op_name[j]:
            return False
        if a.opcode[i] == b.opcode[j]:
            return True
        return loose and bool(self.role(a, self.ma, i)) and \
            self.role(a, self.ma, i) == self.role(b, self.mb, j)

    @staticmethod
    def role(g: _Graph, module: HloModule, i: int) -> str:
        r = g.role.get(i)
        if r is None:
            r = g.role[i] = instruction_role(module, g.nodes[i])
        return r


def _exact(s: _State) -> None:
    """Stage 1: fingerprints unique on both sides, tallest first, each pairing
    its whole subgraph operand by operand."""
    ids: dict[tuple, int] = {}
    fa, ha = _fingerprints(s.a, ids)
    fb, hb = _fingerprints(s.b, ids)
    count_b: dict[int, int] = defaultdict(int)
    where_b: dict[int, int] = {}
    for j, f in enumerate(fb):
        count_b[f] += 1
        where_b[f] = j
    count_a: dict[int, int] = defaultdict(int)
    for f in fa:
        count_a[f] += 1
    unique = [i for i, f in enumerate(fa) if count_a[f] == 1 and count_b.get(f) == 1]
    unique.sort(key=lambda i: (-ha[i], i))
    s.fa, s.fb = fa, fb
    a, b = s.a, s.b
    for i in unique:
        j = where_b[fa[i]]
        if s.fwd[i] >= 0 or s.back[j] >= 0 or a.kind[i] != b.kind[j]:
            continue
        _pair_subgraph(s, i, j)


def _pair_subgraph(s: _State, i: int, j: int) -> None:
    """Pair ``i`` and ``j`` of equal fingerprints and everything below them,
    operand by operand, called computations' roots and parameters included."""
    a, b = s.a, s.b
    stack = [(i, j)]
    while stack:
        x, y = stack.pop()
        if not (s.alike(x, y) and s.pair(x, y)):
            continue
        for c, d in zip(a.called[x], b.called[y]):
            rc, rd = a.roots[c], b.roots[d]
            if rc is not None and rd is not None:
                stack.append((rc, rd))
            for num, p in a.params[c].items():
                q = b.params[d].get(num)
                if q is not None:
                    stack.append((p, q))
        stack.extend(reversed(list(zip(a.operands[x], b.operands[y]))))


def _names(s: _State) -> None:
    """Stage 2: the same name, opcode and shape, no conflicting op_name."""
    a, b = s.a, s.b
    for i, ins in enumerate(a.nodes):
        if s.fwd[i] >= 0:
            continue
        j = b.by_name.get(ins.name.name)
        if j is not None and s.back[j] < 0 and a.shape[i] == b.shape[j] and s.alike(i, j):
            s.pair(i, j)


def _key(module: HloModule, g: _Graph, i: int) -> tuple | None:
    if not g.op_name[i]:
        return None
    key = source_key(module, g.nodes[i])
    if key is None:
        return None
    op_name, file, line = key
    base = posixpath.basename(file.replace("\\", "/")) if file else None
    stack = python_stack(module, g.nodes[i]) if file else []
    where = (stack[0].function, stack[0].column) if stack else (None, None)
    return (op_name, g.opcode[i], base, *where, line)


def _metadata(s: _State) -> None:
    """Stage 3: by op_name, opcode and innermost frame, then shorter keys."""
    keyed = []
    for module, g, taken in ((s.ma, s.a, s.fwd), (s.mb, s.b, s.back)):
        out: dict[tuple, list[int]] = defaultdict(list)
        for i in range(len(g.nodes)):
            if taken[i] < 0 and (k := _key(module, g, i)) is not None:
                out[k].append(i)
        keyed.append(out)
    ka, kb = keyed
    for n in (6, 5, 2):
        ga: dict[tuple, list[int]] = defaultdict(list)
        gb: dict[tuple, list[int]] = defaultdict(list)
        for k, items in ka.items():
            ga[k[:n]] += [i for i in items if s.fwd[i] < 0]
        for k, items in kb.items():
            gb[k[:n]] += [j for j in items if s.back[j] < 0]
        for k, news in gb.items():
            olds = sorted(ga.get(k, ()))
            for i, j in zip(olds, sorted(news)):
                if s.a.kind[i] == s.b.kind[j] or n == 2:
                    s.pair(i, j)


def _propagate(s: _State, seeds: list[tuple[int, int]]) -> None:
    """Stage 4: from each pair, operands at the same position, called
    computations' roots and parameters, and users at the same operand position
    when unique on both sides."""
    a, b = s.a, s.b
    work = list(reversed(seeds))
    while work:
        x, y = work.pop()
        cross = a.kind[x] != b.kind[y]
        found: list[tuple[int, int]] = []
        for i, j in zip(a.operands[x], b.operands[y]):
            if s.fwd[i] < 0 and s.back[j] < 0 and s.alike(i, j, cross=cross):
                found.append((i, j))
        for c, d in zip(a.called[x], b.called[y]):
            rc, rd = a.roots[c], b.roots[d]
            if rc is not None and rd is not None and s.fwd[rc] < 0 and s.back[rd] < 0 \
                    and s.alike(rc, rd, loose=True):
                found.append((rc, rd))
            for num, p in a.params[c].items():
                q = b.params[d].get(num)
                if q is not None and s.fwd[p] < 0 and s.back[q] < 0 and a.shape[p] == b.shape[q]:
                    found.append((p, q))
        ua = _user_slots(a, x, s.fwd)
        ub = _user_slots(b, y, s.back)
        for slot, olds in ua.items():
            news = ub.get(slot)
            if news is not None and len(olds) == 1 and len(news) == 1 \
                    and s.alike(olds[0], news[0], cross=cross):
                found.append((olds[0], news[0]))
        for i, j in found:
            if s.pair(i, j):
                work.append((i, j))


def _user_slots(g: _Graph, x: int, taken: list[int]) -> dict[tuple, list[int]]:
    """The unpaired users of ``x`` by (opcode, positions of ``x`` among their operands)."""
    out: dict[tuple, list[int]] = {}
    for u in g.users[x]:
        if taken[u] < 0:
            slot = (g.opcode[u], tuple(k for k, o in enumerate(g.operands[u]) if o == x))
            out.setdefault(slot, []).append(u)
    return out


def _ancestors(g: _Graph, i: int, cache: dict[int, list[int]]) -> list[int]:
    """At most :data:`ANCESTORS` ancestors of ``i`` (operands, breadth first)."""
    got = cache.get(i)
    if got is not None:
        return got
    seen = {i}
    out: list[int] = []
    frontier = [i]
    while frontier and len(out) < ANCESTORS:
        nxt = []
        for v in frontier:
            for o in g.operands[v]:
                if o not in seen:
                    seen.add(o)
                    out.append(o)
                    nxt.append(o)
                    if len(out) >= ANCESTORS:
                        break
            if len(out) >= ANCESTORS:
                break
        frontier = nxt
    cache[i] = out
    return out


def _bottom_up(s: _State) -> list[tuple[int, int]]:
    """Stage 5: unpaired old instructions, operands first, each paired with the
    most similar unpaired new candidate (see the module docstring)."""
    a, b = s.a, s.b
    cache_a: dict[int, list[int]] = {}
    cache_b: dict[int, list[int]] = {}
    made: list[tuple[int, int]] = []
    order = _postorder(len(a.nodes), lambda i: a.operands[i])
    for i in order:
        if s.fwd[i] >= 0:
            continue
        anc = _ancestors(a, i, cache_a)
        seeds = [s.fwd[p] for p in anc if s.fwd[p] >= 0]
        if not seeds:
            continue
        # Candidates: unpaired new instructions above the seeds' partners.
        seen = set(seeds)
        frontier = seeds
        candidates: list[int] = []
        visits = 0
        while frontier and visits < CANDIDATE_VISITS and len(candidates) < CANDIDATES:
            nxt = []
            for v in frontier:
                for u in b.users[v]:
                    if u in seen:
                        continue
                    seen.add(u)
                    visits += 1
                    nxt.append(u)
                    if s.back[u] < 0 and s.alike(i, u, loose=True):
                        candidates.append(u)
            frontier = nxt
        direct = {s.fwd[o] for o in a.operands[i] if s.fwd[o] >= 0}
        best, best_score = -1, 0.0
        for j in sorted(candidates):
            agree = len(direct.intersection(b.operands[j]))
            if direct and not agree:
                continue  # its paired operands feed something else
            anc_b = _ancestors(b, j, cache_b)
            mine = set(anc_b)
            common = sum(1 for p in anc if s.fwd[p] >= 0 and s.fwd[p] in mine)
            dice = 2 * common / (len(anc) + len(anc_b))
            if dice < MIN_DICE:
                continue
            score = dice + 0.25 * (a.shape[i] == b.shape[j]) + 0.25 * (a.opcode[i] == b.opcode[j]) \
                + 0.5 * bool(a.op_name[i] and a.op_name[i] == b.op_name[j]) \
                + 0.5 * agree / max(len(direct), 1)
            if score > best_score:
                best, best_score = j, score
        if best >= 0 and s.pair(i, best):
            made.append((i, best))
    return made


def _match(old: HloModule, new: HloModule) -> _State:
    s = _State(old, new, _graph(old), _graph(new))
    _exact(s)
    _names(s)
    _metadata(s)
    _propagate(s, [(i, j) for i, j in enumerate(s.fwd) if j >= 0])
    made = _bottom_up(s)
    _propagate(s, made)
    _leftovers(s)
    return s


def _leftovers(s: _State) -> None:
    """Stage 6: in two computations that correspond (the partner of the old
    one's first paired instruction is in the new one), the instructions left
    (an unused parameter, a dead constant) with the same opcode and shape, in
    text order."""
    a, b = s.a, s.b
    comp_b = [0] * len(b.nodes)
    for d, span in enumerate(b.spans):
        for j in span:
            comp_b[j] = d
    # Computations nothing pairs (a reducer no instruction calls): by structure.
    free_b: dict[int, list[int]] = {}
    for d, span in enumerate(b.spans):
        r = b.roots[d]
        if r is not None and all(s.back[j] < 0 for j in span):
            free_b.setdefault(s.fb[r], []).append(r)
    for c, span in enumerate(a.spans):
        r = a.roots[c]
        if r is not None and all(s.fwd[i] < 0 for i in span):
            queue = free_b.get(s.fa[r])
            if queue:
                _pair_subgraph(s, r, queue.pop(0))
    for span in a.spans:
        partner = next((s.fwd[i] for i in span if s.fwd[i] >= 0), -1)
        if partner < 0:
            continue
        olds = [i for i in span if s.fwd[i] < 0 and _loose_end(a, i)]
        if not olds:
            continue
        news: dict[tuple, list[int]] = {}
        for j in b.spans[comp_b[partner]]:
            if s.back[j] < 0 and _loose_end(b, j):
                news.setdefault(_end_key(b, j), []).append(j)
        for i in olds:
            group = news.get(_end_key(a, i))
            if group and s.alike(i, group[0]):
                s.pair(i, group.pop(0))


def _loose_end(g: _Graph, i: int) -> bool:
    """A parameter, or an instruction nothing uses (a dead constant)."""
    return g.nodes[i].parameter_number is not None or not g.users[i]


def _end_key(g: _Graph, i: int) -> tuple:
    return (g.opcode[i], g.shape[i], g.nodes[i].parameter_number)


def match_structure(old: HloModule, new: HloModule) -> Matching:
    """The matcher that survives renames (the stages of the module docstring):
    every instruction of every computation of ``old`` paired with at most one
    of ``new``; the rest removed or added. A :data:`hlo_lsp.model.comparison.Matcher`."""
    if old is new:
        every = [ins for c in old.computations for ins in c.instructions]
        return Matching([(ins, ins) for ins in every], [], [])
    s = _match(old, new)
    a, b = s.a, s.b
    return Matching([(a.nodes[i], b.nodes[j]) for i, j in enumerate(s.fwd) if j >= 0],
                    [a.nodes[i] for i, j in enumerate(s.fwd) if j < 0],
                    [b.nodes[j] for j, i in enumerate(s.back) if i < 0])


def match_modules(old: HloModule, new: HloModule) -> dict[str, str]:
    """Old instruction name -> new instruction name (no ``%``) for every
    instruction of ``old`` that :func:`match_structure` pairs, in ``old``'s text
    order: how to follow an instruction from one module to another, across
    XLA's renaming passes (two pass snapshots of one compile) or two compiles
    of one program. An instruction that has no counterpart is absent. Where a
    name occurs twice in a module (malformed text) the first one speaks for it.
    Pure; never raises on a parsed module."""
    out: dict[str, str] = {}
    for o, n in match_structure(old, new).pairs:
        out.setdefault(o.name.name, n.name.name)
    return out


__all__ = ["ANCESTORS", "CANDIDATES", "CANDIDATE_VISITS", "MIN_DICE", "Matching", "instruction_role",
           "kernel_label", "match_modules", "match_structure", "op_name_text"]
