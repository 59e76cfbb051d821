"""``XLA_FLAGS`` as XLA reads it (xla/debug_options_flags.cc): words separated by
blanks, a flag given twice taking its last value, so the dump flags
(``--xla_dump_to``, ``--xla_dump_hlo_as_text``) are replaced, not added. Pure.
"""

from __future__ import annotations

import re


#: A word of XLA_FLAGS as XLA reads it (xla/parse_flags_from_env.cc): characters up
#: to white space, where a double-quoted part ("...", no escapes) may hold any but '"'.
_XLA_WORD = re.compile(r'(?:[^\s"]|"[^"]*"?)+')


def xla_flag_words(xla_flags: str | None) -> list[str]:
    """The flags of ``xla_flags`` as XLA splits them: at white space outside
    double quotes (single quotes, ``#``, ``$`` and backslashes are ordinary
    characters there, unlike in a shell), quotes kept as written."""
    return _XLA_WORD.findall(xla_flags or "")


def strip_dump_flags(xla_flags: str | None) -> str:
    """``xla_flags`` without ``--xla_dump_to`` and ``--xla_dump_hlo_as_text`` (the
    flags hlo-lsp sets itself); other flags keep their order and spelling
    (quoted values stay quoted)."""
    tokens = xla_flag_words(xla_flags)
    return " ".join(t for t in tokens
                    if not re.match(r"^--xla_dump_to(=|$)", t)
                    and not re.match(r"^--xla_dump_hlo_as_text(=|$)", t))


def set_dump_flags(xla_flags: str | None, dump_dir: str) -> str:
    """``xla_flags`` (the user's ``XLA_FLAGS``) with any ``--xla_dump_to`` replaced
    by ``--xla_dump_to=dump_dir`` and ``--xla_dump_hlo_as_text`` ensured.

    Other flags keep their order and spelling (quoted values stay quoted). A path
    with spaces is double-quoted, which XLA's flag parser accepts.
    """
    kept = strip_dump_flags(xla_flags)
    where = f'"{dump_dir}"' if re.search(r"\s", dump_dir) else dump_dir
    return " ".join(([kept] if kept else []) + [f"--xla_dump_to={where}",
                                                "--xla_dump_hlo_as_text"])
