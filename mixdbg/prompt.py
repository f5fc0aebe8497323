"""The small interactive prompt shown at stops when mixdbg runs at a terminal.

A daemon thread reads lines from stdin and turns each into an action on the session's
queue; the session thread runs it. The prompt never touches gdb itself.
"""

from __future__ import annotations

import re
import shlex
import signal
import sys
import threading
from typing import Callable

from mixdbg import symbols
from mixdbg.breakpoints import parse_spec
from mixdbg.engine.inspect import Variable
from mixdbg.errors import DebuggerError, GdbExitedError, UsageError
from mixdbg.output import Output
from mixdbg.pytorch.tensors import fields, summary_line
from mixdbg.pytorch.views import argument_lines
from mixdbg.session import Session
from mixdbg.stack import format_stack, format_threads, frame_line

HELP = """\
  c, continue        let the debuggee run
  bt, backtrace      the full mixed stack of the stopped thread
  bt all             every thread's mixed stack
  n, next            step over one line (Python or C/C++, whichever the frame is)
  s, step            step into the call on this line, across Python <-> C/C++
  finish             run until the selected frame returns (to its Python or native caller)
  up [N], down [N]   select an outer / inner frame; frame N selects frame #N
  locals [N]         the locals of the selected frame (or of frame #N): native ones through
                     gdb, Python ones read from memory (full objects at Python stops)
  p, print EXPR      evaluate EXPR in the selected frame: C/C++ in native frames (never
                     calling functions where gdb cannot do so safely: see 'mixdbg doctor'),
                     Python in Python frames at Python stops
  args               the innermost frame's tensor/list/scalar arguments (memory only)
  tensor ADDRESS     the tensor at an at::Tensor or c10::TensorImpl address (memory only)
  b, break SPEC      add a breakpoint (FUNCTION, FILE:LINE, op:NS::NAME, ... if COND)
  delete N           delete breakpoint N
  detach, q, quit    end mixdbg; the debuggee runs on
  kill               end the debuggee
"""


def start_prompt(session: Session, output: Output) -> None:
    """Read commands from stdin on a thread; post them to the session as actions."""
    output.prompt = "(mixdbg) "
    thread = threading.Thread(target=_read, args=(session, output), name="prompt", daemon=True)
    thread.start()


def _read(session: Session, output: Output) -> None:
    try:
        for line in sys.stdin:
            session.queue.put(_action(line.strip(), output))
    except OSError as err:
        # A pty whose other side closed (terminal window closed, SSH dropped) fails reads
        # with EIO rather than EOF, and only the shell, not us, is sent SIGHUP for it.
        reason = f"the terminal is gone ({err.strerror})"
        session.queue.put(lambda s: s.detach(reason, code=128 + signal.SIGHUP))
        return
    session.queue.put(lambda s: s.detach("end of input at the prompt"))


def _action(line: str, output: Output) -> Callable[[Session], None]:
    def run(session: Session) -> None:
        try:
            _dispatch(session, line, output)
        except GdbExitedError:
            raise  # the session cannot go on without gdb
        except (UsageError, DebuggerError) as err:  # one command failed; the session goes on
            print(f"mixdbg: {err.message}", flush=True)
        if session.state == "stopped":
            output.show_prompt()
    return run


def _dispatch(session: Session, line: str, output: Output) -> None:
    verb, _, rest = line.partition(" ")
    rest = rest.strip()
    if verb in ("", "help", "h", "?"):
        print(HELP if verb else "", end="", flush=True)
    elif verb in ("detach", "q", "quit"):
        session.detach("detached at the prompt")
    elif verb == "kill":
        session.kill()
    elif verb in ("b", "break"):
        _break(session, rest)
    elif verb == "delete":
        session.table.delete(_number(rest))
    elif session.state != "stopped":
        raise UsageError("the debuggee is running (Ctrl-C interrupts it)")
    elif verb in ("c", "continue"):
        session.resume()
    elif verb in STEPS:
        thread, index = _selected(session)
        session.step(STEPS[verb], thread, index)
    elif verb in ("up", "down", "frame", "f"):
        _select_frame(session, verb, rest)
    elif verb in ("bt", "backtrace") and rest == "all":
        print("\n".join(format_threads(session.inspect.stopped_stack(all_threads=True))), flush=True)
    elif verb in ("bt", "backtrace"):
        print("\n".join(format_stack(session.inspect.stopped_stack(), collapse_interpreter=False)), flush=True)
    elif verb == "locals":
        _locals(session, rest)
    elif verb in ("p", "print"):
        if not rest:
            raise UsageError("print what? (p EXPR)")
        thread, index = _selected(session)
        _print(session, session.inspect.evaluate(rest, thread, index, "repl"))
    elif verb == "args":
        _args(session)
    elif verb == "tensor":
        _tensor(session, rest)
    else:
        raise UsageError(f"unknown command {shlex.quote(verb)} (type 'help')")


