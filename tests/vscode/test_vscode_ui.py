"""The mixdbg extension in a real VS Code (code-server + headless Chromium), used as a person would:
breakpoints typed into the BREAKPOINTS view or set in the gutter, F5 with no launch.json, the
CALL STACK and VARIABLES views, stepping, the DEBUG CONSOLE. Checks read the views' text; the
screenshots are kept for people (the path is printed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from torchext_fixture import TorchExtension
from vscode_real import (
    HERE,
    HEX_EDITOR,
    ON_EVERY_VSCODE,
    REPO,
    CodeServer,
    ServerOptions,
    bare_python,
    code_server,
    drive,
    marker_line,
    vscode_real,
)

__all__ = ["code_server", "vscode_real"]  # fixtures, used by name

pytestmark = [pytest.mark.slow, pytest.mark.vscode]

TESTDEBUG = REPO / "examples" / "testdebug.py"
PYBIND11_PROJECT = HERE / "pybind11_project"
#: The icon of a function breakpoint in BREAKPOINTS once the adapter says it is bound (verified);
#: unverified ones carry ``codicon-debug-breakpoint-function-unverified``.
VERIFIED_FUNCTION_BREAKPOINT = "codicon-debug-breakpoint-function"


@pytest.mark.timeout(600)
@ON_EVERY_VSCODE
def test_seed_run_f5_on_testdebug_with_a_function_breakpoint(code_server: CodeServer,
                                                             torch_installed: None) -> None:
    # Given the repository open, no launch.json, a function breakpoint typed into BREAKPOINTS
    if (REPO / ".vscode" / "launch.json").exists():
        pytest.skip("the repository has a .vscode/launch.json: F5 would use it")
    line = randn_line()
    # When F5 is pressed on examples/testdebug.py
    steps = drive(code_server, "function_breakpoint.js", REPO, timeout=540, script="examples/testdebug.py",
                  breakpoint="at::native::randn", frame="at::native::randn", variable=r"^size\b")
    # Then CALL STACK has randn and, below it, <module> testdebug.py:3
    assert steps["breakpoints"][-1].endswith("at::native::randn")
    assert VERIFIED_FUNCTION_BREAKPOINT in steps["breakpointIcon"].split(), steps["breakpointIcon"]
    frames = steps["stack"]
    randn_at = next(i for i, row in enumerate(frames) if "at::native::randn" in row)
    assert any(re.search(rf"<module> testdebug\.py {line}:\d+", row) for row in frames[randn_at + 1:]), frames
    # ...the editor shows testdebug.py at that line when the frame is clicked
    assert steps["moduleFrame"] == {"tab": "testdebug.py", "line": line}
    # ...VARIABLES shows randn's size
    assert re.match(r"size\b.*2.*3", steps["variable"]), steps["variables"]
    # ...and randn is the top row as the stop first shows it (not folded behind "Show N More")
    assert "at::native::randn" in steps["top"], f"the stop frame is folded: {steps['shown']}"


def randn_line() -> int:
    """The line of examples/testdebug.py that calls torch.randn (3 in the README)."""
    return next(n for n, text in enumerate(TESTDEBUG.read_text().splitlines(), 1) if "torch.randn(" in text)


@pytest.mark.timeout(600)
def test_operator_breakpoint_typed_as_op_aten_add(code_server: CodeServer, torch_installed: None,
                                                  tmp_path: Path) -> None:
    # Given a script that adds two tensors, and the function breakpoint typed as op:aten::add
    shutil.copy(HERE / "operator_add.py", tmp_path)
    line = marker_line(tmp_path / "operator_add.py", "add")
    # When F5 is pressed on it
    # (its tensor arguments are checked through the protocol in tests/dap/test_dap_torch.py: a
    # kernel frame's row, wider than the view, is not clicked reliably here)
    steps = drive(code_server, "function_breakpoint.js", tmp_path, timeout=540, script="operator_add.py",
                  breakpoint="op:aten::add", frame=None, variable=None)
    # Then the name reached mixdbg dap as typed (it stopped in an add kernel, with its tensor
    # arguments), called from the script's line
    assert steps["breakpoints"][-1].endswith("op:aten::add")
    assert VERIFIED_FUNCTION_BREAKPOINT in steps["breakpointIcon"].split(), steps["breakpointIcon"]
    assert "operator aten::add.tensor" in steps["paused"].lower(), steps  # the stop says which overload
    assert steps["moduleFrame"] == {"tab": "operator_add.py", "line": line}
    assert "wrapper_CPU_add_Tensor" in steps["top"], steps["top"]


@pytest.fixture
def pybind11_workspace(tmp_path: Path) -> Path:
    """A folder with mixdbg_pyb.cpp, its module built -g -O0 beside it, and use_pyb.py."""
    pybind11 = pytest.importorskip("pybind11", reason="pip install pybind11 (in the test extra)")
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    workspace = tmp_path / "pyb"
    shutil.copytree(PYBIND11_PROJECT, workspace)
    module = workspace / f"mixdbg_pyb{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([compiler, "-g", "-O0", "-shared", "-fPIC", "-std=c++17", f"-I{pybind11.get_include()}",
                    f"-I{sysconfig.get_paths()['include']}", str(workspace / "mixdbg_pyb.cpp"), "-o", str(module)],
                   check=True, timeout=300, capture_output=True)
    done = subprocess.run([sys.executable, "use_pyb.py"], cwd=workspace, capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout == "result 11\n"
    return workspace


@pytest.mark.timeout(600)
@ON_EVERY_VSCODE
def test_pybind11_gutter_breakpoint_step_over_evaluate_step_out(code_server: CodeServer,
                                                               pybind11_workspace: Path) -> None:
    cpp, script = pybind11_workspace / "mixdbg_pyb.cpp", pybind11_workspace / "use_pyb.py"
    lines = {name: marker_line(cpp, name) for name in ("first", "second", "call")}
    lines["pycall"] = marker_line(script, "pycall")
    # Given a breakpoint clicked in the gutter of the .cpp; when F5 is pressed on use_pyb.py
    steps = drive(code_server, "pybind11.js", pybind11_workspace, timeout=540, cpp="mixdbg_pyb.cpp",
                  script="use_pyb.py", lines=lines, evaluate={"expression": "total + 1", "result": "6"})
    # Then it stops there, and the editor shows that line
    assert re.search(rf"add_twice.*mixdbg_pyb\.cpp {lines['first']}:", steps["hitTop"])
    assert steps["hitEditor"] == {"tab": "mixdbg_pyb.cpp", "line": lines["first"]}
    # Step Over moves one line
    assert re.search(rf"add_twice.*mixdbg_pyb\.cpp {lines['second']}:", steps["nextTop"])
    assert steps["nextEditor"] == {"tab": "mixdbg_pyb.cpp", "line": lines["second"]}
    # The debug console evaluates at that native stop (total = 2 + 3 there)
    assert steps["evaluated"] == "6"
    # Step Out: the native caller; Step Out again: the Python caller, on the call's own line
    # (the call complete, as debugpy's Step Out and gdb's finish land)
    assert re.search(rf"call_add.*mixdbg_pyb\.cpp {lines['call']}:", steps["out1Top"])
    assert re.search(rf"<module> use_pyb\.py {lines['pycall']}:", steps["out2Top"])
    assert steps["out2Editor"] == {"tab": "use_pyb.py", "line": lines["pycall"]}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("code_server", [ServerOptions(extensions=(HEX_EDITOR,))], indirect=True)
def test_custom_operator_tensor_in_variables_and_view_binary_data(code_server: CodeServer, torch_installed: None,
                                                                  torch_extension: TorchExtension) -> None:
    # Given the custom operators built with -g (their build folder as the workspace: the
    # source their debug info names) and a script there that calls them
    workspace = torch_extension.directory
    script = workspace / "use_myops.py"
    script.write_text("import runpy, sys\n"
                      f"sys.argv = [{str(torch_extension.script)!r}, {str(torch_extension.library)!r}]\n"
                      f"runpy.run_path({str(torch_extension.script)!r}, run_name='__main__')\n")
    line = torch_extension.line("loop")
    # When a breakpoint is clicked on the kernel's loop line and F5 pressed on the script
    steps = drive(code_server, "torch_values.js", workspace, timeout=840, cpp=torch_extension.source.name,
                  script=script.name, line=line)
    # Then VARIABLES shows a as one line, and expanded, its fields and values (memory only)
    # (VS Code 1.100 writes "name = value", later ones "name: value")
    rows = [re.sub(r"^(\S+?)\s*[=:]\s", r"\1 = ", row) for row in steps["variables"]]
    assert re.sub(r"^a\s*[=:]\s", "a = ", steps["a"]) == "a = tensor float32 [2, 3] cpu", steps
    for row in ("dtype = float32", "shape = [2, 3]", "strides = [3, 1]", "storage_offset = 0", "device = cpu",
                "values = [[1., 1., 1.], [1., 1., 1.]]"):
        assert row in rows, rows
    assert re.fullmatch(r"data\s*[=:]\s*0x[0-9a-f]+", steps["data"])
    # ...and "View Binary Data" opens the memory view on its data: float32 1.0s (00 00 80 3F)
    assert steps["viewBinaryData"] and steps.get("binaryTab"), steps
    assert steps["memoryRow"] == "00000000 " + " ".join(["00 00 80 3F"] * 4), steps


def hello_workspace(tmp_path: Path) -> Path:
    """A folder with one Python file, hello.py."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.py").write_text("print('hello')\n")
    return workspace


