"""Agreement with XLA's own parser on every HLO file of ../shared/corpus.

- XLA accepts -> we report no error, and the same numbers of computations and
  instructions as XLA;
- XLA rejects -> the document gets an error diagnostic: from our parser, or
  from XLA's verdict that the server reports beside it (source ``xla``).
"""

from __future__ import annotations

import pytest

from hlo_lsp.features.diagnostics import diagnostics, merge_xla, xla_problem
from hlo_lsp.model.hlo import Severity
from hlo_lsp.syntax.parser import parse
from hlo_lsp.syntax.lines import LineIndex

xla_oracle = pytest.importorskip("hlo_lsp.syntax.xla")
if not xla_oracle.available():
    pytest.skip("jaxlib (XLA's parser) is not installed", allow_module_level=True)


def _hlo_files(corpus):
    for path in sorted(corpus.rglob("*")):
        if path.is_file() and path.suffix in (".hlo", ".txt", ".hlotxt") \
                and path.name != "README.md":
            yield path


@pytest.fixture(scope="module")
def oracle():
    o = xla_oracle.XlaOracle()
    yield o
    o.close()


def test_corpus_agrees_with_xla(corpus_dir, oracle, capsys):
    accepted = rejected = ours_caught = 0
    failures = []
    for path in _hlo_files(corpus_dir):
        text = path.read_text(encoding="utf-8", errors="replace")
        verdict = oracle.check(text)
        assert verdict is not None, f"XLA worker failed on {path.name}"
        module = parse(text)
        problems = diagnostics(module)
        errors = [p for p in problems if p.severity == Severity.ERROR]
        if verdict.ok:
            accepted += 1
            counts = (len(module.computations), module.instruction_count())
            if errors or counts != (verdict.computations, verdict.instructions):
                failures.append(f"{path.name}: XLA accepts ({verdict.computations}, "
                                f"{verdict.instructions}), we say {counts}, "
                                f"{[e.message for e in errors[:2]]}")
        else:
            rejected += 1
            ours_caught += bool(errors)
            lines = LineIndex(text)
            merged = merge_xla(problems, [xla_problem(verdict, lines)], lines)
            if not any(p.severity == Severity.ERROR for p in merged):
                failures.append(f"{path.name}: XLA rejects ({verdict.message}), no error")
            if not errors:
                # Only an attribute newer than jaxlib's XLA may be the difference:
                # then our own warning is on XLA's line.
                warned = [p for p in problems if p.severity == Severity.WARNING
                          and lines.line_of(p.start) == verdict.line - 1]
                if "unexpected attribute" not in verdict.message or not warned:
                    failures.append(f"{path.name}: XLA rejects ({verdict.message}), "
                                    "our own checks find nothing")
    with capsys.disabled():
        print(f"\ncorpus: XLA accepts {accepted} files (all agree: counts and no errors); "
              f"rejects {rejected}, of which our parser alone flags {ours_caught}")
    # Split files (`// -----`) are judged part by part, as XLA's tools read them.
    assert accepted > 300 and rejected >= 10
    assert not failures, "\n".join(failures)


def test_check_gives_no_json_warning_on_files_xla_accepts(corpus_dir, oracle, capsys):
    """Issue 40: XLA's parser keeps ``backend_config`` as raw text (any string;
    only a backend reads it as its proto, when compiling), so on a file XLA
    accepts, `hlo-lsp check` may not warn that it is not JSON (the Triton dot
    layout tests hold ``"is_tma_allowed":ENABLE_TMA``, a template placeholder).
    Such a value is at most information. Only the files whose backend_config
    is not JSON go through XLA's parser and the CLI."""
    from hlo_lsp.cli.main import main

    suspects = [path for path in _hlo_files(corpus_dir)
                if any("not valid JSON" in p.message for p in diagnostics(
                    parse(path.read_text(encoding="utf-8", errors="replace"))))]
    accepted = [str(path) for path in suspects
                if oracle.check(path.read_text(encoding="utf-8", errors="replace")).ok]
    if not accepted:
        pytest.skip("no corpus file XLA accepts has a backend_config that is not JSON")
    capsys.readouterr()
    main(["check", "--quiet", *accepted])
    lines = capsys.readouterr().out.splitlines()
    json_lines = [line for line in lines if "JSON" in line]
    assert len(json_lines) >= len(accepted)  # still said, as information
    assert all(": information: backend_config is not valid JSON" in line
               for line in json_lines), "\n".join(json_lines)
