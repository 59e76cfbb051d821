"""The custom messages of hlo-lsp, typed: requests, commands and their results.

One definition per message, for the handlers and for ``docs/protocol.md``:

| message | params / arguments | result |
|---|---|---|
| request ``hlo/inlineRegions`` | :class:`DocumentParams` | :class:`InlineRegion` ``[]`` |
| request ``hlo/counterpart`` | :class:`DocumentPositionParams` | ``Location[]`` |
| request ``hlo/counterpartFiles`` | :class:`DocumentParams` | URI ``string[]``, best first |
| request ``hlo/workspaceStatus`` | none | :class:`WorkspaceStatus` |
| command ``hlo.showSummary`` | ``[uri, SummaryOptions?]`` | markdown or text; :class:`SummaryTable` with ``targets`` |
| command ``hlo.readableView`` | ``[uri, ReadableOptions?]`` | :class:`ReadableView` |
| command ``hlo.compareDumps`` | ``[oldUri, newUri, SummaryOptions?]`` | text or markdown |
| command ``hlo.gotoCounterpart`` | ``[uri, Position]`` or ``[DocumentPositionParams]`` | ``Location[]`` |
| command ``hlo.recompile`` | ``[uri]``, ``[uri, {"target": T}]``, ``[uri, {"platform": P}]``, ``[uri, {"profile": N}]`` or ``[{uri}]`` | :class:`RecompileReply` |
| request ``hlo/profileRuns`` | :class:`ProfileRunsParams` | :class:`ProfileRunsReply` |
| command ``hlo.loadProfile`` | ``[{uri, path?}]`` (:class:`LoadProfileArgs`) or ``[uri, path?]`` | :class:`LoadProfileReply` |
| request ``hlo/passHistory`` | :class:`DocumentParams` | :class:`PassHistoryReply` |
| request ``hlo/passBlame`` | :class:`DocumentPositionParams` | :class:`PassBlameReply` |
| notification ``hlo/passHistoryChanged`` (server to client) | :class:`PassHistoryChanged` | none |

Params come from the client: :func:`parse_params` and :func:`parse_arguments`
never raise; malformed input gives None (the handler answers its empty result).
Results are sent as JSON objects with camelCase keys (:func:`to_json`).
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
import cattrs
from lsprotocol import types
from lsprotocol.converters import get_converter

T = TypeVar("T")

INLINE_REGIONS = "hlo/inlineRegions"
COUNTERPART = "hlo/counterpart"
COUNTERPART_FILES = "hlo/counterpartFiles"
WORKSPACE_STATUS = "hlo/workspaceStatus"
SHOW_SUMMARY = "hlo.showSummary"
READABLE_VIEW = "hlo.readableView"
COMPARE_DUMPS = "hlo.compareDumps"
GOTO_COUNTERPART = "hlo.gotoCounterpart"
RECOMPILE = "hlo.recompile"
#: Custom request and command of measured profiles (docs/protocol.md, "Profiles").
PROFILE_RUNS = "hlo/profileRuns"
LOAD_PROFILE = "hlo.loadProfile"


@attrs.frozen
class TextDocument:
    uri: str


@attrs.frozen
class DocumentParams:
    """``{textDocument: {uri}}``."""

    text_document: TextDocument


@attrs.frozen
class DocumentPositionParams:
    """``{textDocument: {uri}, position: {line, character}}``."""

    text_document: TextDocument
    position: types.Position


@attrs.frozen
class InlineRegion:
    """A range an editor may hide in place; ``kind`` is ``metadata``,
    ``backend_config`` or ``frontend_attributes``."""

    range: types.Range
    kind: str


@attrs.frozen
class WorkspaceStatus:
    """The workspace index: ``done`` of ``total`` files of the running pass,
    ``files`` and ``symbols`` indexed, ``seconds`` of the last finished pass."""

    indexing: bool = False
    done: int = 0
    total: int = 0
    files: int = 0
    symbols: int = 0
    seconds: float = 0.0


@attrs.frozen
class SummaryOptions:
    """``format``: ``markdown`` or ``text`` (``hlo.showSummary`` defaults to
    markdown, ``hlo.compareDumps`` to text). ``targets`` (``hlo.showSummary``
    with ``format: "text"`` only): answer a :class:`SummaryTable` instead of the
    text, so that each row can go to its instruction (a server before it
    ignores the key and answers the text)."""

    format: str | None = None
    targets: bool = False


@attrs.frozen
class SummaryTarget:
    """A row of the summary's text naming a kernel: ``line`` (0-based) of the
    text, ``start``/``end`` the ``%name`` on it (UTF-16 units; the row starts
    with ASCII), ``location`` the kernel instruction's name in its document."""

    line: int
    start: int
    end: int
    location: types.Location


