"""mixdbg's per-user directories: the private one that holds its sockets (live-session
control, the Python agents'), created 0700 and refused when anyone else could have made
it; and its cache (facts about files, kept by their identity)."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from mixdbg.errors import UnavailableError

log = logging.getLogger(__name__)


def runtime_dir(create: bool = False) -> Path:
    """The per-user directory holding session sockets, checked to be private to this user.

    Refused (not repaired) when owned by another uid or open to group/others: under /tmp
    anyone could have created it first."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    uid = os.geteuid()
    path = Path(base) / "mixdbg" if base and os.path.isabs(base) else Path(f"/tmp/mixdbg-{uid}")
    if create:
        try:
            path.mkdir(mode=0o700)
            os.chmod(path, 0o700)  # mkdir's mode is masked by the umask; make it exact
        except FileExistsError:
            pass
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    if not stat.S_ISDIR(info.st_mode):
        raise UnavailableError(f"{path} is not a directory; refusing to use it for session sockets")
    if info.st_uid != uid or stat.S_IMODE(info.st_mode) & 0o077:
        raise UnavailableError(
            f"{path} is owned by uid {info.st_uid} with mode {stat.S_IMODE(info.st_mode):o}; "
            "refusing to use it for session sockets",
            hint="it must be yours and mode 700; remove it if you do not know who made it")
    return path


def cache_directory() -> Path:
    """mixdbg's cache: ``$XDG_CACHE_HOME/mixdbg`` (default ``~/.cache/mixdbg``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mixdbg"


def read_cached(name: str) -> Any:
    """The JSON document kept in mixdbg's cache as ``name``, or None (absent, unreadable)."""
    path = cache_directory() / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        if path.exists():
            log.info("ignoring the unreadable cache %s: %s", path, err)
        return None


def keep_cached(name: str, document: Any) -> None:
    """Keep ``document`` in mixdbg's cache as ``name`` (written whole, then renamed, so a
    concurrent session reads the old or the new one); a failure only costs the next run."""
    path = cache_directory() / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(document))
        partial.replace(path)
    except OSError as err:
        log.info("cannot keep %s in mixdbg's cache: %s", name, err)
