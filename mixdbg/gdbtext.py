"""Text for gdb commands, shared by mixdbg and the code it runs inside gdb (standard
library only: gdb's Python is not mixdbg's)."""

from __future__ import annotations

import re

#: Characters special in gdb's regular expressions (``sharedlibrary REGEX``).
_REGEX_SPECIAL = re.compile(r"([.\[\]()*+?^$|\\{}])")


def library_regex(path: str) -> str:
    """A ``sharedlibrary`` regex that matches exactly the library ``path``."""
    return "^" + _REGEX_SPECIAL.sub(r"\\\1", path) + "$"
