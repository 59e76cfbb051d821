"""The dataflow graph (hlo_lsp.features.graph) on the real dumps of examples/:
nodes, edges and clusters are checked against the model they come from."""

from __future__ import annotations

import gc
from collections import deque

import pytest

from hlo_lsp.features.graph import classify_node, graph
from hlo_lsp.model.backend_config import target_library
from hlo_lsp.model.kernels import custom_call_target
from hlo_lsp.model.summary import COLLECTIVE_OPCODES
from hlo_lsp.syntax.parser import parse
from tests.helpers import (CPU_DUMP, FP8_DUMP, FP8_FUSED, FP8_REGRESSION, GPU, cpu_seconds,
                           offset_of, read)

AFTER = sorted(GPU.glob("*.txt")) + sorted(CPU_DUMP.glob("*after_optimizations.txt")) + \
    sorted(GPU.glob("deviceless/*/*_gpu_after_optimizations.txt"))


def _expected_edges(comp, prefix=""):
    out = set()
    for ins in comp.instructions:
        for i, op in enumerate(ins.operands):
            if op.ref.name in comp.by_name:
                out.add((prefix + op.ref.name, prefix + ins.name.name, i))
    return out


@pytest.mark.parametrize("path", AFTER, ids=lambda p: p.name)
def test_entry_graph_is_the_entry_computation_with_its_fusions_inside(path):
    module = parse(read(path))
    g = graph(module, limit=5000)
    entry = module.entry
    top = [n for n in g.nodes if n.cluster is None]
    assert [n.name for n in top] == [i.name.name for i in entry.instructions]
    assert {(e.source, e.target, e.operand) for e in g.edges
            if "/" not in e.source} == _expected_edges(entry)
    # every fusion is a cluster holding exactly its fused computation's instructions
    fusions = [i for i in entry.instructions if i.opcode == "fusion"]
    for ins in fusions:
        callee = next(c.ref.name for c in ins.called if c.attr == "calls")
        cluster = next(c for c in g.clusters if c.owner == ins.name.name)
        assert cluster.computation == callee and cluster.expanded
        inside = [n.name for n in g.nodes if n.cluster == cluster.id]
        assert inside == [i.name.name for i in module.by_name[callee].instructions]
        prefix = cluster.id + "/"
        assert {(e.source, e.target, e.operand) for e in g.edges
                if e.target.startswith(prefix) and e.target.count("/") == 1} \
            == _expected_edges(module.by_name[callee], prefix)
    assert g.omitted == 0 and g.message == ""
    for n in top:  # kinds follow the model's own answers
        ins = entry.by_name[n.name]
        if ins.opcode == "custom-call":
            assert (n.kind, n.library) == ("custom-call",
                                           target_library(custom_call_target(ins)))
        elif ins.opcode in COLLECTIVE_OPCODES:
            assert n.kind == "collective"
        assert (n.start, n.end) == (ins.start, ins.end)
        assert module.text[n.name_start:n.name_end].lstrip("%") == n.name


def test_fp8_cublaslt_call_is_a_cublaslt_fp8_custom_call_with_its_edges():
    text = read(FP8_DUMP)
    g = graph(parse(text))
    gemm = g.node("cublas-gemm.1.0")
    assert (gemm.kind, gemm.library, gemm.target) == ("custom-call", "cuBLASLt FP8",
                                                      "__cublas$lt$matmul$f8")
    assert gemm.name_start == offset_of(text, "%cublas-gemm.1.0 =")
    into = sorted((e.operand, e.source) for e in g.edges if e.target == gemm.id)
    ins = parse(text).entry.by_name["cublas-gemm.1.0"]
    assert into == [(i, op.ref.name) for i, op in enumerate(ins.operands)]


def test_triton_gemm_fusion_cluster_of_the_regression_dump():
    module = parse(read(FP8_REGRESSION))
    g = graph(module, computation="main.25")
    fusion = g.node("gemm_fusion_dot.19.0")
    assert (fusion.kind, fusion.label) == ("fusion", "Triton GEMM fusion")
    assert fusion.calls == ["gemm_fusion_dot.19.0:gemm_fusion_dot.19_computation"]
    dot = g.node("gemm_fusion_dot.19.0:gemm_fusion_dot.19_computation/dot.1")
    assert dot.opcode == "dot" and dot.computation == "gemm_fusion_dot.19_computation"


def _distances(comp, center):
    dist = {center.name.name: 0}
    queue = deque([center])
    while queue:
        ins = queue.popleft()
        nbs = [comp.by_name.get(o.ref.name) for o in ins.operands] + \
            comp.users_by_name.get(ins.name.name, [])
        for nb in nbs:
            if nb is not None and nb.name.name not in dist:
                dist[nb.name.name] = dist[ins.name.name] + 1
                queue.append(nb)
    return dist


