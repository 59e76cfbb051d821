"""What every request handler shares: the guard that keeps the server alive.

:func:`guarded` wraps a handler so that

- an internal error is logged and answered with the handler's empty result
  (never an error response, never a crash);
- a request about a document that has changed since it arrived, or that read
  an analysis of a document that has changed since (see
  :meth:`hlo_lsp.analysis.documents.DocumentStore.lease`), is answered with
  ``ContentModified`` (-32801), as LSP 3.17 provides, instead of positions
  computed on another text;
- cancellation (``$/cancelRequest``) propagates.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, Callable

from pygls.exceptions import JsonRpcContentModified

from hlo_lsp.analysis.host import ContentModified

log = logging.getLogger("hlo_lsp")


def guarded(default: Any = None) -> Callable:
    """Decorate ``async def handler(ls, *params)``; see the module docstring.
    ``default`` is the answer after an internal error (copied for lists)."""
    def wrap(fn):
        @functools.wraps(fn)
        async def run(ls, *args):
            doc = getattr(args[0], "text_document", None) if args else None
            token = ls.store.track_reads(getattr(doc, "uri", None))
            try:
                result = await fn(ls, *args)
                ls.store.check_current()
                return result
            except asyncio.CancelledError:
                raise
            except ContentModified as exc:
                raise JsonRpcContentModified(str(exc)) from None
            except Exception:  # noqa: BLE001 - never crash, never an error response
                log.exception("%s failed", fn.__name__)
                return list(default) if isinstance(default, list) else default
            finally:
                ls.store.untrack(token)
        return run
    return wrap
