"""``mixdbg dap``: one Debug Adapter Protocol session over mixdbg's engine.

``protocol`` is the wire, ``adapter`` one client's session and its loop, ``registry`` which
handler serves which request; the handlers are grouped by family, one module each, and
registered here, as the package is imported: the adapter never imports a handler module
(handlers import the adapter's type only). Entry point: ``adapter.Adapter(...).serve``,
started by ``mixdbg/cmd_dap.py``. The design: ``docs/dap-design.md``.
"""

from mixdbg.dap import (  # noqa: F401 - each registers its requests (``registry.request``)
    breakpoints,
    cancel,
    code,
    editing,
    execution,
    inspection,
    lifecycle,
    memory,
    python_steps,
    sources,
    watchpoints,
)
