"""The one place that touches lark's (and lark-cython's) internals.

The parser (:mod:`hlo_lsp.syntax.parser`) uses lark's public API: ``Lark``,
``Transformer``, ``Token``, the exceptions. Three speed-ups need more:

- :func:`streamline`: identity-hashed rules and plain-``str`` rule names in the
  LALR parser's callback table (``Lark.parser.parser.parser_conf.callbacks``,
  lark/parsers/lalr_parser.py ``LALR_Parser``; ``lark.grammar.Rule``).
- :func:`build_scanners`: the regular expression of every state of the
  contextual lexer (``Lark.parser.lexer.lexers``, ``BasicLexer.scanner``,
  lark/lexer.py ``ContextualLexer``), built once instead of at first use.
- :func:`token_types` / :data:`CYTHON_PLUGINS`: lark-cython's parser plugins
  (its documented ``Lark(..., _plugins=lark_cython.plugins)``) and its Token
  class (``lark_cython.lark_cython.Token``).

Each is guarded by a version check (:data:`LARK_VERSIONS`, verified on lark
1.3.1 and lark-cython 0.0.17) and by a check of the objects' layout: outside
the range, or when the layout is not the expected one, the speed-up is skipped
and logged once; parsing stays correct, only slower. Nothing here raises.
"""

from __future__ import annotations

import logging

import lark
from lark import Lark, Token
from lark.grammar import Rule

from hlo_lsp.syntax.versions import in_range

try:  # lark's own Cython-compiled LALR parser and lexer: same grammar, ~2x faster
    import lark_cython
except ImportError:  # pragma: no cover - optional accelerator
    lark_cython = None

log = logging.getLogger("hlo_lsp.syntax.lark_compat")

#: lark versions ``[low, high)`` whose internals the speed-ups rely on: lark 1.x
#: (checked on 1.3.1; the layout is verified at run time as well).
LARK_VERSIONS = ((1, 1), (2, 0))


def supported(version: str | None = None) -> bool:
    """Whether lark ``version`` (default: the installed one) is in
    :data:`LARK_VERSIONS`."""
    return in_range(version or lark.__version__, LARK_VERSIONS)


_warned: set[str] = set()


def _skip(what: str, why: str) -> None:
    if what not in _warned:
        _warned.add(what)
        log.warning("lark %s: %s skipped (%s); parsing is correct but slower",
                    lark.__version__, what, why)


class _IdentityRule(Rule):
    """A grammar rule that hashes and compares by identity, in C."""

    __slots__ = ()
    __hash__ = object.__hash__
    __eq__ = object.__eq__


def streamline(parser: Lark) -> bool:
    """Spare the LALR loop two Python-level costs per reduction that come from
    lark's grammar objects, not from the grammar: each reduction looks up the
    rule's callback in a dict keyed by rules (``Rule.__hash__``), compares the
    rule with the end state (``Rule.__eq__``), and finds the next state by the
    rule's name, a lark ``Token`` whose ``__eq__`` is Python code. Every rule of
    a parser is a distinct object, so identity hashing finds the same callbacks,
    and a plain ``str`` name finds the same states; the tables are otherwise
    untouched. Returns whether it was done (see the module docstring)."""
    if not supported():
        _skip("streamline", f"not in the versions {LARK_VERSIONS} it was made for")
        return False
    try:
        callbacks = parser.parser.parser.parser_conf.callbacks
    except AttributeError:
        _skip("streamline", "no parser.parser.parser_conf.callbacks")
        return False
    if not isinstance(callbacks, dict) or not all(type(rule) is Rule for rule in callbacks):
        _skip("streamline", "the callbacks are not keyed by lark.grammar.Rule")
        return False
    items = list(callbacks.items())
    callbacks.clear()  # the same dict object is held by the LALR parser
    for rule, callback in items:
        rule.__class__ = _IdentityRule
        rule.origin.name = str(rule.origin.name)
        callbacks[rule] = callback
    return True


def build_scanners(parser: Lark) -> bool:
    """Build the regular expression of every lexer state of ``parser`` (a
    contextual lexer compiles a state's scanner when a parse first reaches it).
    Returns whether the lexer states were found."""
    if not supported():
        _skip("lexer warm-up", f"not in the versions {LARK_VERSIONS} it was made for")
        return False
    lexers = getattr(getattr(getattr(parser, "parser", None), "lexer", None), "lexers", None)
    if not isinstance(lexers, dict):
        _skip("lexer warm-up", "no parser.lexer.lexers")
        return False
    for lexer in lexers.values():
        getattr(lexer, "scanner", None)  # a property that builds the state's scanner
    return True


#: ``_plugins`` for ``Lark(...)`` selecting lark-cython's parser, None without it.
CYTHON_PLUGINS = getattr(lark_cython, "plugins", None) if lark_cython is not None else None


def token_types() -> tuple[type, ...]:
    """The classes of the tokens a transformer may receive: lark's ``Token`` and,
    with lark-cython, its own Token class."""
    cython_token = getattr(getattr(lark_cython, "lark_cython", None), "Token", None)
    return (Token,) if cython_token is None else (Token, cython_token)


__all__ = ["CYTHON_PLUGINS", "LARK_VERSIONS", "build_scanners", "streamline", "supported",
           "token_types"]