@attrs.frozen
class SummaryTable:
    """``hlo.showSummary`` with ``{format: "text", targets: true}``: the text
    report and its rows that go to an instruction."""

    text: str
    targets: list[SummaryTarget]


@attrs.frozen
class ReadableOptions:
    inline_fusions: bool = False
    keep_metadata: bool = False


@attrs.frozen
class ReadableView:
    """The readable view's ``text``; ``line_map[i]``: the character offset in the
    original document of view line ``i`` (None for lines it adds);
    ``source_lines[i]``: that offset's 0-based line."""

    text: str
    line_map: list[int | None]
    source_lines: list[int | None]


@attrs.frozen
class RecompileReply:
    """The result of the ``hlo.recompile`` command: the one definition editors read.

    ``ok``: the program ran and the dump was replaced; ``cancelled``: the user
    declined or cancelled (nothing changed); ``error``: why it failed, one
    sentence (empty when ``ok``); ``summary``: the report for the user, several
    lines separated by ``\\n`` (what ran, how long, what changed per module:
    :func:`hlo_lsp.dump.recompile.summarize`); editors show it as is, line by
    line. ``mapping``: each open file's URI -> its new URI (None when gone);
    ``shownDocuments``: URIs the server asked the editor to show. The other
    fields describe the run (``timedOut``, ``returncode``, ``platform``,
    ``command``, ``dumpDir``, ``seconds``, ``stderrTail``, ``changes``,
    ``recipeFile``, ``target``, ``deviceless``, ``launcher``, ``launched``,
    ``jobId``, ``stages``; see docs/recompile.md).
    """

    ok: bool = False
    cancelled: bool = False
    error: str = ""
    summary: str = ""
    timed_out: bool = False
    returncode: int | None = None
    platform: str = ""
    command: str = ""
    dump_dir: str = ""
    seconds: float = 0.0
    stderr_tail: str = ""
    mapping: dict[str, str | None] = attrs.field(factory=dict)
    changes: list[dict] = attrs.field(factory=list)
    recipe_file: str | None = None
    shown_documents: list[str] = attrs.field(factory=list)
    #: The GPU the dump was compiled for without it (``h100``...), else None;
    #: ``deviceless``: the sentence saying so (kernels chosen without autotuning).
    target: str | None = None
    deviceless: str | None = None
    #: The launcher the program ran through (``slurm``, ``ssh``, ``docker``...,
    #: ``custom``; None: on the server's machine), the full command line that
    #: ran (``launched``), the SLURM job id (or remote process group over ssh)
    #: and the stages reported (``queued in SLURM (job 12)``, ``copying back``).
    launcher: str | None = None
    launched: str = ""
    job_id: str | None = None
    stages: list[str] = attrs.field(factory=list)
    #: A profiled run (``{"profile": N}``, or a recipe that profiles): the lines
    #: saying what was traced, where and on which device (not profiled: that the
    #: previous compile's profile was removed, else ""), and the new profile run's
    #: directory (a path; None without one).
    profile: str = ""
    profile_run: str | None = None
    #: An experiment with a flag (``{"experiment": KEY, "line": N}``): what it
    #: did, :meth:`hlo_lsp.dump.experiments.ExperimentResult.to_json` (``variantDir``,
    #: ``variantFile``, ``line``, ``outcome``, ``change``, ``message``); else None.
    experiment: dict | None = None


