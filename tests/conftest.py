"""Shared paths and helpers for tests on real dumps."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CPU_DUMP = EXAMPLES / "cpu_dump"
GPU = EXAMPLES / "gpu"
FP8_DUMP = GPU / "jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt"
FP8_REGRESSION = GPU / "jit_matmul_fn_with_scale.fp8_gemm_fusion.gpu_after_optimizations.txt"
FP8_FUSED = GPU / "jit_matmul_fn_with_scale.fp8_cublaslt_fused.gpu_after_optimizations.txt"
TRAIN_AFTER = CPU_DUMP / "module_0028.jit_train_step.cpu_after_optimizations.txt"
TRAIN_BEFORE = CPU_DUMP / "module_0028.jit_train_step.before_optimizations.txt"
CORPUS = ROOT.parent / "shared" / "corpus"


def read(path: pathlib.Path) -> str:
    return path.read_text(encoding="utf-8")


def offset_of(text: str, needle: str, delta: int = 0, occurrence: int = 0) -> int:
    """Offset of the ``occurrence``-th ``needle`` in ``text`` plus ``delta``;
    fails the test if absent."""
    pos = -1
    for _ in range(occurrence + 1):
        pos = text.find(needle, pos + 1)
        assert pos >= 0, f"{needle!r} not found"
    return pos + delta


def position_of(text: str, needle: str, delta: int = 0, start: int = 0):
    """The LSP position (0-based line, UTF-16 column; the test texts are ASCII) of
    the first ``needle`` at or after ``start``, plus ``delta`` characters."""
    from lsprotocol import types

    off = text.index(needle, start) + delta
    return types.Position(line=text.count("\n", 0, off),
                          character=off - (text.rfind("\n", 0, off) + 1))


@pytest.fixture(scope="session")
def corpus_dir() -> pathlib.Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return CORPUS


# The server registers its file watchers with client/registerCapability when the
# client claims dynamic registration (VS Code does); pytest-lsp's test client does
# not implement that request, so answer it the way an editor does.
from lsprotocol import types as _types  # noqa: E402
from pytest_lsp.client import LanguageClient as _Client  # noqa: E402
from pytest_lsp.client import default_feature as _default_feature  # noqa: E402


@_default_feature(_types.CLIENT_REGISTER_CAPABILITY)
def _register_capability(client: _Client, params: _types.RegistrationParams):
    client.registrations = getattr(client, "registrations", []) + list(params.registrations)


@_default_feature(_types.CLIENT_UNREGISTER_CAPABILITY)
def _unregister_capability(client: _Client, params: _types.UnregistrationParams):
    return None
