"""The engine both front ends drive (the terminal and ``mixdbg dap``), around
``mixdbg.session.Session``: ``breakpoint_table`` (what the user asked to stop at),
``inspect`` (threads, stacks, variables and expressions at a stop), ``stepping`` (steps in
either language and across the boundary), ``pystops`` and ``agents`` (the Python agents
inside the debuggees: their socket, configuration and memory), ``frames`` (which frames
are the user's), ``native_sources`` (which native functions are the user's).
"""