@pytest.mark.parametrize("hops", [0, 1, 2, 4])
def test_neighbourhood_is_every_instruction_within_k_hops(hops):
    text = read(CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt")
    module = parse(text)
    entry = module.entry
    center = next(i for i in entry.instructions if i.opcode == "fusion")
    g = graph(module, around=center.name.start + 2, hops=hops, limit=5000)
    dist = _distances(entry, center)
    assert g.focus == center.name.name and g.computation == entry.name.name
    assert {n.name for n in g.nodes if n.cluster is None} == \
        {n for n, d in dist.items() if d <= hops}
    shown = {n.name for n in g.nodes if n.cluster is None}
    for n in g.nodes:
        if n.cluster is None:  # hidden counts the neighbours left out
            ins = entry.by_name[n.name]
            nbs = {o.ref.name for o in ins.operands if o.ref.name in entry.by_name} | \
                {u.name.name for u in entry.users_by_name.get(n.name, [])}
            assert n.hidden == len(nbs - shown)


def test_node_cap_keeps_the_nearest_and_says_how_many_are_not_shown():
    module = parse(read(CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt"))
    entry = module.entry
    root = entry.root
    g = graph(module, limit=20)
    assert len(g.nodes) == 20 and g.focus == root.name.name
    dist = _distances(entry, root)
    shown = [dist[n.name] for n in g.nodes if n.cluster is None]
    hidden = [d for n, d in dist.items() if n not in {x.name for x in g.nodes}]
    assert max(shown) <= min(hidden)
    assert g.omitted == g.total - len(g.nodes) > 0
    assert g.message.startswith(f"{g.omitted} more not shown")
    # clusters that did not fit are listed, collapsed
    assert any(not c.expanded for c in g.clusters)


def test_while_body_and_condition_are_clusters():
    module = parse(read(CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt"))
    loops = [(c, i) for c in module.computations for i in c.instructions
             if i.opcode in ("while", "conditional")]
    assert loops, "the train step dump has control flow"
    comp, ins = loops[0]
    g = graph(module, computation=comp.name.name, limit=5000)
    owned = sorted((c.attr, c.computation) for c in g.clusters if c.owner == ins.name.name)
    assert owned == sorted((c.attr, c.ref.name) for c in ins.called)
    expanded = [c for c in g.clusters if c.owner == ins.name.name and c.expanded]
    for c in expanded:
        assert [n.name for n in g.nodes if n.cluster == c.id] == \
            [i.name.name for i in module.by_name[c.computation].instructions]


def test_unknown_names_answer_none_and_classify_covers_parameters():
    module = parse(read(FP8_FUSED))
    assert graph(module, computation="no_such") is None
    assert graph(module, around="no_such") is None
    p = module.entry.parameters()[0]
    assert classify_node(p)[0] == "parameter"


def test_200_node_neighbourhood_of_a_large_generated_module_is_fast():
    """A synthetic 30,000-instruction ENTRY (a chain with side branches): the
    neighbourhood of an instruction in the middle is capped and quick."""
    lines = ["HloModule big, is_scheduled=true", "", "ENTRY %main (p: f32[8]) -> f32[8] {",
             "  %p = f32[8]{0} parameter(0)"]
    prev = "p"
    for i in range(30000):
        lines.append(f"  %a{i} = f32[8]{{0}} add(f32[8]{{0}} %{prev}, f32[8]{{0}} %p)")
        prev = f"a{i}"
    lines.append(f"  ROOT %r = f32[8]{{0}} negate(f32[8]{{0}} %{prev})")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    module = parse(text)
    gc.freeze()  # as the server does with live models (hlo_lsp.analysis.collector)
    try:
        module.entry.users_by_name  # built once per computation, kept by the model
        g, cpu_s = cpu_seconds(graph, module, around=text.index("%a15000 ="), hops=1000,
                               limit=200)
    finally:
        gc.unfreeze()
    assert len(g.nodes) == 200 and g.omitted == 30002 - 200
    assert "30002" in g.message or str(g.omitted) in g.message
    assert cpu_s < 0.1, cpu_s   # processor time: the walk stops at the limit


# ------------------------------------------------------------ DOT and page ---

def test_dot_quote_escapes_what_graphviz_would_interpret():
    from hlo_lsp.features.graph import dot_quote
    assert dot_quote('a"b') == '"a\\"b"'
    assert dot_quote("a\\N") == '"a\\\\N"'  # not Graphviz's node-name escape
    assert dot_quote("x\ny\r") == '"x y "'


def test_dot_has_one_node_per_graph_node_and_one_edge_per_edge():
    import re

    from hlo_lsp.features.graph import dot_ids, to_dot
    g = graph(parse(read(FP8_REGRESSION)))
    dot = to_dot(g)
    node_ids, cluster_ids = dot_ids(g)
    declared = re.findall(r"^\s*(n\d+) \[id=", dot, re.M)
    assert declared == [node_ids[n.id] for n in g.nodes]
    edges = re.findall(r"^\s*(n\d+) -> (n\d+) \[id=\"e\d+\"", dot, re.M)
    assert edges == [(node_ids[e.source], node_ids[e.target]) for e in g.edges]
    assert dot.count("subgraph cluster_") == sum(c.expanded for c in g.clusters)


def test_a_hub_is_drawn_beside_each_user():
    import re

    from hlo_lsp.features.graph import HUB_EDGES, dot_ids, stub_edges, to_dot
    from tests.helpers import chain_module
    g = graph(parse(chain_module(100)), limit=50)
    hubs = {e.source for i, e in enumerate(g.edges) if i in stub_edges(g)}
    assert hubs == {"p"} and sum(e.source == "p" for e in g.edges) > HUB_EDGES
    dot = to_dot(g)
    node_ids, _ = dot_ids(g)
    drawn = re.findall(r"^\s*(s?n?\d+) -> (n\d+) \[id=\"e(\d+)\"", dot, re.M)
    assert len(drawn) == len(g.edges)
    for source, target, i in drawn:
        e = g.edges[int(i)]
        assert target == node_ids[e.target]
        assert source == (f"s{i}" if e.source == "p" else node_ids[e.source])
        if e.source == "p":
            assert re.search(rf'^\s*s{i} \[id="s{i}", label="p"', dot, re.M)


def test_dot_is_valid_graphviz_when_dot_is_installed(tmp_path):
    import shutil
    import subprocess

    from hlo_lsp.features.graph import to_dot
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    g = graph(parse(read(CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt")))
    svg = subprocess.run(["dot", "-Tsvg"], input=to_dot(g), capture_output=True, text=True,
                         check=True).stdout
    from hlo_lsp.features.graph import stub_edges
    assert svg.count('class="node') == len(g.nodes) + len(stub_edges(g))


def test_cli_graph_writes_a_self_contained_page_and_dot(tmp_path, capsys):
    import json
    import re

    from hlo_lsp.cli.main import main
    out = tmp_path / "g.html"
    assert main(["graph", str(FP8_REGRESSION), "--around", "gemm_fusion_dot.19.0", "--hops",
                 "1", "-o", str(out)]) == 0
    page = out.read_text()
    assert "<script src" not in page and "http://" not in page.split("<script nonce=")[0]
    data = json.loads(re.search(r'id="hlo-graph-data">(.*?)</script>', page, re.S).group(1))
    module = parse(read(FP8_REGRESSION))
    g = graph(module, around="gemm_fusion_dot.19.0", hops=1)
    assert [n["name"] for n in data["nodes"]] == [n.name for n in g.nodes]
    text = read(FP8_REGRESSION)
    first = data["nodes"][0]
    line = text.split("\n")[first["range"]["start"]["line"]]
    assert line[first["range"]["start"]["character"]:].startswith("%" + first["name"])
    assert main(["graph", str(FP8_REGRESSION), "-f", "dot"]) == 0
    assert capsys.readouterr().out.startswith("digraph hlo {")
    assert main(["graph", str(FP8_REGRESSION), "--computation", "nope"]) == 2


def test_script_json_cannot_close_the_script_element():
    from hlo_lsp.features.graph_page import script_json
    text = script_json({"name": "</script><img src=x onerror=alert(1)>&"})
    assert "<" not in text and ">" not in text and "&" not in text
    import json
    assert json.loads(text)["name"].startswith("</script>")


def test_the_header_counts_the_collapsed_called_computations_apart_from_those_drawn():
    # Issue 40, item 6: "150 in called computations (collapsed)" while 22 fused
    # computations were drawn expanded; the count is the collapsed ones' instructions.
    from hlo_lsp.features.graph_page import page_data
    from hlo_lsp.syntax.lines import LineIndex
    from tests.helpers import TRAIN_AFTER
    text = read(TRAIN_AFTER)
    module = parse(text)
    g = graph(module)
    collapsed = [c for c in g.clusters if not c.expanded]
    drawn = [c for c in g.clusters if c.expanded]
    assert collapsed and drawn and all(c.shown == c.size for c in drawn)
    assert g.omitted == sum(c.size for c in collapsed)
    assert g.message == (f"{g.omitted} more not shown: {g.omitted} in {len(collapsed)} of "
                         f"{len(g.clusters)} called computations (collapsed; the other "
                         f"{len(drawn)} are drawn)")
    # a neighbourhood with every cluster collapsed says so, and how many
    small = graph(module, limit=30)
    assert all(not c.expanded for c in small.clusters)
    assert f"in {len(small.clusters)} called computations (collapsed)" in small.message
    # the page opens at ROOT when the graph is around no instruction
    data = page_data(g, LineIndex(text), TRAIN_AFTER.name, TRAIN_AFTER.as_uri())
    root = next(n for n in data["nodes"] if n["svgId"] == data["root"])
    assert data["focus"] is None and root["name"] == module.entry.root.name.name
