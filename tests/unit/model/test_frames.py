"""The Python frame of an instruction (hlo_lsp.model.frames): one answer for
hover, inlay hints, links, the readable view, the kernel summary, counterpart
matching and recipe inference."""

from __future__ import annotations

from tests.helpers import TRAIN_AFTER, read
from hlo_lsp.dump.index import source_key
from hlo_lsp.features.links import source_links
from hlo_lsp.model.frames import (SOURCE_FILE, STACK_FRAME_ID, format_frame, frame_origin,
                                  python_stack, short_frame)
from hlo_lsp.model.hlo import SourceFrame
from hlo_lsp.syntax.parser import parse

OLD_STYLE = '''HloModule m

ENTRY %e (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), metadata={op_name="a" source_file="prog.py" source_line=7}
  %q = f32[8]{0} sine(%p), metadata={op_name="b" source_file="dir/x.py"}
  ROOT %r = f32[8]{0} cosine(%q), metadata={op_name="c" stack_frame_id=9}
}
'''


def _ins(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name.name == name)


def test_stack_frame_ids_resolve_through_the_tables():
    module = parse(read(TRAIN_AFTER))
    ins = _ins(module, "ynn_fusion.5")
    origin, stack = frame_origin(module, ins)
    assert origin == STACK_FRAME_ID and stack == python_stack(module, ins)
    assert stack[0].file.endswith("make_dump.py") and stack[0].line == 76
    assert stack[0].function == "run_program.<locals>.mlp"
    assert stack[-1].function == "<module>"
    # resolved once per id; every call returns a list of its own
    again = python_stack(module, ins)
    assert again == stack and again is not stack
    again.clear()
    assert python_stack(module, ins) == stack
    assert format_frame(stack[0]).endswith(f"make_dump.py:76:{stack[0].column} "
                                           "(run_program.<locals>.mlp)")
    assert short_frame(stack[0]) == "make_dump.py:76"


def test_source_file_of_older_dumps_with_and_without_a_line():
    module = parse(OLD_STYLE)
    assert frame_origin(module, _ins(module, "p")) == (
        SOURCE_FILE, [SourceFrame("prog.py", "", 7)])
    # no source_line (XLA omits 0): the file, line unknown
    [frame] = python_stack(module, _ins(module, "q"))
    assert (frame.file, frame.line) == ("dir/x.py", 0)
    assert format_frame(frame) == "dir/x.py" and short_frame(frame) == "x.py"
    # a stack_frame_id outside the (absent) tables: no frame
    assert frame_origin(module, _ins(module, "r")) == ("", [])
    # the same frames for counterpart matching and links
    assert source_key(module, _ins(module, "p")) == ("a", "prog.py", 7)
    assert source_key(module, _ins(module, "q")) == ("b", "dir/x.py", None)
    assert source_key(module, _ins(module, "r")) == ("c", None, None)
    links = source_links(module, lambda p: "/abs/" + p)
    assert [(l.path, l.line) for l in links] == [("/abs/prog.py", 7), ("/abs/dir/x.py", 1)]
    assert OLD_STYLE[links[0].start:links[0].end] == 'source_file="prog.py" source_line=7'
    assert OLD_STYLE[links[1].start:links[1].end] == 'source_file="dir/x.py"'


def test_links_cover_stack_frame_ids_of_the_real_dump():
    text = read(TRAIN_AFTER)
    module = parse(text)
    links = source_links(module)
    assert links and all(text[l.start:l.end].startswith("stack_frame_id=") for l in links)
    assert all(l.tooltip.startswith("Python call stack (innermost first):") for l in links)
