"""Editing a file of the user's without ever damaging it.

Reading refuses what could not be written back safely (a symlink, not a regular file,
read-only, not UTF-8 text, empty, oversized, or content the caller cannot parse), so a
file mixdbg cannot handle is never touched. Writing backs the old file up first (never
overwriting an earlier backup), then replaces it atomically (temp file in the same
directory, fsync, rename, fsync of the directory), keeping its mode and BOM; a file that
changed on disk since it was read is not overwritten.
"""

from __future__ import annotations

import glob
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mixdbg.errors import CannotWriteError, DataError

MAX_FILE_BYTES = 1 << 20
BACKUP_SUFFIX = ".mixdbg.bak"
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class UserFile:
    """A file as read for editing: its text (None if it does not exist), BOM, mode, bytes."""

    path: Path
    text: str | None
    bom: bool = False
    mode: int | None = None
    raw: bytes = b""


def read_text(path: Path) -> tuple[str, bool]:
    """The file's text and whether it starts with a BOM; DataError if it is not text."""
    return _decode(_read_bytes(path), path)


def read_for_edit(path: Path, check: Callable[[str, Path], object]) -> UserFile:
    """Read a file we may rewrite, refusing anything we could not write back safely.

    ``check(text, path)`` must raise (a DataError) when the content cannot be parsed."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return UserFile(path, None)
    except OSError as err:
        raise CannotWriteError(f"cannot inspect {path}: {err.strerror}") from err
    if stat.S_ISLNK(info.st_mode):
        raise CannotWriteError(f"{path} is a symbolic link (to {os.readlink(path)}); mixdbg does not "
                               "edit through links",
                               hint="edit the target yourself, or replace the link by a copy")
    if not stat.S_ISREG(info.st_mode):
        raise CannotWriteError(f"{path} is not a regular file")
    # Root ignores permission bits, so check them as well as os.access.
    if not info.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise CannotWriteError(f"{path} is read-only; it was left untouched")
    raw = _read_bytes(path)
    text, bom = _decode(raw, path)
    check(text, path)
    return UserFile(path, text, bom, stat.S_IMODE(info.st_mode), raw)


def commit(file: UserFile, text: str, user_content: Callable[[str], str]) -> Path | None:
    """Back up the old file (if any), then write ``text`` atomically; return the backup.

    ``user_content(text)`` is the part of a text that is the user's (not ours): a new backup
    is skipped when the newest one already holds the same, so that rewriting only our own
    part on every run does not pile up copies."""
    path = file.path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CannotWriteError(f"cannot create {path.parent}: {err.strerror}") from err
    if (path.read_bytes() != file.raw) if file.text is not None else os.path.lexists(path):
        raise CannotWriteError(f"{path} changed while mixdbg was editing it; nothing was written")
    backup = _backup(file, user_content) if file.text is not None else None
    data = (_BOM if file.bom else b"") + text.encode("utf-8")
    _write_atomic(path, data, file.mode if file.mode is not None else 0o666 & ~_umask())
    return backup


def _read_bytes(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise DataError(f"cannot read {path}: {err.strerror}") from err
    if len(data) > MAX_FILE_BYTES:
        raise DataError(f"{path} is larger than {MAX_FILE_BYTES // 1024} KiB; not a file mixdbg will edit")
    return data


def _decode(data: bytes, path: Path) -> tuple[str, bool]:
    bom = data.startswith(_BOM)
    try:
        text = data[len(_BOM) if bom else 0:].decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path} is not UTF-8 text (binary?); it was left untouched") from err
    if not text.strip():
        raise DataError(f"{path} is empty; it was left untouched",
                        hint="delete it and run 'mixdbg setup' to create a fresh one")
    return text, bom


def _backup(file: UserFile, user_content: Callable[[str], str]) -> Path:
    """The backup holding the user's content: the newest one if it already does, else a new one."""
    path = file.path
    existing = sorted(path.parent.glob(glob.escape(path.name + BACKUP_SUFFIX) + "*"), key=_backup_index)
    newest = existing[-1] if existing and _backup_index(existing[-1]) >= 0 else None
    if newest is not None and file.text is not None and _holds(newest, file.text, user_content):
        return newest
    return _write_backup(path, file.raw)


def _holds(backup: Path, text: str, user_content: Callable[[str], str]) -> bool:
    """True when ``backup`` equals ``text`` in the user's part (unreadable: False)."""
    try:
        previous, _ = read_text(backup)
        return user_content(previous) == user_content(text)
    except DataError:
        return False


def _backup_index(backup: Path) -> int:
    """0 for ``NAME.mixdbg.bak``, N for ``.bak.N``, -1 for other names."""
    suffix = backup.name.rpartition(BACKUP_SUFFIX)[2]
    if not suffix:
        return 0
    return int(suffix[1:]) if suffix[:1] == "." and suffix[1:].isdigit() else -1


def _write_backup(path: Path, data: bytes) -> Path:
    """Write ``data`` to the first free ``NAME.mixdbg.bak[.N]`` (never overwriting one)."""
    for index in range(1000):
        candidate = path.with_name(path.name + BACKUP_SUFFIX + (f".{index}" if index else ""))
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        except OSError as err:
            raise CannotWriteError(f"cannot write the backup {candidate}: {err.strerror}; "
                                   "nothing changed") from err
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return candidate
    raise CannotWriteError(f"too many backups next to {path}; remove old {path.name}{BACKUP_SUFFIX}.* files")


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Write a temp file in the same directory, fsync it, then rename it over ``path``."""
    try:
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".mixdbg.tmp")
    except OSError as err:
        raise CannotWriteError(f"cannot write in {path.parent}: {err.strerror}; nothing changed") from err
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as err:
        raise CannotWriteError(f"cannot write {path}: {err.strerror}; the old file is unchanged") from err
    finally:
        if tmp.exists():
            tmp.unlink()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
