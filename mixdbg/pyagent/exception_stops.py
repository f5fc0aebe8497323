"""Stops on Python exceptions, as debugpy decides them: raised (where a user frame first
sees it), uncaught (from the exception hooks: the traceback's frames are the stack),
user-uncaught (a user frame it leaves for the library code that called it), for every
exception or per class (DAP's exceptionOptions); ``exceptionInfo``'s traceback from the
program's first frame.

Standard library only; loaded by path beside ``agent.py`` as ``_mixdbg_agent_exception_stops``.
The tracer reports the events (``raised``, ``unwinding``); the agent stops.
"""

from __future__ import annotations

import os
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

agent: Any = None  # the agent module (install)

#: Exceptions that are control flow, not errors: never a "raised" stop.
_QUIET_EXCEPTIONS = (StopIteration, StopAsyncIteration, GeneratorExit)

#: Files of the launcher that runs the program (bootstrap, runpy): never the user's, and left
#: out of an uncaught exception's traceback, as debugpy shows it.
_LAUNCHER_NAMES = frozenset({"runpy.py", "<frozen runpy>", "bootstrap.py"})


class ExceptionRules:
    """When an exception stops, as debugpy decides it: for each of ``raised``, ``uncaught``
    and ``user`` (user-uncaught: leaves user code into library code), the exception
    classes (names: ``ValueError``, ``pkg.mod.Error``) that stop; a class stops when it or
    one of its bases is named (``BaseException``: every exception)."""

    __slots__ = ("raised", "uncaught", "user")

    def __init__(self, raised: frozenset[str] = frozenset(), uncaught: frozenset[str] = frozenset(),
                 user: frozenset[str] = frozenset()) -> None:
        self.raised, self.uncaught, self.user = raised, uncaught, user

    @staticmethod
    def matches(kind: type[BaseException], names: frozenset[str]) -> bool:
        """Whether ``kind`` or one of its bases is named in ``names``."""
        if not names:
            return False
        return any(klass.__name__ in names or klass.__qualname__ in names
                   or f"{klass.__module__}.{klass.__qualname__}" in names for klass in kind.__mro__)


rules = ExceptionRules()


def set_rules(message: dict[str, Any]) -> None:
    """``{"raised": bool, "uncaught": bool, "userUnhandled": bool}`` for every exception,
    or per exception class: ``{"options": [{"names": [...], "breakMode": "never" |
    "always" | "unhandled" | "userUnhandled"}]}`` (DAP's exceptionOptions, as debugpy reads
    them: the filters are then ignored)."""
    global rules
    every = frozenset({"BaseException"})
    if "options" in message:
        sets: dict[str, set[str]] = {"always": set(), "unhandled": set(), "userUnhandled": set()}
        for option in message["options"]:
            sets.get(str(option["breakMode"]), set()).update(str(name) for name in option["names"])
        rules = ExceptionRules(frozenset(sets["always"]), frozenset(sets["unhandled"]),
                                    frozenset(sets["userUnhandled"]))
    else:
        rules = ExceptionRules(every if message.get("raised") else frozenset(),
                                    every if message.get("uncaught") else frozenset(),
                                    every if message.get("userUnhandled") else frozenset())


def _program_traceback(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the program's first frame: the launcher's (bootstrap, runpy) and
    the agent's frames before it left out, as debugpy shows it."""
    while tb is not None and (os.path.basename(tb.tb_frame.f_code.co_filename) in _LAUNCHER_NAMES
                              or tb.tb_frame.f_code.co_filename in agent._AGENT_FILES):
        tb = tb.tb_next
    return tb


def _exception_info(kind: type[BaseException], exc: BaseException, tb: TracebackType | None,
                    mode: str) -> dict[str, str]:
    import traceback  # only at an exception stop: it costs several ms at every start

    text = "".join(traceback.format_exception(kind, exc, _program_traceback(tb)))
    return {"type": kind.__qualname__, "message": str(exc), "text": text[-(64 << 10):], "breakMode": mode}


def raised(frame: FrameType, exc: BaseException, tb: TracebackType | None = None) -> None:
    """A raised exception seen in a frame (``raise``, or passing through): stop once per
    exception object, in the first user frame it is seen in (a library file traced for its
    breakpoints does not count)."""
    kind = type(exc)
    if not rules.raised or issubclass(kind, _QUIET_EXCEPTIONS) or _quiet_exit(exc) or \
            not agent.is_user(frame.f_code):
        return
    state = agent._thread()
    if state.reported is exc or not ExceptionRules.matches(kind, rules.raised):
        return
    state.reported = exc  # a strong reference: an id could be reused by the next exception
    info = _exception_info(kind, exc, tb or exc.__traceback__, "always")
    agent.stop(frame, "exception", description=f"{info['type']}: {info['message']}", exception=info)


def unwinding(frame: FrameType, exc: BaseException, tb: TracebackType | None = None) -> None:
    """``frame`` is left by an exception: stop there when it leaves user code for library
    code (debugpy's user-uncaught: a ThreadPoolExecutor worker, a framework's handler)."""
    kind = type(exc)
    caller = frame.f_back
    if not rules.user or issubclass(kind, _QUIET_EXCEPTIONS) or _quiet_exit(exc) \
            or not agent.is_user(frame.f_code) or caller is None or agent.is_user(caller.f_code) \
            or os.path.basename(caller.f_code.co_filename) in _LAUNCHER_NAMES \
            or caller.f_code.co_filename in agent._AGENT_FILES:
        return
    state = agent._thread()
    if state.unhandled is exc or not ExceptionRules.matches(kind, rules.user):
        return
    state.unhandled = state.reported = exc
    info = _exception_info(kind, exc, tb or exc.__traceback__, "userUnhandled")
    agent.stop(frame, "exception", description=f"{info['type']}: {info['message']}", exception=info)


def _quiet_exit(exc: BaseException) -> bool:
    """``sys.exit()``, ``sys.exit(0)``: a normal end, never a stop (debugpy's default)."""
    return isinstance(exc, SystemExit) and exc.code in (None, 0)


def _post_mortem(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """An uncaught exception (from an exception hook): stop with the traceback's frames."""
    if not ExceptionRules.matches(kind, rules.uncaught) or agent._channel is None or _quiet_exit(exc):
        return
    info = _exception_info(kind, exc, tb, "unhandled")
    frames: list[FrameType] = []
    tb = _program_traceback(tb)
    while tb is not None:
        if tb.tb_frame.f_code.co_filename not in agent._AGENT_FILES:
            frames.insert(0, tb.tb_frame)
        tb = tb.tb_next
    with agent.tracer.paused():  # evaluation at this stop must not stop again
        agent.stop(None, "exception", description=f"{info['type']}: {info['message']}", exception=info, frames=frames)


def _excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    _post_mortem(kind, exc, tb)
    _original_excepthook(kind, exc, tb)


def _threading_excepthook(args: Any) -> None:
    if args.exc_type is not SystemExit and args.exc_value is not None:
        _post_mortem(args.exc_type, args.exc_value, args.exc_traceback)
    _original_threading_excepthook(args)


_original_excepthook = sys.excepthook
_original_threading_excepthook = threading.excepthook


def install(core: Any) -> None:
    """Bind the agent and wrap the exception hooks (the originals run after the stop)."""
    global agent
    agent = core
    sys.excepthook = _excepthook
    threading.excepthook = _threading_excepthook
