"""``hlo-lsp show`` keeps a short op_name after the source line, so the
forward and backward instructions of one Python line can be told apart
(issue 14), on the JAX train step of examples/cpu_dump."""

from __future__ import annotations

import re

from tests.helpers import TRAIN_AFTER, read
from hlo_lsp.cli.main import main
from hlo_lsp.features.readable import render
from hlo_lsp.model.frames import python_stack, short_frame
from hlo_lsp.model.op_names import short_op_name
from hlo_lsp.syntax.parser import parse


def test_short_op_name_drops_the_jit_head_only():
    assert short_op_name("jit(train_step)/while/body/transpose(jvp())/dot_general") == \
        "while/body/transpose(jvp())/dot_general"
    assert short_op_name("pjit(f)/jvp(layer_3)/mul") == "jvp(layer_3)/mul"
    assert short_op_name("jit(f)/") == ""
    assert short_op_name("plain/name") == "plain/name"
    long = "jit(f)/" + "a/" * 60 + "dot_general"
    assert short_op_name(long, 40).startswith("…") and len(short_op_name(long, 40)) == 40


def test_show_tells_forward_and_backward_dots_apart(capsys):
    module = parse(read(TRAIN_AFTER))
    assert main(["show", str(TRAIN_AFTER)]) == 0
    out = capsys.readouterr().out
    dots = [i for c in module.computations for i in c.instructions
            if i.opcode == "dot" and "jvp(" in str(i.metadata.get("op_name", ""))]
    assert {"forward", "backward"} <= {
        "backward" if "transpose(" in i.metadata["op_name"] else "forward" for i in dots}
    for ins in dots:
        note = f"// {short_frame(python_stack(module, ins)[0])} · " \
               f"{short_op_name(ins.metadata['op_name'])}"
        [line] = [ln for ln in out.splitlines()
                  if re.match(rf"\s*(ROOT )?%{re.escape(ins.name.name)} = ", ln)]
        assert line.endswith(note), line
    # without op names, the line ends at the source, as in the editor's view
    assert main(["show", str(TRAIN_AFTER), "--no-op-names"]) == 0
    assert capsys.readouterr().out == render(module).text
