"""The tensor memory layout of the torch build a debuggee runs, discovered and cached.

``layout_probe.py`` runs once per torch build in the debuggee's own interpreter, importing
the debuggee's torch (its ``site-packages`` first on ``PYTHONPATH``), and measures every
offset the reader needs. The result is cached under ``$XDG_CACHE_HOME/mixdbg`` by the GNU
build id of ``libc10.so`` (where ``TensorImpl`` is defined) and is used only when the
probe's ``libc10.so`` and the debuggee's have the same build id: a layout measured on
another build is never applied.

Standard library only, Python 3.9-compatible: gdb's Python imports it too (the tensor
printers, sourced into a plain gdb, discover the layout themselves).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

from mixdbg import elfsections
from mixdbg.errors import MixdbgError
from mixdbg.pytorch.mapped import mapped_library
from mixdbg.rundir import keep_cached, read_cached

log = logging.getLogger(__name__)

PROBE = Path(__file__).with_name("layout_probe.py")
CACHE_VERSION = 3
PROBE_TIMEOUT = 120.0


class LayoutUnknown(MixdbgError):
    """The tensor layout of the debuggee's torch build could not be established."""


def c10_of_process(pid: int) -> tuple[Path, int] | None:
    """The debuggee's ``libc10.so`` and its load address, if torch is loaded."""
    return mapped_library(pid, "/libc10.so")


def _build_id(library: Path) -> str:
    try:
        with library.open("rb") as stream:
            build_id = elfsections.build_id(stream)
    except (OSError, elfsections.ElfFormatError) as err:
        raise LayoutUnknown(f"cannot read {library}: {err}") from err
    if not build_id:
        raise LayoutUnknown(f"{library} has no build id: a discovered layout could not be matched to it")
    return build_id


def run_probe(python: str, site_packages: Path) -> dict[str, Any]:
    """Run the probe with ``python``, importing torch from ``site_packages``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site_packages), env.get("PYTHONPATH")]))
    try:
        done = subprocess.run([python, "-W", "ignore", str(PROBE)], capture_output=True, text=True, env=env,
                              timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LayoutUnknown(f"the tensor layout probe did not run: {err}") from err
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise LayoutUnknown(f"the tensor layout probe failed: {reason}")
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def layout_for(library: Path, python: str) -> dict[str, Any]:
    """The layout for the torch whose ``libc10.so`` is ``library`` (cached by build id);
    ``python`` runs the probe when it is not cached yet."""
    build_id = _build_id(library)
    name = f"torch-layout-{build_id}-v{CACHE_VERSION}.json"
    cached = read_cached(name)
    if isinstance(cached, dict):
        return cached
    found = run_probe(python, library.parent.parent.parent)
    probed = _build_id(Path(str(found["c10"])))
    if probed != build_id:
        raise LayoutUnknown(f"the layout probe imported another torch ({found['c10']}, build {probed}) "
                            f"than the debuggee's ({library}, build {build_id})")
    found["build_id"] = build_id
    keep_cached(name, found)
    return found


def for_process(pid: int, python: str) -> dict[str, Any]:
    """The layout for the torch loaded in process ``pid``, with ``c10_base`` (its
    libc10.so's load address there) added for the vtable checks."""
    loaded = c10_of_process(pid)
    if loaded is None:
        raise LayoutUnknown("torch is not loaded in the debuggee")
    library, base = loaded
    return {**layout_for(library, python), "c10_base": base}
