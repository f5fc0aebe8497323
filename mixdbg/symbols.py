"""Finding functions by name among the libraries gdb has loaded.

Used for ``--regex`` breakpoints and for "did you mean" when a name matches nothing. Every
search is one capped ``-symbol-info-functions`` in gdb's own C code: a huge library
(libtorch: 600k symbols) is never walked symbol by symbol in Python.
"""

from __future__ import annotations

import difflib
import re

from mixdbg.gdbmi import SLOW_COMMAND_TIMEOUT, GdbMi, mi_quote

#: Loaded function names that "did you mean" ranks (gdb's search stops collecting there).
SUGGESTION_POOL = 1000
_CLONE_SUFFIX = re.compile(r"(?: \[clone [^\]]*\])+$")


def function_names(gdb: GdbMi, pattern: str, limit: int) -> tuple[list[str], bool]:
    """Distinct breakable names of loaded functions matching gdb regex ``pattern`` (the
    regex of 'info functions'), and whether gdb stopped at ``limit`` symbols.

    The limit keeps a huge library (libtorch: 600k symbols) to one scan in gdb's C code,
    never a Python loop over all of its symbols. The symbols of every loaded library are
    read first: gdb reads only those breakpoints need as libraries load."""
    gdb.console("sharedlibrary", SLOW_COMMAND_TIMEOUT)  # every loaded library (see mixdbg.solibs)
    result = gdb.command(f"-symbol-info-functions --include-nondebug --name {mi_quote(pattern)} "
                                 f"--max-results {limit}", SLOW_COMMAND_TIMEOUT)
    symbols = result.get("symbols") or {}
    raw = [s["name"] for f in symbols.get("debug", []) for s in f.get("symbols", [])]
    raw += [s["name"] for s in symbols.get("nondebug", [])]
    names = dict.fromkeys(name for name in map(breakable_name, raw) if name)
    return list(names), len(raw) >= limit


def breakable_name(symbol: str) -> str | None:
    """The qualified name to break on for a function symbol as gdb lists it, or None.

    gdb lists C++ minimal symbols with parameters (``ns::f(int) const``) and compiler clones
    with a suffix (``ns::f(int) [clone .cold]``): both are cut off. PLT stubs, lambdas
    (``f()::{lambda()#1}::operator()``) and unbalanced names give None."""
    if "@plt" in symbol or "{" in symbol:
        return None
    text = _CLONE_SUFFIX.sub("", symbol).removesuffix(" const")
    if not text.endswith(")") or text.endswith("operator()"):
        return text
    depth = 0
    for index in range(len(text) - 1, 0, -1):
        depth += {")": 1, "(": -1}.get(text[index], 0)
        if depth == 0:
            return text[:index]
    return None


def _bre_escape(text: str) -> str:
    """``text`` as a literal in gdb's (POSIX basic) regular expressions."""
    return "".join("\\" + c if c in "\\.[]*^$" else c for c in text)


def suggestions(gdb: GdbMi, name: str, count: int = 3) -> list[str]:
    """Up to ``count`` loaded function names close to ``name`` (for "did you mean").

    Candidates are names sharing its namespace and first letters, or the first letters of
    its last component; each search is capped at ``SUGGESTION_POOL`` symbols."""
    qualifier, _, base = name.rpartition("::")
    patterns = [_bre_escape(base[:3])]
    if qualifier:
        patterns.insert(0, "^" + _bre_escape(f"{qualifier}::{base[:2]}"))
    pool = dict.fromkeys(n for p in patterns for n in function_names(gdb, p, SUGGESTION_POOL)[0])

    def score(candidate: str) -> float:
        whole = difflib.SequenceMatcher(None, name, candidate).ratio()
        last = difflib.SequenceMatcher(None, base, candidate.rsplit("::", 1)[-1]).ratio()
        return max(whole, last)

    ranked = sorted((c for c in pool if c != name), key=score, reverse=True)
    return [c for c in ranked[:count] if score(c) >= 0.6]