def recompile_reply(**fields: Any) -> dict:
    """A ``hlo.recompile`` result as JSON: :class:`RecompileReply` built from
    ``fields`` (snake_case names; an unknown name raises TypeError, so a field
    cannot be sent that the contract does not define), camelCase keys."""
    return to_json(RecompileReply(**fields))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _make_converter() -> cattrs.Converter:
    conv = get_converter()  # lsprotocol's: Position, Range, Location with LSP names
    ours = cattrs.Converter()
    for cls in (TextDocument, DocumentParams, DocumentPositionParams, InlineRegion,
                WorkspaceStatus, SummaryOptions, SummaryTarget, SummaryTable,
                ReadableOptions, ReadableView, RecompileReply):
        renames = {a.name: cattrs.gen.override(rename=_camel(a.name)) for a in attrs.fields(cls)}
        ours.register_structure_hook(cls, cattrs.gen.make_dict_structure_fn(
            cls, ours, _cattrs_forbid_extra_keys=False, **renames))
        ours.register_unstructure_hook(cls, cattrs.gen.make_dict_unstructure_fn(
            cls, ours, **renames))
    for lsp_cls in (types.Position, types.Range, types.Location):
        ours.register_structure_hook(lsp_cls, lambda v, c: conv.structure(v, c))
        ours.register_unstructure_hook(lsp_cls, conv.unstructure)
    return ours


_converter = _make_converter()

RECOMPILE_REPLY_KEYS: tuple[str, ...] = tuple(_camel(a.name) for a in attrs.fields(RecompileReply))
"""The JSON keys of :class:`RecompileReply` (camelCase), for the editors' tests."""


