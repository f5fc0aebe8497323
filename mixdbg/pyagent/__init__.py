"""mixdbg's Python agent: the code that runs inside each debugged interpreter for ``mixdbg dap``.

It owns Python breakpoints (conditions, hit conditions, logpoints), Python stepping, stops on
raised and uncaught Python exceptions, justMyCode, and Python variables and evaluation at a
Python stop. Every stop is a call of the native *trap* that gdb has a breakpoint on, with the
thread's mailbox as argument; the contract with the engine is docs/dap-design.md ("The agent").

``agent.py`` and ``values.py`` use the standard library only: bootstrap loads ``agent.py`` by
path (module name ``_mixdbg_agent``) before the user's program, and nothing of mixdbg's own
environment is imported into the debuggee.
"""
