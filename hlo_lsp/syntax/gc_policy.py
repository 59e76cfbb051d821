"""The garbage-collector policy of a parse: the cyclic collector paused while a
parse builds its model (:func:`paused_gc`). A process-wide switch flipped from
worker threads: it belongs to whoever owns the threads (the analysis layer,
issue 42), and lives here, apart from the parser, until that layer exists.
Its users: :func:`hlo_lsp.syntax.parser.parse` and
:func:`hlo_lsp.analysis.documents.analyze`; the rest of the scheme (freezing,
the idle collection, malloc arenas) is :mod:`hlo_lsp.analysis.collector`.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager


_gc_lock = threading.Lock()
_gc_pauses = 0          # parses running with the collector paused (all threads)
_gc_resume = False      # whether the collector ran before the first of them


@contextmanager
def paused_gc():
    """Pause Python's cyclic garbage collector while a parse builds its model.

    A parse allocates hundreds of thousands of objects that all outlive it; the
    collector would traverse them again and again as they accumulate (a quarter
    of the time of a 4 MB parse) and find nothing to free. Pauses nest and may
    overlap across threads: the collector runs again when the last one ends, if
    it was running when the first began.
    """
    global _gc_pauses, _gc_resume
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_resume:
                gc.enable()
