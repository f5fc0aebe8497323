"""``mixdbg dap``: one Debug Adapter Protocol session over mixdbg's engine.

``protocol`` is the wire, ``adapter`` one client's session and its loop, ``registry`` which
handler serves which request; the handlers are grouped by family (``lifecycle``,
``breakpoints``, ``inspection``, ``execution``). Entry point: ``adapter.Adapter(...).serve``,
started by ``mixdbg/cmd_dap.py``. The design: ``docs/dap-design.md``.
"""
