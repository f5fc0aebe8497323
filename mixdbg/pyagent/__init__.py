"""mixdbg's Python agent: the code that runs inside each debugged interpreter for ``mixdbg dap``.

It owns Python breakpoints (conditions, hit conditions, logpoints), Python stepping, stops on
raised and uncaught Python exceptions, justMyCode, and Python variables and evaluation at a
Python stop. Every stop is a call of the native *trap* that gdb has a breakpoint on, with the
thread's mailbox as argument; the contract with the engine is docs/dap-design.md ("The agent").

Standard library only, and loaded by path: bootstrap loads ``agent.py`` (module name
``_mixdbg_agent``) before the user's program, which loads its siblings the same way, so
nothing of mixdbg's own environment is imported into the debuggee:

- ``agent.py``: start, tracing, breakpoints, steps, exception stops, fork;
- ``layout.py``: the shared block and mailboxes in memory, and the exchange at a trap;
- ``values.py``: values' text, evaluation, conditions and logpoint messages at a stop;
- ``members.py``: a value's members as debugpy shows them (groups, ``len()``, numpy, fields);
- ``stopsession.py``: the requests a stopped thread serves (variables, evaluate, setVariable,
  setExpression, completions), each cancellable;
- ``channel.py``: the config socket.
"""