def plain(value: Any) -> Any:
    """JSON-like data of what pygls hands a handler for a custom message: plain
    dicts and lists, named tuples (pygls' ``Object`` for unknown params) or
    lsprotocol objects."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if attrs.has(type(value)):
        return get_converter().unstructure(value)
    return value


def parse_params(cls: type[T], params: Any) -> T | None:
    """``params`` as ``cls``, or None when they do not fit."""
    try:
        return _converter.structure(plain(params), cls)
    except Exception:  # noqa: BLE001 - malformed client input: the empty answer
        return None


def parse_arguments(args: Any, *classes: type) -> list[Any] | None:
    """Positional command arguments: ``args[i]`` as ``classes[i]`` (``str`` for a
    URI). Missing trailing arguments of option classes (attrs classes whose
    fields all have defaults) become their defaults; None when the required ones
    are missing or malformed."""
    args = list(args or [])
    out: list[Any] = []
    for i, cls in enumerate(classes):
        if i >= len(args) or args[i] is None:
            if attrs.has(cls) and all(a.default is not attrs.NOTHING for a in attrs.fields(cls)):
                out.append(cls())
                continue
            return None
        value = plain(args[i])
        if cls is str:
            if isinstance(value, dict):  # {uri} or {textDocument: {uri}}
                value = value.get("uri") or (value.get("textDocument") or {}).get("uri")
            if not isinstance(value, str):
                return None
            out.append(value)
            continue
        try:
            out.append(_converter.structure(value if value is not None else {}, cls))
        except Exception:  # noqa: BLE001
            return None
    return out


def to_json(value: Any) -> Any:
    """A result as JSON data (camelCase keys)."""
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return _converter.unstructure(value)


# ---------------------------------------------------------------- hlo/graph ---

GRAPH = "hlo/graph"
#: Custom request: memory over the schedule of a dump as a page (docs/protocol.md).
MEMORY = "hlo/memory"


@attrs.frozen
class GraphParams:
    """``hlo/graph`` params: the document and either ``computation`` (a name), or
    ``position`` (an instruction: its neighbourhood of ``hops`` hops; a
    computation header: that computation), or both; at most ``limit`` nodes."""

    text_document: TextDocument
    computation: str | None = None
    position: types.Position | None = None
    hops: int | None = None
    limit: int | None = None
    #: also the self-contained HTML page of the graph (``GraphReply.page``)
    page: bool | None = None
    #: ``"text"``: the dataflow as text instead (:class:`TextPictureReply`)
    format: str | None = None


@attrs.frozen
class MemoryParams:
    """``hlo/memory`` params: the document; ``format: "text"`` asks for the chart
    as text (:class:`TextPictureReply`) instead of the page."""

    text_document: TextDocument
    format: str | None = None


@attrs.frozen
class PictureTarget:
    """Line ``line`` (0-based) of a text picture names the instruction at ``range``
    (its name, with ``%``)."""

    line: int
    range: types.Range


@attrs.frozen
class TextPictureReply:
    """``hlo/graph`` and ``hlo/memory`` with ``format: "text"``: the picture as
    ``lines`` of text (:mod:`hlo_lsp.features.text_pictures`), the lines that name
    an instruction (``targets``), the line to start on (``cursorLine``) and what
    is not shown (``message``, "" when nothing is left out)."""

    title: str
    lines: list[str]
    targets: list[PictureTarget]
    cursor_line: int = 0
    message: str = ""


@attrs.frozen
class GraphNodeInfo:
    """One instruction of the graph (:class:`hlo_lsp.features.graph.GraphNode`):
    ``range`` the instruction, ``selectionRange`` its name."""

    id: str
    name: str
    opcode: str
    shape: str
    kind: str
    computation: str
    range: types.Range
    selection_range: types.Range
    cluster: str | None = None
    label: str = ""
    library: str = ""
    target: str = ""
    is_root: bool = False
    hidden: int = 0
    calls: list[str] = attrs.field(factory=list)


@attrs.frozen
class GraphEdgeInfo:
    """Operand ``operand`` of ``target`` is ``source`` (node ids), of ``shape``."""

    source: str
    target: str
    operand: int
    shape: str


@attrs.frozen
class GraphClusterInfo:
    """A called computation drawn in its caller ``owner`` (a node id)."""

    id: str
    computation: str
    owner: str
    attr: str
    size: int
    shown: int = 0
    expanded: bool = False
    parent: str | None = None


@attrs.frozen
class GraphReply:
    """The ``hlo/graph`` result (:class:`hlo_lsp.features.graph.Graph`);
    ``omitted`` instructions are not shown and ``message`` says so."""

    computation: str
    focus: str | None
    nodes: list[GraphNodeInfo]
    edges: list[GraphEdgeInfo]
    clusters: list[GraphClusterInfo]
    total: int
    omitted: int
    message: str = ""
    hops: int | None = None
    limit: int = 0
    #: the self-contained HTML page (:func:`hlo_lsp.features.graph_page.graph_html`)
    #: when the params asked for it, else ""
    page: str = ""


for _cls in (GraphParams, GraphNodeInfo, GraphEdgeInfo, GraphClusterInfo, GraphReply,
             MemoryParams, PictureTarget, TextPictureReply):
    _renames = {a.name: cattrs.gen.override(rename=_camel(a.name)) for a in attrs.fields(_cls)}
    _converter.register_structure_hook(_cls, cattrs.gen.make_dict_structure_fn(
        _cls, _converter, _cattrs_forbid_extra_keys=False, **_renames))
    _converter.register_unstructure_hook(_cls, cattrs.gen.make_dict_unstructure_fn(
        _cls, _converter, **_renames))


# ---------------------------------------------------------------- profiles ---

def _a_path(_instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
    """A directory from the client: no NUL character (no file system path has one)."""
    if value is not None and "\x00" in value:
        raise ValueError(f"{attribute.name}: not a path")


@attrs.frozen
class ProfileRunsParams:
    """``hlo/profileRuns`` params: the document, and ``path``: a directory to
    look in (a dump directory, a folder holding ``plugins/profile/<run>/``, or a
    run); None: the setting ``profile``, else beside the document's dump. A
    ``path`` with a NUL character is malformed."""

    text_document: TextDocument
    path: str | None = attrs.field(default=None, validator=_a_path)


@attrs.frozen
class ProfileRunInfo:
    """One capture of ``jax.profiler``: ``path`` (its directory) and ``name``
    (the directory's name, the capture time ``2026_11_29_06_10_12``)."""

    path: str
    name: str


@attrs.frozen
class ProfileRunsReply:
    """The ``hlo/profileRuns`` result: the ``runs`` found, oldest first;
    ``loaded``: the run the document's measured times come from now (None:
    none); ``message``: one sentence for the user ("" when there is nothing to
    say, e.g. "no profile in /d")."""

    runs: list[ProfileRunInfo]
    loaded: str | None = None
    message: str = ""


@attrs.frozen
class LoadProfileArgs:
    """``hlo.loadProfile`` argument: the document ``uri`` and ``path``, a run
    directory or a directory holding runs (None: the newest run near the
    document, or in the setting ``profile``)."""

    uri: str
    path: str | None = attrs.field(default=None, validator=_a_path)


@attrs.frozen
class LoadProfileReply:
    """The ``hlo.loadProfile`` result: ``run``, the run directory loaded (None:
    none), and ``message``, the sentence the server also showed
    (``window/showMessage``)."""

    run: str | None
    message: str = ""


for _cls in (ProfileRunsParams, ProfileRunInfo, ProfileRunsReply, LoadProfileArgs,
             LoadProfileReply):
    _renames = {a.name: cattrs.gen.override(rename=_camel(a.name)) for a in attrs.fields(_cls)}
    _converter.register_structure_hook(_cls, cattrs.gen.make_dict_structure_fn(
        _cls, _converter, _cattrs_forbid_extra_keys=False, **_renames))
    _converter.register_unstructure_hook(_cls, cattrs.gen.make_dict_unstructure_fn(
        _cls, _converter, **_renames))


# ------------------------------------------------------------ pass history ---

#: Custom requests of the pass history (docs/protocol.md, "Pass history").
PASS_HISTORY = "hlo/passHistory"
PASS_BLAME = "hlo/passBlame"


@attrs.frozen
class PassSnapshotInfo:
    """One file of a module's pass history: ``index`` (the step number
    ``SSSS``; -1 the before-optimizations file, the after-optimizations file one
    past the last snapshot), ``pipeline``, ``passName`` (the pass just run, or
    ``before_optimizations``/``after_optimizations`` at the ends), ``step`` (a
    mid-pass dump's step, else ""), ``file`` (base name) and ``uri``; the
    instructions ``added``, ``removed``, ``changed`` against the file read
    before it (null when this one could not be read: ``problem`` says why)."""

    index: int
    pipeline: str
    pass_name: str
    file: str
    uri: str
    step: str = ""
    added: int | None = 0
    removed: int | None = 0
    changed: int | None = 0
    problem: str = ""


@attrs.frozen
class PassRowInfo:
    """A row of the timeline as ``hlo-lsp passes`` folds it: ``label``
    (``simplification: algsimp ×2``), ``step`` (``0014``, ``0006-0007``,
    ``-``), ``first``/``last`` (indices into the reply's ``snapshots`` of its
    first and last file), ``previous`` (the index of the file its first step is
    compared with: the left side of its diff, the right side being ``last``;
    null for the first file), the instruction counts summed (null when a file
    could not be read), ``instructions`` in its last file, ``notes`` (``+fusion
    kLoop -reshape``: what appeared and vanished) and ``end`` (the before- or
    after-optimizations file)."""

    label: str
    step: str
    first: int
    last: int
    previous: int | None
    added: int | None
    removed: int | None
    changed: int | None
    instructions: int
    notes: str
    end: bool


@attrs.frozen
class PassHistoryReply:
    """The ``hlo/passHistory`` result: the ``module`` (``module_0008.jit_layer``),
    its ``directory``, every file of its history in order (``snapshots``), the
    timeline's ``rows`` and how many snapshots changed nothing (``quiet``, left
    out of the rows); ``message``: why there is no history ("" when there is
    one; then everything else is empty)."""

    module: str = ""
    directory: str = ""
    snapshots: list[PassSnapshotInfo] = attrs.Factory(list)
    rows: list[PassRowInfo] = attrs.Factory(list)
    quiet: int = 0
    message: str = ""


@attrs.frozen
class PassPlace:
    """A stage of an instruction's history with the instruction in it:
    ``index``, ``pipeline``, ``passName``, ``file``, ``uri`` as in
    :class:`PassSnapshotInfo`, ``words`` (``dot-library-rewriter in
    dot-library-passes, snapshot 0014``), ``name`` (its name in that file) and
    ``location`` (its name there: the file's URI and range)."""

    index: int
    pipeline: str
    pass_name: str
    file: str
    uri: str
    words: str
    name: str
    location: types.Location


@attrs.frozen
class PassFusionInfo:
    """What XLA:GPU's priority-fusion log decided of a blamed instruction
    (``fusion`` of :class:`PassBlameReply`): ``file`` the log's file name,
    ``name`` the instruction's name in the log, ``decisions`` one line of
    plain text each (names as ``%name``, control characters escaped: text
    from the dump, to be shown as text)."""

    file: str
    name: str
    decisions: list[str] = attrs.Factory(list)


@attrs.frozen
class PassBlameReply:
    """The ``hlo/passBlame`` result: the ``instruction`` (its name in the
    document), ``createdBy`` (its first appearance; null when there is no
    blame), ``changedBy`` (each later stage that changed it, in order),
    ``names`` (its names from its creation on), ``problems`` (files that could
    not be read on the way), ``message``: one line for the user (the blame
    in words, or why there is none) and ``fusion``: why it was or was not
    fused (:class:`PassFusionInfo`; null without a priority-fusion log that
    names it)."""

    instruction: str = ""
    created_by: PassPlace | None = None
    changed_by: list[PassPlace] = attrs.Factory(list)
    names: list[str] = attrs.Factory(list)
    problems: list[str] = attrs.Factory(list)
    message: str = ""
    fusion: PassFusionInfo | None = None


for _cls in (PassSnapshotInfo, PassRowInfo, PassHistoryReply, PassPlace, PassBlameReply,
             PassFusionInfo):
    _renames = {a.name: cattrs.gen.override(rename=_camel(a.name)) for a in attrs.fields(_cls)}
    _converter.register_structure_hook(_cls, cattrs.gen.make_dict_structure_fn(
        _cls, _converter, _cattrs_forbid_extra_keys=False, **_renames))
    _converter.register_unstructure_hook(_cls, cattrs.gen.make_dict_unstructure_fn(
        _cls, _converter, **_renames))


#: Server to client: a pass history the client asked for changed (docs/protocol.md,
#: "Pass history"; :class:`hlo_lsp.analysis.pass_history.ShownHistories`).
PASS_HISTORY_CHANGED = "hlo/passHistoryChanged"


@attrs.frozen
class PassHistoryChanged:
    """The ``hlo/passHistoryChanged`` params: ``directory``, the dump
    directory (an absolute path, as :class:`PassHistoryReply` ``directory``)
    whose files changed since the client was given the history of a module
    there (or told that one of its files has none)."""

    directory: str
