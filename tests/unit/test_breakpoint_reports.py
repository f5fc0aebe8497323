"""What a breakpoint's events say, and when a change is worth one (issue 25, item 7): a
place is reported once however many processes have it, every location is named, and a
breakpoint bound at its addresses shows what gdb's own locations of the name show."""

from __future__ import annotations

from mixdbg.breakpoints import Breakpoint, Location, parse_spec
from mixdbg.events import BreakpointChanged
from mixdbg.output import human

LIBM = Location("1.1", "0x00007f0000001000", "kernel", "e_hypotl.c", 46, True, inferiors=("i1",))
LIBM_IN_WORKER = Location("1.2", "0x00007f0000001000", "kernel", "e_hypotl.c", 46, True, inferiors=("i2",))
GENERATED = Location("1.3", "0x00007f0000009000", "kernel()", "/tmp/c7a.main.cpp", 14, True, inferiors=("i1",))
#: gdb lists the breakpoint for a process where it has not placed it yet: no address.
NOT_PLACED = Location("1.4", None, None, None, None, True, inferiors=("i3",))


def kernel(*locations: Location) -> Breakpoint:
    breakpoint = Breakpoint(1, parse_spec("kernel"))
    breakpoint.set_locations(1, list(locations))
    return breakpoint


def test_a_place_in_one_more_process_is_no_news() -> None:
    # Given a breakpoint in libm in the main process, then also in a compile worker (a fork:
    # same address), and an entry gdb lists for a process where it placed nothing
    one, two = kernel(LIBM), kernel(LIBM, LIBM_IN_WORKER, NOT_PLACED)
    # Then it has one location, and nothing that matters changed
    assert one.to_json()["locations"] == two.to_json()["locations"] == [
        {"address": LIBM.address, "function": "kernel", "file": "e_hypotl.c", "line": 46}]
    assert one.what_matters() == two.what_matters()
    # but a new place is news
    assert kernel(LIBM, GENERATED).what_matters() != one.what_matters()


def test_every_location_is_named_once() -> None:
    # Given the breakpoint in two processes, with a location gdb names no function for
    unnamed = {"address": "0x00007f0000005000", "function": None, "file": None, "line": None,
               "library": "libfoo.so"}
    body = {**kernel(LIBM, LIBM_IN_WORKER, GENERATED).to_json(), "pids": [4242, 4243]}
    body["locations"].append(unnamed)
    # Then the line names each place once, the unnamed one by its library, and the processes
    (line,) = human(BreakpointChanged(body))
    assert line == ("breakpoint 1 (kernel): 3 location(s) (in 2 processes): kernel at e_hypotl.c:46, "
                    "kernel() at c7a.main.cpp:14, 0x00007f0000005000 in libfoo.so")
    assert "None" not in line


def test_a_breakpoint_at_its_addresses_reads_as_gdbs_own() -> None:
    # Given a breakpoint placed at the addresses gdb found before, before gdb read the library
    breakpoint = Breakpoint(3, parse_spec("at::native::randn"))
    placed = Location("7.1", "0x00007f0000002000", "at::native::randn(c10::ArrayRef<long>)", None, None, True,
                      inferiors=("i1",))
    breakpoint.set_locations(7, [placed])
    before = (breakpoint.to_json(), breakpoint.what_matters())
    # When gdb reads it and places the name itself at the same address
    breakpoint.set_locations(3, [Location("3.1", placed.address, placed.function, None, None, True,
                                          inferiors=("i1",))])
    # Then nothing the user sees changes; when its process execs, gdb's own place stays
    assert (breakpoint.to_json(), breakpoint.what_matters()) == before
    breakpoint.forget_address(7)
    assert breakpoint.to_json()["locations"] == before[0]["locations"]