@pytest.mark.timeout(300)
def test_check_this_machine_and_the_pip_install_message(code_server: CodeServer, tmp_path: Path) -> None:
    bare = bare_python(tmp_path / "bare-python")
    steps = drive(code_server, "messages.js", hello_workspace(tmp_path), timeout=240, script="hello.py",
                  settings=str(code_server.settings), doctor=True,
                  cases=[{"name": "missing", "python": str(bare), "expect": "pip install"}])
    # "mixdbg: Check this machine" shows mixdbg doctor's checks
    assert f"$ {sys.executable} -m mixdbg doctor (interpreter from setting mixdbg.python)" in steps["doctor"]
    assert re.search(r"\bgdb: ", steps["doctor"]) and re.search(r"\bptrace: ", steps["doctor"]), steps["doctor"]
    # F5 with an interpreter without mixdbg: one message with the exact command, no session
    assert f"mixdbg is not installed in {bare} (from setting mixdbg.python). Install it: {bare} -m pip install mixdbg" \
        in steps["missing"]["message"]
    assert not steps["missing"]["sessionStarted"]


@pytest.mark.timeout(300)
def test_doctor_problem_and_unreadable_process_list_are_one_message_each(code_server: CodeServer,
                                                                          tmp_path: Path) -> None:
    # Given an interpreter under which no gdb can be found (MIXDBG_GDB names a missing file)
    no_gdb = tmp_path / "python-without-gdb"
    no_gdb.write_text(f'#!/bin/sh\nMIXDBG_GDB="{tmp_path / "no-such-gdb"}" exec "{sys.executable}" "$@"\n')
    no_gdb.chmod(0o755)
    doctor = json.loads(subprocess.run([str(no_gdb), "-m", "mixdbg", "doctor", "--json"], capture_output=True,
                                       text=True, timeout=120, check=False).stdout)
    gdb = next(check for check in doctor["checks"] if check["name"] == "gdb")
    assert gdb["status"] == "fail" and gdb["fix"], gdb
    # ...and one whose startup prints a banner on stdout, before mixdbg ps's JSON
    chatty = tmp_path / "python-with-a-banner"
    chatty.write_text(f'#!/bin/sh\necho "Welcome to the cluster"\nexec "{sys.executable}" "$@"\n')
    chatty.chmod(0o755)
    # When F5 is pressed with the first, and the process picker run with the second
    steps = drive(code_server, "messages.js", hello_workspace(tmp_path), timeout=240, script="hello.py",
                  settings=str(code_server.settings), cases=[
                      {"name": "picker", "python": str(chatty), "command": "mixdbg: Pick a Python process to debug",
                       "expect": "mixdbg ps"},
                      {"name": "doctor", "python": str(no_gdb), "expect": "cannot debug here"}])
    # Then F5 says what doctor found and its fix, and no session starts
    assert f"mixdbg cannot debug here (gdb): {gdb['summary']}. Fix: {gdb['fix']}" in steps["doctor"]["message"]
    assert not steps["doctor"]["sessionStarted"]
    # ...and the picker says in one line what it could not read, instead of failing silently
    assert "mixdbg ps --json printed something that is not a list of processes: Welcome to the cluster" \
        in steps["picker"]["message"]
    assert not steps["picker"]["sessionStarted"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("code_server", [ServerOptions(mixdbg_python=False, bare_python3=True)], indirect=True)
def test_without_a_setting_or_the_python_extension_python3_is_used(code_server: CodeServer, tmp_path: Path) -> None:
    # Given no mixdbg.python setting, no Python extension, and a python3 on PATH without mixdbg
    # When F5 is pressed: the message names python3, the default, and its pip command
    steps = drive(code_server, "messages.js", hello_workspace(tmp_path), timeout=240, script="hello.py",
                  settings=str(code_server.settings), cases=[{"name": "missing", "expect": "pip install"}])
    assert "mixdbg is not installed in python3 (from the default). Install it: python3 -m pip install mixdbg" \
        in steps["missing"]["message"]
    assert not steps["missing"]["sessionStarted"]


@pytest.mark.timeout(400)
def test_attach_by_picker_from_what_setup_wrote(code_server: CodeServer, tmp_path: Path) -> None:
    # Given what `mixdbg setup --kind mixdbg` writes, and a Python program running
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shutil.copy(HERE / "sleeper.py", workspace)
    subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--kind", "mixdbg", "--workspace", str(workspace)],
                   check=True, timeout=60, capture_output=True)
    sleeper = subprocess.Popen([sys.executable, str(workspace / "sleeper.py")])
    try:
        # When the attach configuration is started and the program picked from the list
        steps = drive(code_server, "attach.js", workspace, timeout=360, filter="sleeper.py", pid=sleeper.pid)
        # Then the picker showed it by its command line, the session attached to it, and Stop left it running
        assert any("mixdbg: attach to a process" in row for row in steps["configurations"])
        assert "sleeper.py" in steps["picked"] and f"{sleeper.pid} · other" in steps["picked"]
        assert f"PID {sleeper.pid}" in steps["console"]
        assert sleeper.poll() is None, "detaching must leave the program running"
    finally:
        sleeper.kill()
        sleeper.wait(10)


