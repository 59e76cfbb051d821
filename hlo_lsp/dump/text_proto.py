"""A small reader of protobuf text format (``TextFormat``, what XLA writes as
``*.txt``/``*.pbtxt`` beside a dump), for the few messages hlo-lsp reads
without the protobuf library: fields by name, no descriptors.

``parse(text)`` gives a message as a list of ``(field, value)`` pairs in file
order: a value is a ``str`` (a string literal, its C escapes decoded, or an
enum/identifier as written), a ``float``/``int`` (a number), or a nested
message (again such a list). Repeated fields are repeated pairs. The text is
untrusted (it comes from a dump directory): nesting is limited
(:data:`MAX_DEPTH`), the number of values too (:data:`MAX_VALUES`), and any
text the grammar does not allow raises :class:`TextProtoError` with the line of
the problem; nothing in it is executed or looked up.

The grammar is the subset of protobuf's text format
(https://protobuf.dev/reference/protobuf/textformat-spec/) XLA's
``tsl::protobuf::TextFormat::PrintToString`` writes: ``name: scalar``,
``name { ... }`` (also ``name: { ... }`` and ``< >``), ``#`` comments, adjacent
string literals concatenated. Lists (``[a, b]``), extensions and ``Any``
expansions are refused.
"""

from __future__ import annotations

import re
from typing import Union

#: Nested messages deeper than this are refused.
MAX_DEPTH = 64
#: At most this many fields in a whole text (each nested message counts as one).
MAX_VALUES = 2_000_000

Value = Union[str, int, float, "Message"]
Message = list[tuple[str, Value]]

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+|\#[^\n]*)
  | (?P<newline>\n)
  | (?P<number>-(?:[Ii][Nn][Ff](?:[Ii][Nn][Ii][Tt][Yy])?|[Nn][Aa][Nn])\b
      |[-+]?(?:0[xX][0-9A-Fa-f]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<punct>[{}<>:;,])
""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
            "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.DOTALL)


class TextProtoError(ValueError):
    """Text that is not protobuf text format as this reader knows it; ``str()``
    is one line: ``line N: what``."""


def _unescape(body: str, line: int) -> str:
    """A string literal's body with its C escapes decoded; the bytes are read as
    UTF-8 (undecodable ones become U+FFFD), as protobuf's ``string`` fields."""
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode("utf-8")
        octal, hexa, char = m.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hexa is not None:
            out.append(int(hexa, 16))
        elif char in _ESCAPES:
            out += _ESCAPES[char].encode()
        else:
            raise TextProtoError(f"line {line}: unknown escape \\{char}")
        pos = m.end()
    out += body[pos:].encode("utf-8")
    return out.decode("utf-8", "replace")


def _number(token: str) -> int | float:
    if token[1:].isalpha():  # -inf, -nan
        return float(token)
    t = token.rstrip("fF") if not token.lower().startswith(("0x", "-0x", "+0x")) else token
    try:
        return int(t, 0)
    except ValueError:
        return float(t)


def parse(text: str) -> Message:
    """The message written in ``text`` (see the module docstring). Raises
    :class:`TextProtoError` (``line N: ...``) for text outside the grammar, a
    nesting deeper than :data:`MAX_DEPTH` or more than :data:`MAX_VALUES`
    fields."""
    stack: list[Message] = [[]]
    closers: list[str] = []
    line = 1
    pos = 0
    values = 0
    field: str | None = None  # a name read, waiting for its value
    colon = False
    end = len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise TextProtoError(f"line {line}: unexpected {text[pos]!r}")
        pos = m.end()
        kind = m.lastgroup
        token = m.group()
        if kind == "space":
            continue
        if kind == "newline":
            line += 1
            continue
        if field is None:
            if kind == "name":
                field = token
                colon = False
                continue
            if kind == "punct" and closers and token == closers[-1]:
                closers.pop()
                stack.pop()
                continue
            if kind == "punct" and token in ";,":
                continue
            raise TextProtoError(f"line {line}: a field name expected, not {token[:20]!r}")
        if kind == "punct" and token == ":" and not colon:
            colon = True
            continue
        if kind == "punct" and token in "{<":
            if len(closers) >= MAX_DEPTH:
                raise TextProtoError(f"line {line}: messages nested deeper than {MAX_DEPTH}")
            child: Message = []
            stack[-1].append((field, child))
            stack.append(child)
            closers.append("}" if token == "{" else ">")
        elif not colon:
            raise TextProtoError(f"line {line}: ':' expected after {field!r}")
        elif kind == "string":
            parts = [_unescape(token[1:-1], line)]
            while True:  # adjacent literals are one string
                nxt = _TOKEN.match(text, pos)
                while nxt is not None and nxt.lastgroup in ("space", "newline"):
                    line += nxt.lastgroup == "newline"
                    pos = nxt.end()
                    nxt = _TOKEN.match(text, pos)
                if nxt is None or nxt.lastgroup != "string":
                    break
                parts.append(_unescape(nxt.group()[1:-1], line))
                pos = nxt.end()
            stack[-1].append((field, "".join(parts)))
        elif kind == "number":
            stack[-1].append((field, _number(token)))
        elif kind == "name":
            stack[-1].append((field, token))
        else:
            raise TextProtoError(f"line {line}: a value expected for {field!r}, "
                                 f"not {token[:20]!r}")
        values += 1
        if values > MAX_VALUES:
            raise TextProtoError(f"line {line}: more than {MAX_VALUES} fields")
        field = None
    if field is not None:
        raise TextProtoError(f"line {line}: the text ends after {field!r}")
    if closers:
        raise TextProtoError(f"line {line}: the text ends inside a message")
    return stack[0]


def fields(message: Message, name: str) -> list[Value]:
    """The values of the field ``name`` of ``message``, in order."""
    return [v for k, v in message if k == name]


def first(message: Message, name: str, default: Value | None = None) -> Value | None:
    """The first value of the field ``name`` of ``message``, else ``default``."""
    for k, v in message:
        if k == name:
            return v
    return default


__all__ = ["MAX_DEPTH", "MAX_VALUES", "Message", "TextProtoError", "Value", "fields", "first",
           "parse"]
