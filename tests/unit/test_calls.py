"""When gdb may call functions in the debuggee: the facts behind may-call-functions."""

from __future__ import annotations

from pathlib import Path

from mixdbg import calls


def test_gdb_13_on_an_amx_cpu_may_not_call() -> None:
    safety = calls.assess(13, frozenset({"fpu", "avx512f", "amx_tile"}))
    assert not safety.allowed
    assert "gdb 13" in safety.reason and "amx_tile" in safety.reason


def test_gdb_14_or_a_cpu_without_amx_may_call() -> None:
    assert calls.assess(14, frozenset({"amx_tile"})).allowed
    assert calls.assess(18, frozenset({"amx_tile"})).allowed
    assert calls.assess(13, frozenset({"avx512f"})).allowed


def test_unknown_gdb_version_is_unsafe_only_on_amx() -> None:
    assert not calls.assess(None, frozenset({"amx_tile"})).allowed
    assert calls.assess(None, frozenset()).allowed


def test_the_override_wins_both_ways() -> None:
    assert not calls.assess(18, frozenset(), override="off").allowed
    assert calls.assess(13, frozenset({"amx_tile"}), override="on").allowed


def test_cpu_flags_are_read_from_the_first_cpu(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse amx_tile\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert calls.cpu_flags(cpuinfo) == frozenset({"fpu", "sse", "amx_tile"})
    assert calls.cpu_flags(tmp_path / "missing") == frozenset()


def test_the_refusal_is_one_line_naming_the_fix() -> None:
    line = calls.refusal(calls.assess(13, frozenset({"amx_tile"})))
    assert "\n" not in line and "gdb 14 or newer" in line