@pytest.mark.timeout(400)
def test_module_configuration_asks_for_the_module(code_server: CodeServer, tmp_path: Path) -> None:
    # Given what `mixdbg setup --kind mixdbg` writes, in a folder with a module
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello_module.py").write_text(
        "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text(__name__)\n")
    subprocess.run([sys.executable, "-m", "mixdbg", "setup", "--kind", "mixdbg", "--workspace", str(workspace)],
                   check=True, timeout=60, capture_output=True)
    # When "mixdbg: module" is started: it asks, and python -m hello_module runs to its end
    ran = tmp_path / "ran"
    launch = workspace / ".vscode" / "launch.json"
    launch.write_text(launch.read_text().replace('"module": "${command:mixdbg.askModule}",\n            "args": []',
                                                 f'"module": "${{command:mixdbg.askModule}}",\n            "args": ["{ran}"]'))
    steps = drive(code_server, "module.js", workspace, timeout=360, module="hello_module")
    assert "The module to run and debug" in steps["question"]
    assert ran.read_text() == "__main__"


@pytest.mark.timeout(300)
def test_run_without_debugging_ctrl_f5_runs_past_breakpoints(code_server: CodeServer, tmp_path: Path) -> None:
    # Given a Python file with a breakpoint in its gutter, and no launch.json
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ran = tmp_path / "ran"
    (workspace / "plain.py").write_text(
        "import os, pathlib\n"
        "status = open('/proc/self/status').read()  # @stop\n"
        f"pathlib.Path({str(ran)!r}).write_text(status.split('TracerPid:')[1].split()[0])\n")
    # When Ctrl+F5 is pressed on it
    steps = drive(code_server, "run_without_debugging.js", workspace, timeout=240, script="plain.py",
                  line=marker_line(workspace / "plain.py", "stop"))
    # Then it ran to its end, untraced (no gdb), and never stopped at the breakpoint
    assert ran.read_text() == "0"
    assert not steps["paused"]


