"""attach.signal_pending against real processes (a stopped child, a child blocking SIGINT)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mixdbg import attach

pytestmark = pytest.mark.timeout(30)

# Python's own SIGINT handler, set explicitly: a child of a background job inherits SIGINT
# ignored, and the kernel discards an ignored signal instead of queueing it.
SLEEPER = ("import signal, sys, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
           "{block}print('ready', flush=True)\ntime.sleep(60)\n")


@pytest.fixture
def sleeper(request: pytest.FixtureRequest) -> Iterator[subprocess.Popen[str]]:
    block = "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n" if request.param else ""
    child = subprocess.Popen([sys.executable, "-c", SLEEPER.format(block=block)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    yield child
    child.kill()
    child.wait()


def wait_until_queued(pid: int) -> None:
    """Until the kernel shows SIGINT in the process's shared pending mask."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        if int(status["ShdPnd"], 16) & (1 << (signal.SIGINT - 1)):
            return
        time.sleep(0.01)
    raise AssertionError("SIGINT never queued")


@pytest.mark.parametrize("sleeper", [False], indirect=True)
def test_a_sigint_queued_for_a_stopped_process_is_pending(sleeper: subprocess.Popen[str]) -> None:
    # Given a stopped process (it cannot take a signal until it runs)
    sleeper.send_signal(signal.SIGSTOP)
    assert not attach.signal_pending(sleeper.pid, signal.SIGINT)
    # When SIGINT is sent to it
    sleeper.send_signal(signal.SIGINT)
    wait_until_queued(sleeper.pid)
    # Then it is pending, and SIGTERM (never sent) is not
    assert attach.signal_pending(sleeper.pid, signal.SIGINT)
    assert not attach.signal_pending(sleeper.pid, signal.SIGTERM)


@pytest.mark.parametrize("sleeper", [True], indirect=True)
def test_a_sigint_every_thread_blocks_is_not_pending(sleeper: subprocess.Popen[str]) -> None:
    # Given a running process whose only thread blocks SIGINT, which is then sent to it
    sleeper.send_signal(signal.SIGINT)
    wait_until_queued(sleeper.pid)
    # Then it is queued, but running the process would not deliver it
    assert not attach.signal_pending(sleeper.pid, signal.SIGINT)


def test_a_process_that_is_gone_has_nothing_pending() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not attach.signal_pending(child.pid, signal.SIGINT)
