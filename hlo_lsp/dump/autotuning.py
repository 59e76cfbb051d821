"""XLA:GPU's autotuning files: what it tried for each GEMM, convolution and
fusion, and what it chose.

Two messages, both untrusted input (:mod:`hlo_lsp.dump.untrusted`: a regular
file, at most :data:`MAX_AUTOTUNE_BYTES`, one :class:`AutotuneFile.message` per
file that cannot be read):

- ``xla.AutotuneResults`` (xla/autotune_results.proto): ``version`` and
  ``results { device hlo result { ... } }``, the winner per key. XLA writes it
  with ``--xla_gpu_dump_autotune_results_to=FILE`` (text when FILE ends with
  ``.txt``, ``.textproto``, ``.prototxt``, ``.pbtxt`` or ``.txtpb``, binary
  otherwise: xla/service/gpu/autotuning/autotuner_util.cc ``IsTextProtoPath``)
  and, when dumping, as ``<module>.autotune_results.pbtxt`` in the dump
  directory. Older files hold ``dots``/``convs`` instead of ``results``.
- ``xla.AutotuningLogs`` (``logs { results {...} fusion_name selected_backend
  compute_capability ... }``, xla/autotuning.proto ``AutotuningLog``): every
  candidate with its measured time or failure; always text
  (``--xla_gpu_dump_autotune_logs_to=FILE``, gemm_fusion_autotuner.cc
  ``DumpAutotuningLogs``).

Each candidate is an ``xla.AutotuneResult``: ``run_time`` (a Duration),
``scratch_bytes``, ``failure { kind msg }`` and one key: ``gemm { algorithm }``
(cuBLAS), ``triton { block_m block_n block_k split_k num_stages num_warps ... }``,
``algorithm { algo_id ... }`` (cuDNN), ``conv``/``cuda_conv_plan`` (legacy),
``custom_kernel_fusion { kernel_index }`` or ``other { name config }``.

Keys (xla/service/gpu/autotuning/autotune_cache_key.cc): ``device`` is the
device description (``CUDA: 9.0, Cores: 132, GPU clock: ...``; older files
``sm_8.0 with ...``); ``hlo`` is the instruction as XLA canonicalizes it: for a
fusion the fused computation printed with canonical names (``tmp_0``...),
operand shapes and only essential constants; for any other instruction (a
cuBLAS/cuDNN custom-call) the instruction itself with its sorted backend config
and no name. The text is compared through :func:`hlo_signature`, never run.

A compile without the device (``hlo-lsp dump --target``) autotunes nothing:
XLA still writes ``<module>.autotune_results.pbtxt`` in the dump directory,
holding only ``version: 3`` (measured with jax 0.10.2 for H100): each kernel
was chosen by XLA's heuristics. The files named by the two flags above are not
written then. Results loaded with ``--xla_gpu_load_autotune_results_from`` are
copied into that dump file whether or not a kernel of the module used them, so
an entry there is joined to a kernel only by its key, never by its presence
(tests/e2e/test_autotuning_deviceless.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from hlo_lsp.dump.untrusted import UntrustedFileError, read_bytes
from hlo_lsp.dump.xla_flags import xla_flag_words

#: The largest autotuning file read (bytes); a results file of a big model is a
#: few MB of HLO text.
MAX_AUTOTUNE_BYTES = 32 * 1024 * 1024
#: The most tokens read from one file (a results file holds about 30 per entry,
#: its HLO one string each): bounds the memory a hostile file can take.
MAX_TOKENS = 500_000
#: The deepest nesting of messages read (an ``AutotuningLog`` nests 5 deep).
MAX_DEPTH = 32
#: The flags naming the files XLA writes (xla/debug_options_flags.cc).
RESULTS_FLAG = "--xla_gpu_dump_autotune_results_to"
LOGS_FLAG = "--xla_gpu_dump_autotune_logs_to"
#: The per-module results file XLA writes into a dump directory.
DUMP_SUFFIX = ".autotune_results.pbtxt"

Message = dict[str, list]


class TextProtoError(ValueError):
    """Text that is not a text-format protocol buffer; ``str`` says where."""


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\f\v]+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<ext>\[[A-Za-z0-9_./-]+\])
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fFuUlL]*)
  | (?P<punct>[{}<>:;,\[\]-])
""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"',
            "a": "\a", "b": "\b", "f": "\f", "v": "\v", "?": "?"}


def _unquote(token: str) -> str:
    """The value of a quoted text-format string: C escapes, octal and hex bytes
    decoded as UTF-8 (invalid bytes replaced)."""
    body, out, i = token[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt].encode()
            i += 2
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(int(m.group(), 8) & 0xFF)
            i += 1 + len(m.group())
        elif nxt in "xX" and (m := re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])):
            out.append(int(m.group(), 16))
            i += 2 + len(m.group())
        else:
            out += nxt.encode("utf-8")
            i += 2
    return out.decode("utf-8", "replace")


def parse_textproto(text: str) -> Message:
    """A text-format protocol buffer as plain data: field name -> the list of its
    values in order (``str`` for strings and enum words, ``int``/``float`` for
    numbers, a nested ``dict`` for messages; an ``Any`` written expanded,
    ``[type.googleapis.com/x.Y] { ... }``, is the field ``"[type.googleapis.com/x.Y]"``).
    Adjacent strings are joined. Raises :class:`TextProtoError` (with the line)
    on anything else, nesting deeper than :data:`MAX_DEPTH` and more than
    :data:`MAX_TOKENS` tokens included."""
    return _Reader(_tokens(text)).message("", 0)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """``(kind, text, line)`` per token, white space and comments left out, an
    ``end`` token last."""
    tokens: list[tuple[str, str, int]] = []
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise TextProtoError(f"line {line}: unexpected {text[pos]!r}")
        kind = m.lastgroup or ""
        if kind != "ws":
            if len(tokens) >= MAX_TOKENS:
                raise TextProtoError(f"line {line}: more than {MAX_TOKENS} tokens")
            tokens.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    tokens.append(("end", "", line))
    return tokens


class _Reader:
    """The recursive descent over :func:`_tokens` (a method recurses, not a
    closure: tests/unit/test_closures.py)."""

    def __init__(self, tokens: list[tuple[str, str, int]]) -> None:
        self.tokens = tokens
        self.at = 0

    def fail(self, msg: str) -> TextProtoError:
        return TextProtoError(f"line {self.tokens[self.at][2]}: {msg}")

    def message(self, close: str, depth: int) -> Message:
        tokens = self.tokens
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH}")
        out: Message = {}
        while True:
            kind, tok, _ = tokens[self.at]
            if close and tok == close and kind == "punct":
                self.at += 1
                return out
            if kind == "end":
                if close:
                    raise self.fail(f"missing {close!r}")
                return out
            if kind not in ("word", "ext"):
                raise self.fail(f"expected a field name, not {tok!r}")
            name = tok
            self.at += 1
            out.setdefault(name, []).append(self.value(name, depth))
            if tokens[self.at][1] in (";", ",") and tokens[self.at][0] == "punct":
                self.at += 1

    def value(self, name: str, depth: int) -> object:
        """The value after the field ``name`` (its ``:`` optional before a
        message), the position moved past it."""
        tokens = self.tokens
        colon = tokens[self.at][1] == ":"
        if colon:
            self.at += 1
        kind, tok, _ = tokens[self.at]
        if tok in ("{", "<") and kind == "punct":
            self.at += 1
            return self.message("}" if tok == "{" else ">", depth + 1)
        if not colon:
            raise self.fail(f"expected ':' after {name}")
        if kind == "str":
            parts = []
            while tokens[self.at][0] == "str":
                parts.append(_unquote(tokens[self.at][1]))
                self.at += 1
            return "".join(parts)
        if kind == "num":
            self.at += 1
            return _number(tok)
        if kind == "punct" and tok == "-" and tokens[self.at + 1][0] in ("num", "word"):
            nkind, nxt, _ = tokens[self.at + 1]
            self.at += 2
            return -_number(nxt) if nkind == "num" else "-" + nxt
        if kind == "word":
            self.at += 1
            return tok
        if kind == "punct" and tok == "[":
            raise self.fail("lists in [...] are not read")
        raise self.fail(f"expected a value for {name}, not {tok!r}")


def _number(tok: str) -> int | float:
    tok = tok.rstrip("fFuUlL") or tok
    try:
        return int(tok, 0) if not re.search(r"[.eE]", tok) or tok.lower().startswith("0x") \
            else float(tok)
    except ValueError:
        return float(tok)


def _one(msg: Message, name: str, default=None):
    values = msg.get(name)
    return values[-1] if values else default


def _int(msg: Message, name: str) -> int:
    v = _one(msg, name, 0)
    return v if isinstance(v, int) else 0


# ----------------------------------------------------------------- results --

@dataclass(frozen=True)
class Candidate:
    """One ``AutotuneResult``: the ``backend`` family ("cuBLAS", "Triton",
    "cuDNN", "custom kernel", or the ``other`` backend's name), its
    configuration in words (``config``, e.g. "algorithm 12", "64x128x32 tiles,
    split-k 1, 3 stages, 4 warps"), the measured ``run_time_us`` (µs; None when
    not measured: a zero Duration is how XLA writes none), ``scratch_bytes``
    and ``failure`` ("WRONG_RESULT: ...", None when it ran)."""

    backend: str
    config: str
    run_time_us: float | None = None
    scratch_bytes: int = 0
    failure: str | None = None

    def label(self) -> str:
        """E.g. ``cuBLAS algorithm 12``, ``Triton 64x128x32 tiles, ...``."""
        return f"{self.backend} {self.config}".strip()


def candidate(result: Message) -> Candidate:
    """The :class:`Candidate` of one ``xla.AutotuneResult`` message (plain data
    from :func:`parse_textproto`); unknown keys give backend "unknown"."""
    run = _one(result, "run_time")
    micros = None
    if isinstance(run, dict):
        nanos = _int(run, "seconds") * 1_000_000_000 + _int(run, "nanos")
        micros = nanos / 1000 if nanos > 0 else None
    failure = _one(result, "failure")
    failed = None
    if isinstance(failure, dict):
        kind, msg = _one(failure, "kind", "UNKNOWN"), _one(failure, "msg", "")
        failed = f"{kind}: {msg}" if msg else str(kind)
    backend, config = _key(result)
    return Candidate(backend, config, micros, _int(result, "scratch_bytes"), failed)


def _key(result: Message) -> tuple[str, str]:
    if isinstance(k := _one(result, "gemm"), dict):
        return "cuBLAS", f"algorithm {_int(k, 'algorithm')}"
    if isinstance(k := _one(result, "triton"), dict):
        tiles = "x".join(str(_int(k, f)) for f in ("block_m", "block_n", "block_k"))
        return "Triton", (f"{tiles} tiles, split-k {_int(k, 'split_k')}, "
                          f"{_int(k, 'num_stages')} stages, {_int(k, 'num_warps')} warps"
                          + (f", {_int(k, 'num_ctas')} CTAs" if _int(k, "num_ctas") > 1 else ""))
    if isinstance(k := _one(result, "algorithm"), dict):
        tensor = " (tensor ops)" if _one(k, "math_type") == "TENSOR_OP_MATH" else ""
        return "cuDNN", f"algorithm {_int(k, 'algo_id')}{tensor}"
    if isinstance(k := _one(result, "cuda_conv_plan"), dict):
        return "cuDNN", f"plan {_one(k, 'exec_plan_id', '')}"
    if isinstance(k := _one(result, "conv"), dict):
        return "cuDNN", f"algorithm {_int(k, 'algorithm')}"
    if isinstance(k := _one(result, "custom_kernel_fusion"), dict):
        return "custom kernel", f"{_int(k, 'kernel_index')}"
    if isinstance(k := _one(result, "other"), dict):
        name = str(_one(k, "name", "other"))
        config = _one(k, "config")
        url = _one(config, "type_url", "") if isinstance(config, dict) else ""
        return name, (str(url).rsplit("/", 1)[-1] if url else "")
    return "unknown", ""


@dataclass(frozen=True)
class ResultEntry:
    """One entry of ``AutotuneResults``: the ``device`` key, the ``hlo`` key (the
    canonical text, see the module docstring), the chosen :class:`Candidate` and
    the key's :func:`hlo_signature`."""

    device: str
    hlo: str
    winner: Candidate
    #: :func:`hlo_signature` of ``hlo``, computed once when the file is read
    signature: tuple[str, ...] = ()


@dataclass(frozen=True)
class LogEntry:
    """One ``AutotuningLog``: the ``fusion_name`` (as named when it was tuned),
    every :class:`Candidate` tried in order, ``selected_backend`` (XLA's name of
    the winner's kind; may be empty), the ``device`` ("sm_9.0" from
    ``compute_capability``; "" if absent)."""

    fusion_name: str
    candidates: tuple[Candidate, ...]
    selected_backend: str = ""
    device: str = ""

    def winner(self) -> Candidate | None:
        """The fastest candidate that ran (XLA picks it unless told otherwise)."""
        ran = [c for c in self.candidates if c.failure is None and c.run_time_us is not None]
        return min(ran, key=lambda c: c.run_time_us or 0.0) if ran else None


@dataclass(frozen=True)
class AutotuneFile:
    """What one autotuning file of ``path`` says: its ``results`` and ``logs``
    (either may be empty), the results' ``version``, and ``message``: why the file
    could not be read (None when it was)."""

    path: str
    results: tuple[ResultEntry, ...] = ()
    logs: tuple[LogEntry, ...] = ()
    version: int | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        index: dict[tuple[str, ...], ResultEntry] = {}
        for entry in self.results:
            if entry.signature:
                index.setdefault(entry.signature, entry)
        object.__setattr__(self, "_by_signature", index)

    def result_for(self, signature: tuple[str, ...]) -> ResultEntry | None:
        """The first entry whose key has this :func:`hlo_signature` (a dict
        lookup: the signatures are computed once, when the file is read)."""
        return self._by_signature.get(signature) if signature else None

    @property
    def empty(self) -> bool:
        """Read, and holding no result and no log (what a compile without the
        device writes)."""
        return self.message is None and not self.results and not self.logs


def read_autotune_file(path: str | os.PathLike,
                       limit: int = MAX_AUTOTUNE_BYTES) -> AutotuneFile:
    """Read the ``AutotuneResults`` or ``AutotuningLogs`` text file ``path``;
    never raises: a file that cannot be read (not regular, larger than
    ``limit`` bytes, binary, not a text proto) gives an :class:`AutotuneFile`
    with only its ``message``."""
    path = os.fspath(path)
    try:
        data = read_bytes(path, limit)
    except UntrustedFileError as exc:
        return AutotuneFile(path, message=str(exc))
    try:
        text = data.decode("utf-8")
        if "\x00" in text:
            raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL")
    except UnicodeDecodeError:
        return AutotuneFile(path, message=(
            f"{path}: a binary protocol buffer; hlo-lsp reads the text form (name the "
            f"file *.textproto in {RESULTS_FLAG})"))
    try:
        msg = parse_textproto(text)
    except TextProtoError as exc:
        return AutotuneFile(path, message=f"{path}: not an autotuning text proto ({exc})")
    return from_message(path, msg)


def from_message(path: str, msg: Message) -> AutotuneFile:
    """The :class:`AutotuneFile` of a parsed ``AutotuneResults`` or
    ``AutotuningLogs`` message."""
    results = []
    for name in ("results", "dots", "convs"):
        for entry in msg.get(name, ()):
            if isinstance(entry, dict) and isinstance(r := _one(entry, "result"), dict):
                hlo = str(_one(entry, "hlo", ""))
                results.append(ResultEntry(str(_one(entry, "device", "")), hlo,
                                           candidate(r), hlo_signature(hlo)))
    logs = []
    for log in msg.get("logs", ()):
        if not isinstance(log, dict):
            continue
        cc = _one(log, "compute_capability")
        device = f"sm_{_int(cc, 'major')}.{_int(cc, 'minor')}" if isinstance(cc, dict) else ""
        logs.append(LogEntry(str(_one(log, "fusion_name", "")),
                             tuple(candidate(r) for r in log.get("results", ())
                                   if isinstance(r, dict)),
                             str(_one(log, "selected_backend", "")), device))
    version = _one(msg, "version")
    return AutotuneFile(path, tuple(results), tuple(logs),
                        version if isinstance(version, int) else None)


# ------------------------------------------------------------------ finding --

def autotune_paths(dump_dir: str, xla_flags: str | None = None,
                   cwd: str | None = None) -> list[str]:
    """The autotuning files of a dump directory, in a stable order: the files
    named by :data:`RESULTS_FLAG`/:data:`LOGS_FLAG` in ``xla_flags`` (the
    recipe's ``XLA_FLAGS``; a relative name is XLA's process's, against ``cwd``,
    the recipe's working directory, else ``dump_dir``), then the
    per-module ``*.autotune_results.pbtxt`` XLA wrote there. Only paths that
    exist; nothing is read."""
    out: list[str] = []
    for word in xla_flag_words(xla_flags):
        for flag in (RESULTS_FLAG, LOGS_FLAG):
            if word.startswith(flag + "="):
                value = word[len(flag) + 1:].strip('"')
                if value:
                    out.append(os.path.join(cwd or dump_dir, value))
    try:
        names = sorted(os.listdir(dump_dir))
    except OSError:
        names = []
    out += [os.path.join(dump_dir, n) for n in names if n.endswith(DUMP_SUFFIX)]
    seen: set[str] = set()
    return [p for p in out if os.path.isfile(p) and not (p in seen or seen.add(p))]


def read_dump_autotuning(dump_dir: str) -> tuple[AutotuneFile, ...]:
    """Every autotuning file of ``dump_dir`` (:func:`autotune_paths`, with the
    ``XLA_FLAGS`` of its recipe, :func:`hlo_lsp.dump.recipe.load_recipe`), read;
    blocking (a few files). Never raises."""
    from hlo_lsp.dump.recipe import RecipeError, load_recipe
    try:
        recipe = load_recipe(dump_dir)
    except (OSError, ValueError, RecipeError):  # a recipe that cannot be used: no flags
        recipe = None
    flags = recipe.env.get("XLA_FLAGS") if recipe is not None else None
    cwd = recipe.cwd if recipe is not None else None
    return tuple(read_autotune_file(p) for p in autotune_paths(dump_dir, flags, cwd))


# ------------------------------------------------------------------ keying --

_NAMED = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*")
_OPCODE = re.compile(r"\s*([a-z][a-z0-9\-]*)\(")
#: Attributes XLA's key leaves out (metadata) or prints otherwise (the backend
#: config sorted, and filled in by the autotuner after the key was taken).
_DROP_ATTRS = frozenset({"metadata", "backend_config", "frontend_attributes", "statistics",
                         "sharding", "origin", "control-predecessors"})


def _balanced(text: str, start: int) -> int:
    """The index after the bracket group opening at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _attributes(rest: str) -> list[str]:
    """The ``key=value`` attributes after an instruction's operands, split at the
    commas outside brackets and quotes, those in :data:`_DROP_ATTRS` left out."""
    out, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(rest + ","):
        if quoted:
            if ch == "\\":
                continue
            quoted = ch != '"' or rest[i - 1] == "\\"
        elif ch == '"':
            quoted = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth <= 0:
            attr = rest[start:i].strip()
            start = i + 1
            if attr and attr.split("=", 1)[0].strip() not in _DROP_ATTRS:
                out.append(attr)
    return out


def _instruction_key(body: str) -> str | None:
    """``shape opcode/N, attributes``: the shape, the opcode, the operand count
    and the attributes up to the first one XLA's key leaves out or prints
    otherwise; None for a line that is no instruction."""
    shape_end = _balanced(body, 0) if body.startswith("(") else body.find(" ")
    if shape_end <= 0:
        return None
    m = _OPCODE.match(body, shape_end)
    if m is None:
        return None
    close = _balanced(body, m.end() - 1)
    inner = body[m.end():close - 1].strip()
    count, depth = (1 if inner else 0), 0
    for ch in inner:
        depth += ch in "([{"
        depth -= ch in ")]}"
        count += ch == "," and depth == 0
    attrs = sorted(_attributes(body[close:]))
    if m.group(1) == "constant":
        count = 0
    return " ".join(", ".join([f"{body[:shape_end]} {m.group(1)}/{count}", *attrs]).split())


def hlo_signature(hlo: str) -> tuple[str, ...]:
    """A name-free form of an instruction's or computation's text, for comparing
    an autotuning key (the canonical text, operands printed with their shapes,
    names ``tmp_N``) with a dump (operands by name, metadata and backend configs
    printed): per instruction line its result shape, opcode, operand count and
    the attributes before the first XLA leaves out of the key or prints
    otherwise (metadata, backend_config, ...); the lines sorted (a dump may list
    a computation in another order). Equal signatures: the same instruction or
    fused computation up to operand wiring and those attributes. Pure."""
    lines = []
    for raw in hlo.splitlines():
        raw = raw.strip()
        if not raw or raw in ("{", "}") or raw.endswith("{"):
            continue
        m = _NAMED.match(raw)
        key = _instruction_key(raw[m.end():] if m else raw)
        if key is not None:
            lines.append(key)
    return tuple(sorted(lines))


__all__ = ["AutotuneFile", "Candidate", "LogEntry", "MAX_AUTOTUNE_BYTES", "ResultEntry",
           "TextProtoError", "autotune_paths", "candidate", "from_message",
           "hlo_signature", "parse_textproto", "read_autotune_file", "read_dump_autotuning"]