@pytest.mark.timeout(600)
def test_set_value_in_variables_is_the_value_the_program_uses(code_server: CodeServer, tmp_path: Path) -> None:
    # Given a Python file with a breakpoint in its gutter after `count = 1`, and no launch.json
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = tmp_path / "doubled"
    (workspace / "counts.py").write_text(
        "import pathlib\n"
        "count = 1\n"
        "doubled = count * 2  # @stop\n"
        "print(f'doubled {doubled}', flush=True)\n"
        f"pathlib.Path({str(result)!r}).write_text(str(doubled))\n")
    # When F5 stops there and count is set to 21 from the VARIABLES view (Set Value)
    steps = drive(code_server, "set_value.js", workspace, timeout=240, script="counts.py",
                  line=marker_line(workspace / "counts.py", "stop"), name="count", value="21")
    # Then VARIABLES shows 21, and the program, continued, used it
    assert re.match(r"count\b.*\b1$", steps["before"]), steps["before"]
    assert re.match(r"count\b.*\b21$", steps["after"]), steps["variables"]
    assert result.read_text() == "42"


@pytest.mark.timeout(300)
def test_launch_json_written_by_setup_flags_nothing_of_mixdbgs_entries(code_server: CodeServer,
                                                                      tmp_path: Path) -> None:
    # Given the launch.json `mixdbg setup` writes by default: the extension's entries, then the
    # debugpy + cppdbg pair and their compound
    workspace = hello_workspace(tmp_path)
    done = subprocess.run([sys.executable, "-m", "mixdbg", "setup"], cwd=workspace, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = (workspace / ".vscode" / "launch.json").read_text().splitlines()
    pair_starts = next(n for n, line in enumerate(text, 1) if '"mixdbg: Python (debugpy attach)"' in line) - 1
    # When it is open in VS Code with the mixdbg extension (and neither debugpy's nor cpptools')
    steps = drive(code_server, "launch_problems.js", workspace, timeout=240)
    # Then VS Code's own validation flags no line of the mixdbg entries (processId's picker
    # included); what it flags is in the pair, whose debug types are not installed here
    flagged = [int(found.group(1)) for problem in steps["problems"] if (found := re.search(r"\[Ln (\d+),", problem))]
    assert flagged and all(line >= pair_starts for line in flagged), steps["problems"]
    assert any("debug type is not recognized" in problem for problem in steps["problems"])


@pytest.mark.timeout(600)
def test_a_long_symbol_read_is_a_notification_naming_the_library(code_server: CodeServer, torch_installed: None,
                                                                 tmp_path: Path) -> None:
    # Given a script that calls randn, and a function breakpoint on it (gdb reads
    # libtorch_cpu.so's 520,000 symbols for it: seconds)
    workspace = tmp_path / "progress"
    workspace.mkdir()
    (workspace / "make_tensor.py").write_text("import torch\n\nprint(torch.randn(2, 3))\n")
    # When F5 is pressed
    steps = drive(code_server, "progress.js", workspace, timeout=540, script="make_tensor.py",
                  breakpoint="at::native::randn", progress="gdb reads symbols")
    # Then a notification said what gdb read while it read it, and the session went on to stop
    assert "libtorch_cpu.so" in steps["notification"] and "MB of symbols" in steps["notification"], steps
    assert "at::native::randn" in steps["top"]
