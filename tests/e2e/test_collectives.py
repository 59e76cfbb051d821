"""End to end: collectives explained (hover, inlay hints, -start/-done
navigation) through the real server over stdio, with the capabilities VS Code
and Neovim send, on the real 8-device dump of examples/sharded/ (explicit and
mesh[...] replica groups), its iota rewrite (tests/data/README.md) and the
real GPU dump with an all-reduce-start/-done pair."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.helpers import (COLLECTIVES_STEP, COLLECTIVES_STEP_IOTA, MESH_MATMUL_DATA,
                           MESH_MATMUL_MODEL, SHARDED_DUMP, SPMD_MESH8_GPU, open_file,
                           position_of as _pos, read, snapshot)

SERVER = [sys.executable, "-m", "hlo_lsp"]
BYTES = {"f32": 4, "bf16": 2}


@pytest_lsp.fixture(
    params=["visual_studio_code", "neovim"],
    config=ClientServerConfig(server_command=SERVER),
)
async def client(request, lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(request.param),
        initialization_options={"xlaDiagnostics": False}))
    yield
    await lsp_client.shutdown_session()


def _doc(uri):
    return types.TextDocumentIdentifier(uri=uri)


async def _hover(client, uri, text, needle, delta=1) -> str:
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(text, needle, delta)))
    assert h is not None, needle
    return h.contents.value


def _line(text: str, name: str) -> str:
    start = text.index(f"%{name} = ")
    return text[start:text.index("\n", start)]


def _groups_as_written(line: str) -> list[str]:
    """The explicit groups of an instruction line, as the hover prints them."""
    value = re.search(r"replica_groups=\{(.*?)\}\}", line).group(1) + "}"
    return re.findall(r"\{[\d,]+\}", value)


def _listed(md: str) -> str:
    """The hover's line listing the expanded groups."""
    return next(line for line in md.splitlines() if line.strip().startswith("- {"))


def _buffer_bytes(line: str) -> int:
    """Bytes of the (single) array shape printed before the opcode."""
    dtype, dims = re.search(r"= (\w+)\[([\d,]*)\]", line).groups()
    return BYTES[dtype] * math.prod(int(d) for d in dims.split(",") if d)


async def test_hover_explains_each_collective_of_the_real_dump(client: LanguageClient):
    uri, text = open_file(client, COLLECTIVES_STEP)
    # psum over "model": explicit groups of global device ids (channel_id and
    # use_global_device_ids=true), 2(n-1)/n of the buffer per device.
    line = _line(text, "psum_invariant.14")
    md = await _hover(client, uri, text, "%psum_invariant.14 = ")
    assert "**Collective** `all-reduce` — 8 devices (replica_count=1 × num_partitions=8)" in md
    assert "`kFlattenedID`" in md and "global device ids" in md
    assert "collective_ops_utils.h" in md and "nccl-tests doc/PERFORMANCE.md" in md
    groups = _groups_as_written(line)
    assert groups == ["{0,1,2,3}", "{4,5,6,7}"]
    assert _listed(md).strip() == "- " + ", ".join(groups)
    n = len(groups[0].split(","))
    buffer = _buffer_bytes(line)
    assert f"sends {2 * (n - 1) * buffer // n} B" in md and "lower bound" in md

    # all_gather over "data": the other axis; (n-1)/n of the gathered output.
    line = _line(text, "all_gather.3")
    md = await _hover(client, uri, text, "%all_gather.3 = ")
    assert _listed(md).strip() == "- " + ", ".join(_groups_as_written(line))
    out = _buffer_bytes(line)
    assert f"sends {(2 - 1) * out // 2} B" in md and "(n-1)/n × output" in md

    # all-to-all has no use_global_device_ids: partition ids (channel_id).
    md = await _hover(client, uri, text, "%all-to-all = ")
    assert "`kCrossPartition`" in md and "partition ids" in md

    # ppermute over "model": a ring in each row of the mesh.
    md = await _hover(client, uri, text, "%ppermute.3 = ")
    assert "`source_target_pairs`: 8 pairs" in md
    assert "ring shift by 1 within blocks of 4" in md and "0→1, 1→2, 2→3, 3→0" in md


