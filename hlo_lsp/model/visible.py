"""Text from a dump shown as text: the one answer to "how is a string from an
untrusted file written where a person reads it" (a terminal, a confirmation).

Python's ``str.isprintable`` decides what is shown as it is; anything else
(C0 and C1 control characters such as ESC, DEL, the line and paragraph
separators, the invisible format characters among which the bidirectional
overrides and isolates U+202A-U+202E and U+2066-U+2069, unassigned and private
code points) is written as the escape Python's ``repr`` uses for it (``\\n``,
``\\t``, ``\\x1b``, ``\\u202e``, ``\\U000e0001``), which is how ``hlo-lsp check``
has always quoted names in its messages. Standard library only.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every character that is not printable (``str.isprintable``)
    written as its Python escape (``\\x1b``, ``\\n``, ``\\u202e``), except the
    characters of ``keep`` (e.g. ``"\\n\\t"`` for a whole multi-line output).
    Printable text comes back unchanged (the same object), so applying it twice
    changes nothing. Backslashes already in ``text`` are left as they are."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch in keep:
            out.append(ch)
        else:
            out.append(_escape(ch))
    return "".join(out)


__all__ = ["visible"]
