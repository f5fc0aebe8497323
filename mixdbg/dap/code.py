"""Requests about where native code is: breakpointLocations (the lines of a source gdb can
break on), setInstructionBreakpoints (the Disassembly view's breakpoints), modules (the
libraries of the followed processes, and Python's imported modules) and loadedSources."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mixdbg.breakpoints import BreakSpec
from mixdbg.dap.breakpoints import delete_all
from mixdbg.dap.protocol import DapError
from mixdbg.dap.registry import request
from mixdbg.dap.wording import describe
from mixdbg.engine import code_map
from mixdbg.errors import MixdbgError
from mixdbg.session import Session

if TYPE_CHECKING:
    from mixdbg.dap.adapter import Adapter


def _session(adapter: Adapter) -> Session:
    if adapter.session is None or adapter.ended:
        raise DapError("no program is being debugged")
    return adapter.session


@request("breakpointLocations", supportsBreakpointLocationsRequest=True)
def breakpoint_locations(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """The lines from ``line`` to ``endLine`` of a C/C++ source that have code (in the
    libraries loaded so far); a Python file's lines are all offered as they are."""
    path = str((arguments.get("source") or {}).get("path") or "")
    if not path:
        raise DapError("breakpointLocations needs a source with a path")
    first = int(arguments["line"])
    last = int(arguments.get("endLine") or first)
    if path.endswith((".py", ".pyw")) or adapter.program is not None:
        return {"breakpoints": [{"line": line} for line in range(first, last + 1)]}
    lines = code_map.breakable_lines(_session(adapter).gdb, path, first, last)
    return {"breakpoints": [{"line": line} for line in lines]}


@request("setInstructionBreakpoints", supportsInstructionBreakpoints=True)
def set_instruction_breakpoints(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """Replace the breakpoints on instructions (``instructionReference`` + ``offset``), in
    every followed process that shares the address (fork children)."""
    wanted = arguments.get("breakpoints") or []
    session = _session(adapter)
    specs = []
    for raw in wanted:
        try:
            address = int(str(raw["instructionReference"]), 0) + int(raw.get("offset") or 0)
        except (KeyError, ValueError):
            raise DapError(f"instruction reference {raw.get('instructionReference')!r} is not an address") from None
        condition = raw.get("condition") or None
        specs.append(BreakSpec(text=f"*{address:#x}" + (f" if {condition}" if condition else ""),
                               location=f"*{address:#x}", condition=condition, is_line=False))
    delete_all(adapter, adapter.breakpoints.instructions)
    added, result = [], []
    for spec in specs:
        dap_id = adapter.breakpoints.new_id()
        try:
            placed = session.add_in_each_process(spec)
        except MixdbgError as err:
            result.append({"id": dap_id, "verified": False, "message": err.message})
            continue
        for breakpoint in placed:
            adapter.breakpoints.dap_id[breakpoint.number] = dap_id
            added.append((dap_id, breakpoint.number))
        described = describe(dap_id, placed[0].to_json())
        described["instructionReference"] = spec.location[1:]
        result.append(described)
    adapter.breakpoints.instructions = added
    return {"breakpoints": result}


@request("modules", supportsModulesRequest=True)
def modules(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """At a Python stop, the program's imported Python modules (as debugpy describes them:
    name, path, version); then the libraries of every followed process (each once: a fork
    child maps its parent's), with whether gdb has read their symbols and where their
    debug info is."""
    session = _session(adapter)
    found = [{"id": f"python:{module['name']}", **module} for module in session.inspect.python_modules() or []]
    seen: set[str] = set()
    for inferior in session.inspect.inferiors():
        for library in code_map.libraries(session.gdb, inferior):
            if not library.path or library.path in seen:
                continue
            seen.add(library.path)
            found.append({
                "id": library.path, "name": Path(library.path).name, "path": library.path,
                "symbolStatus": ("symbols read" if library.symbols_read else "symbols not read yet")
                + (f"; {library.debug_info}" if library.debug_info else ""),
                "addressRange": library.address_range})
    start = int(arguments.get("startModule") or 0)
    count = int(arguments.get("moduleCount") or 0) or len(found)
    return {"modules": found[start:start + count], "totalModules": len(found)}


@request("loadedSources", supportsLoadedSourcesRequest=True)
def loaded_sources(adapter: Adapter, arguments: dict[str, Any]) -> dict[str, Any]:
    """The C/C++ sources of the libraries whose debug info gdb has read, that exist here."""
    session = _session(adapter)
    return {"sources": [{"name": Path(path).name, "path": path} for path in code_map.sources(session.gdb)]}
