"""The process tree of a session: the debuggee and the descendants gdb follows with it.

Entry point: ``ProcessTree`` (``follow``), which the session feeds gdb's records and asks
which process a stop is in; ``table`` tags processes, ``procfs`` reads /proc, ``workers``
is the seam for reading a DataLoader worker's id from its Python frames.
"""

from mixdbg.proctree.follow import FOLLOW_ALL, FOLLOW_MODES, FOLLOW_NONE, FOLLOW_PYTHON, ProcessTree
from mixdbg.proctree.table import Process

__all__ = ["FOLLOW_ALL", "FOLLOW_MODES", "FOLLOW_NONE", "FOLLOW_PYTHON", "Process", "ProcessTree"]