def _break(session: Session, text: str) -> None:
    """Add a breakpoint; a function no loaded library defines gets "did you mean"."""
    spec = parse_spec(text)
    breakpoint = session.table.add(spec)
    if breakpoint.pending and not spec.is_line and not spec.is_op:
        close = symbols.suggestions(session.gdb, spec.location)
        if close:
            print(f"did you mean: {', '.join(close)}?", flush=True)


#: gdb's own line for an array with members: ``[6]``.
_ARRAY_COUNT = re.compile(r"^\[\d+\]$")
STEPS = {"n": "next", "next": "next", "s": "stepIn", "step": "stepIn", "finish": "stepOut"}


class _Selection:
    """The frame the prompt's commands apply to: frame #0 of the stopped thread at each
    stop, moved by ``up``, ``down`` and ``frame N``."""

    stop: object = None
    index = 0


_SELECTION = _Selection()


def _selected(session: Session) -> tuple[int, int]:
    """The stopped thread and the selected frame's index in its mixed stack."""
    stop = session.last_stop
    if stop is None or stop.thread is None:
        raise UsageError("no stop to look at")
    if _SELECTION.stop is not stop:
        _SELECTION.stop, _SELECTION.index = stop, 0
    return stop.thread, _SELECTION.index


def _select_frame(session: Session, verb: str, text: str) -> None:
    """``up [N]``, ``down [N]``, ``frame N``: select a frame and show it."""
    thread, index = _selected(session)
    frames = session.inspect.stack(thread).frames
    if verb in ("frame", "f"):
        wanted = _number(text, "frame") if text else index
    else:
        count = _number(text, "frame count") if text else 1
        wanted = index + count if verb == "up" else index - count
    if not 0 <= wanted < len(frames):
        raise UsageError(f"no frame #{wanted} (the stack has {len(frames)}: #0 to #{len(frames) - 1})")
    _SELECTION.index = wanted
    print(frame_line(frames[wanted], wanted), flush=True)


def _locals(session: Session, text: str) -> None:
    """Print a frame's locals, one ``name = value`` a line: the selected frame's, or
    frame #N's. A selected native frame without debug info (a release build of torch) has
    none to show: the Python frame that called it is shown instead, saying so."""
    thread, index = _selected(session)
    number = _number(text, "frame") if text else index
    stack = session.inspect.stack(thread)
    if not 0 <= number < len(stack.frames):
        raise UsageError(f"no frame #{number} (the stack has {len(stack.frames)})")
    frame = stack.frames[number]
    if frame.kind == "native":
        python = next((i for i in range(number, len(stack.frames)) if stack.frames[i].kind == "python"), None)
        try:
            if frame.file is None and not text and python is not None:
                raise DebuggerError("no source, so no debug info")
            variables = session.inspect.native_locals(thread, frame.level or 0)
        except DebuggerError as err:
            if text or python is None:
                raise
            print(f"  frame #{number} ({frame.function}) has no debug info ({err.message})", flush=True)
            number = python
    if stack.frames[number].kind == "python":
        variables = session.inspect.python_locals(thread, number, stack)
    print(f"  locals of frame #{number}:" if variables else f"  frame #{number} has no locals", flush=True)
    for variable in variables:
        print(f"    {variable.name} = {variable.value}", flush=True)


def _print(session: Session, value: Variable) -> None:
    """Print a value; a pretty-printed native one (a tensor: ``tensor float32 [2, 3] cpu``)
    with its members, one a line, as gdb's ``print`` shows them."""
    print(value.value, flush=True)
    members = value.children
    if members is not None and members[0] == "var" and value.value != "{...}" and not _ARRAY_COUNT.match(value.value):
        for member in session.inspect.children(members):
            print(f"  {member.name} = {member.value}", flush=True)


def _args(session: Session) -> None:
    """Print the innermost frame's arguments, decoded from registers and memory."""
    op = session.last_stop.op if session.last_stop is not None else None
    decoded = session.native_arguments(session.inspect.stopped_stack(), op)
    if decoded is None:
        print("no tensor, list or scalar parameters in this frame's signature", flush=True)
        return
    print("\n".join(argument_lines(decoded)), flush=True)


def _tensor(session: Session, text: str) -> None:
    """Print the tensor at an address (``tensor 0x...``)."""
    try:
        address = int(text, 0)
    except ValueError:
        raise UsageError(f"expected an address (tensor 0x7f...), got {text!r}") from None
    found = session.inspect.tensor_at(address)
    if "tensor" not in found:
        print(found["error"], flush=True)
        return
    print(summary_line(found["tensor"]), flush=True)  # as 'p' shows a tensor variable
    for name, shown in fields(found["tensor"]):
        print(f"  {name} = {shown}", flush=True)


def _number(text: str, what: str = "breakpoint") -> int:
    if not text.isdigit():
        raise UsageError(f"expected a {what} number, got {text!r}")
    return int(text)
