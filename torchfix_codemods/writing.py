"""Every file this tool writes goes through here: complete new bytes or the old ones, never half.

One implementation of the write-then-rename dance for sources (``fix``), the
check cache and the project index's summary cache, so that each keeps the same
guarantees: the new bytes go to a temporary file in the same directory, are
flushed, get the old file's mode (and owner and group, where the process may set
them), and replace the old file by a rename, which readers see happen at once.
On Linux the new bytes are written to an unnamed file (``O_TMPFILE``) that gets a
name only once complete and synced, so a SIGKILL while writing or syncing (the
slow part) leaves nothing behind; elsewhere a named temporary file. On any
failure the temporary file is removed and the old file is untouched.

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
    temporary = _complete_temporary(directory, data, like, durable)
    try:
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _complete_temporary(directory: str, data: bytes, like: os.stat_result | None,
                        durable: bool) -> str:
    """The name of a file in ``directory`` holding ``data`` (synced when ``durable``), with
    ``like``'s mode and owner: unnamed until complete where the system allows it."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag and os.path.isdir("/proc/self/fd"):
        try:
            fd = os.open(directory, flag | os.O_WRONLY, 0o600)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                _fill(fd, data, like, durable)
                named = _link_unnamed(fd, directory)
                if named is not None:
                    return named
            finally:
                os.close(fd)
    fd, temporary = tempfile.mkstemp(prefix=_PREFIX, suffix=".tmp", dir=directory)
    try:
        _fill(fd, data, like, durable)
    except BaseException:
        os.close(fd)
        os.unlink(temporary)
        raise
    os.close(fd)
    return temporary


def _fill(fd: int, data: bytes, like: os.stat_result | None, durable: bool) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if durable:
        os.fsync(fd)
    if like is not None:
        _keep_owner(fd, like)
        os.fchmod(fd, stat.S_IMODE(like.st_mode))


def _link_unnamed(fd: int, directory: str) -> str | None:
    """Give the ``O_TMPFILE`` file ``fd`` a temporary name in ``directory`` (None: cannot).

    ``linkat`` with ``AT_SYMLINK_FOLLOW`` on ``/proc/self/fd/N`` (open(2)'s recipe; plain
    ``link`` would link the /proc entry itself and fail across devices)."""
    import secrets

    proc = os.open("/proc/self/fd", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for _ in range(16):
            name = os.path.join(directory, f"{_PREFIX}{secrets.token_hex(6)}.tmp")
            try:
                os.link(str(fd), name, src_dir_fd=proc, follow_symlinks=True)
            except FileExistsError:
                continue
            except OSError:
                return None
            return name
        return None
    finally:
        os.close(proc)


def _keep_owner(fd: int, like: os.stat_result) -> None:
    """Give the new file the old one's owner and group, as far as this process may."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) == (like.st_uid, like.st_gid):
        return
    for uid, gid in ((like.st_uid, like.st_gid), (-1, like.st_gid)):
        try:
            os.fchown(fd, uid, gid)
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
