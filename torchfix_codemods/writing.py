"""Every file this tool writes goes through here: complete new bytes or the old ones, never half.

One implementation of the write-then-rename dance for sources (``fix``), the
check cache and the project index's summary cache, so that each keeps the same
guarantees: the new bytes go to a temporary file in the same directory, are
flushed, get the old file's mode (and owner and group, where the process may set
them), and replace the old file by a rename, which readers see happen at once.
On any failure (a full disk, a kill) the temporary file is removed and the old
file is untouched.

What a rename cannot do, :func:`write_source` refuses to do rather than do
wrong:

* a **symbolic link** is written through: the rename replaces the file it points
  at, so the link stays a link and every name of the target sees the fix;
* a **hard-linked** file (more than one name) is not written. A rename would give
  the fixed bytes to this name alone and leave the others with the old text (the
  "split" nobody notices), and writing in place cannot promise complete-or-original
  bytes: a kill or a full disk in the middle of a truncate-and-write leaves a
  half-written file. The message says how to proceed;
* a **read-only** file (no write bit for anyone) is not written, nor one this user
  may not write: a rename would bypass the permission the file's owner set. An
  editor saving in place would be refused too.
"""

from __future__ import annotations

import os
import stat
import tempfile

_PREFIX = ".torchfix-"


def replace_file(path: str, data: bytes, *, like: os.stat_result | None = None,
                 durable: bool = True) -> None:
    """Replace (or create) ``path`` with ``data`` atomically; raises :class:`OSError`.

    ``like``: the file's status before, whose mode, owner and group the new file
    gets (owner and group only where this process may set them: root may, a user
    may set a group it belongs to). ``durable`` flushes the bytes to disk before the
    rename (sources); caches skip it, a lost cache only costs a miss.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=_PREFIX, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if like is not None:
            _keep_owner(temporary, like)
            os.chmod(temporary, stat.S_IMODE(like.st_mode))
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _keep_owner(temporary: str, like: os.stat_result) -> None:
    """Give the new file the old one's owner and group, as far as this process may."""
    mine = os.stat(temporary)
    if (mine.st_uid, mine.st_gid) == (like.st_uid, like.st_gid):
        return
    for uid, gid in ((like.st_uid, like.st_gid), (-1, like.st_gid)):
        try:
            os.chown(temporary, uid, gid)
            return
        except OSError:  # not permitted: keep what the process can
            continue


def write_source(path: str, data: bytes, expected: bytes) -> str | None:
    """Write a fixed source over ``path``; the reason it was not written, else None.

    ``expected`` is the bytes the fix was computed from: when the file changed
    since (an editor saved it meanwhile), nothing is written and nothing is lost.
    """
    try:
        target = os.path.realpath(path)  # a symlink is written through to its target
        status = os.stat(target)
        refusal = _refusal(target, status)
        if refusal is not None:
            return refusal
        with open(target, "rb") as handle:
            if handle.read() != expected:
                return "file changed on disk while it was being fixed; not written"
        replace_file(target, data, like=status)
    except OSError as error:
        return f"cannot write: {error.strerror or error}"
    return None


def _refusal(target: str, status: os.stat_result) -> str | None:
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file; not written"
    if status.st_nlink > 1:
        return (f"not written: the file has {status.st_nlink} hard links, and rewriting it "
                "would give the fix to this name only (copy it to a file of its own to fix it)")
    if not status.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "not written: the file is read-only (make it writable to fix it)"
    if not os.access(target, os.W_OK):
        return "not written: no permission to write the file"
    return None
