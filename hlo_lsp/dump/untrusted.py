"""The one way to read a file of a dump directory (everything in one is
untrusted input, docs/architecture.md).

A dump directory can hold anything a name can point at: a FIFO named like a
report blocks a plain ``open`` for good, a link to ``/dev/zero`` named like a
dump reads until memory runs out (its ``st_size`` is 0), a regular file may be
swapped for either between a check and the read. So a file is read only when

- it is a regular file once links are resolved (``os.stat``), and the descriptor
  opened is one too (``os.fstat``: the file may have been replaced in between);
- it is opened with ``O_NONBLOCK`` (a FIFO swapped in cannot block the open or
  the read) and ``O_NOCTTY`` (a terminal never becomes ours);
- at most ``limit`` bytes are read: ``limit + 1`` are asked for and the file is
  refused when they come, whatever ``st_size`` said.

Every refusal and every ``OSError`` is one :class:`UntrustedFileError` whose
``str`` is one line naming the file and the reason (``/d/x.txt: not a regular
file (a FIFO)``, ``/d/x.txt: larger than 64 MiB``). These functions block on
the disk: callers run them off the event loop (a thread or a worker process).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import BinaryIO, Iterator

#: The most bytes of HLO text or of an XLA report read whole (``hlo-lsp``
#: commands, files the editor has not opened, reports beside a dump).
#: XLA's dumps of the largest models seen are a few hundred MB; the workspace
#: index reads larger files line by line (:func:`open_regular`).
MAX_TEXT_BYTES = 512 * 1024 * 1024

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"))


class UntrustedFileError(OSError):
    """A file that was not read: ``path`` and a one-line ``reason`` (``not a
    regular file (a FIFO)``, ``larger than 64 MiB``, ``No such file or
    directory``...). ``errno`` is the operating system's error number when the
    system refused (``errno.ENOENT`` for a missing file), else None. An OSError,
    so code that handles unreadable files handles these too; ``str()`` is
    ``"<path>: <reason>"``."""

    def __init__(self, path: str | os.PathLike, reason: str, code: int | None = None) -> None:
        super().__init__(reason)
        self.path = os.fspath(path)
        self.reason = reason
        self.errno = code
        self.strerror = reason
        self.filename = self.path

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def __reduce__(self):  # picklable across the index's worker processes
        return (UntrustedFileError, (self.path, self.reason, self.errno))

    @property
    def too_large(self) -> bool:
        """Whether the file was refused for being longer than the limit."""
        return self.errno is None and self.reason.startswith("larger than")

    @property
    def missing(self) -> bool:
        """Whether the file does not exist (or a directory on its path)."""
        return self.errno in (errno.ENOENT, errno.ENOTDIR)


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _refuse_mode(path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise UntrustedFileError(path, f"not a regular file ({_kind(mode)})")


def _size_words(limit: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def _os_error(path, exc: OSError) -> UntrustedFileError:
    if isinstance(exc, UntrustedFileError):
        return exc
    return UntrustedFileError(path, exc.strerror or str(exc), exc.errno)


def special_file_problem(path: str | os.PathLike) -> str:
    """Why the readers refuse ``path`` when it exists but is not a regular file
    once links are resolved (``not a regular file (a FIFO)``); "" for a regular
    file and for one that cannot be looked at (missing, no permission). One
    ``stat``, nothing opened."""
    try:
        _refuse_mode(path, os.stat(path).st_mode)
    except UntrustedFileError as exc:
        return exc.reason
    except OSError:
        return ""
    return ""


@contextlib.contextmanager
def open_regular(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """The regular file ``path`` (links resolved) opened for binary reading,
    without a size limit: for readers that stream (the workspace index reads
    files above its size limit line by line). Checked with ``stat`` before the
    open and ``fstat`` after; opened ``O_RDONLY | O_NONBLOCK | O_NOCTTY |
    O_CLOEXEC``. Raises :class:`UntrustedFileError`."""
    try:
        _refuse_mode(path, os.stat(path).st_mode)
        flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
        fd = os.open(path, flags)
    except OSError as exc:
        raise _os_error(path, exc) from None
    try:
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        try:
            _refuse_mode(path, os.fstat(fd).st_mode)
        except OSError as exc:
            raise _os_error(path, exc) from None
        yield f


def read_bytes(path: str | os.PathLike, limit: int = MAX_TEXT_BYTES,
               whole: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`), at most
    ``limit``. With ``whole`` (the default) a file longer than ``limit`` is
    refused ("larger than 64 MiB"); without, its first ``limit`` bytes are
    returned (enough to look at a first line). Raises :class:`UntrustedFileError`."""
    with open_regular(path) as f:
        try:
            data = f.read(limit + 1 if whole else limit)
        except OSError as exc:
            raise _os_error(path, exc) from None
    if whole and len(data) > limit:
        raise UntrustedFileError(path, f"larger than {_size_words(limit)}")
    return data


def read_text(path: str | os.PathLike, limit: int = MAX_TEXT_BYTES, errors: str = "replace",
              whole: bool = True) -> str:
    """:func:`read_bytes` decoded as UTF-8 with ``errors`` ("replace": undecodable
    bytes become U+FFFD, as the editors show them; "strict": a file that is not
    UTF-8 is refused with the offset of its first bad byte). With ``whole=False``
    a multi-byte character cut at ``limit`` is dropped. Raises
    :class:`UntrustedFileError`."""
    data = read_bytes(path, limit, whole)
    if not whole:
        data = data[:len(data) - _cut_tail(data)]
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(path, f"not UTF-8 text (byte {exc.start})") from None


def _cut_tail(data: bytes) -> int:
    """How many bytes at the end of ``data`` start a UTF-8 character cut short."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else \
                4 if b >> 3 == 0b11110 else 1
            return back if need > back else 0
    return 0


__all__ = ["MAX_TEXT_BYTES", "UntrustedFileError", "open_regular", "read_bytes",
           "read_text", "special_file_problem"]
