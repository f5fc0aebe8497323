"""mixdbg: debug Python and C/C++ in the same process at the same time."""

__version__ = "0.1.0"