async def test_mesh_and_iota_forms_expand_to_the_groups_xla_wrote_explicitly(
        client: LanguageClient):
    uri, text = open_file(client, COLLECTIVES_STEP)
    over_model = _listed(await _hover(client, uri, text, "%psum_invariant.14 = "))
    over_data = _listed(await _hover(client, uri, text, "%all_gather.3 = "))
    # The partitioner's all-reduce of sharded_matmul over "model", then "data".
    for path, expected in ((MESH_MATMUL_MODEL, over_model), (MESH_MATMUL_DATA, over_data)):
        uri, text = open_file(client, path)
        md = await _hover(client, uri, text, "all-reduce(", 0)
        assert "`replica_groups` (mesh axes)" in md
        assert "grouped over `axis_1`" in md
        assert _listed(md) == expected, path.name
    assert "device_ids `[2,4]T(1,0)`" in (await _hover(
        client, *(open_file(client, MESH_MATMUL_MODEL)), "all-reduce(", 0))
    # The iota rewrite of the same dump.
    uri, text = open_file(client, COLLECTIVES_STEP_IOTA)
    md = await _hover(client, uri, text, "%psum_invariant.14 = ")
    assert "`replica_groups` (iota): `[2,4]<=[8]`" in md and _listed(md) == over_model
    md = await _hover(client, uri, text, "%all_gather.3 = ")
    assert "`[4,2]<=[2,4]T(1,0)`" in md and _listed(md) == over_data


async def test_inlay_hints_after_the_replica_groups(client: LanguageClient):
    uri, text = open_file(client, COLLECTIVES_STEP)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=_doc(uri), range=types.Range(
            start=types.Position(line=0, character=0),
            end=types.Position(line=text.count("\n") + 1, character=0))))
    collective = [h for h in hints if "devices ·" in h.label]
    lines = [m.start() for m in re.finditer(r"replica_groups=|source_target_pairs=", text)]
    assert len(collective) == len(lines) == 6
    by_line = {h.position.line: h for h in collective}
    line = _line(text, "psum_invariant.14")
    value = re.search(r"replica_groups=\S+\}\}", line).group(0)
    h = by_line[_pos(text, line).line]
    assert h.position == _pos(text, value, len(value))
    n, buffer = 4, _buffer_bytes(line)
    assert h.label == f"8 devices · 2 groups of {n} · {2 * (n - 1) * buffer // n} B/dev"
    assert h.kind is None and h.padding_left
    assert "kFlattenedID" in h.tooltip


async def test_start_and_done_navigate_to_each_other(client: LanguageClient):
    uri, text = open_file(client, SPMD_MESH8_GPU)
    start_def = _pos(text, "%all-reduce-start = ")
    done_def = _pos(text, "%all-reduce-done = ")
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=_doc(uri), position=_pos(text, "%all-reduce-start = ", 3),
        context=types.ReferenceContext(include_declaration=True)))
    starts = {(r.range.start.line, r.range.start.character) for r in refs}
    assert (done_def.line, done_def.character) in starts        # the -done's name
    operand = _pos(text, "%all-reduce-start)", 0, text.index("%all-reduce-done = "))
    assert (operand.line, operand.character) in starts          # its operand
    result = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=operand))
    assert [r.range.start for r in result] == [start_def]
    md = await _hover(client, uri, text, "%all-reduce-done = ")
    assert "completes `%all-reduce-start` (`all-reduce-start`)" in md
    assert "mesh `axis_0`=1, `axis_1`=8; grouped over `axis_1`" in md
    assert "- {0,1,2,3,4,5,6,7}" in md
    md = await _hover(client, uri, text, "%all-reduce-start = ")
    assert "completed by `%all-reduce-done`" in md


@pytest.mark.slow  # runs the JAX program on 8 virtual CPU devices (about 10 s)
def test_the_sharded_example_is_regenerated_byte_for_byte(tmp_path):
    """examples/sharded/make_sharded_dump.py makes exactly the committed dump
    (deterministic; file names relative to the repository)."""
    pytest.importorskip("jax")
    out = tmp_path / "dump"
    subprocess.run([sys.executable, str(SHARDED_DUMP.parent / "make_sharded_dump.py"),
                    "--out", str(out)], check=True, capture_output=True, timeout=300)
    assert snapshot(out) == snapshot(SHARDED_DUMP)
    assert '1 "examples/sharded/make_sharded_dump.py"' in read(COLLECTIVES_STEP)
