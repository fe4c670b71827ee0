"""The harness reading recorded bench streams (no guest needed): the batch
output demultiplexed whatever the read boundaries, an L1 that died mid-line,
and the verdicts on L1's kernel console (a soft lockup, a crash, a stopped
heartbeat, a silent batch). The recordings in streams/ come from real L1
boots: good.* from a platform test and a soak fragment, stackguard.console.log
from an L1 that crashed under a busy 2-vCPU L2 (scripts/bench-soak with
--l1-smp 2), softlockup.console.log from test_bench_l1_watch.py, whose
soft-lockup line is written into L1's kernel log by the test."""

import random
from pathlib import Path

import pytest

from kvmhost import l1
from kvmhost.stream import BatchStream, L1Console, parse_batch

STREAMS = Path(__file__).with_name("streams")


def recorded(name):
    return (STREAMS / name).read_text()


def fed_in_chunks(text, seed):
    """Outcomes of text fed in chunks that end anywhere (mid-line, mid-marker,
    between a carriage return and its newline), as reads of a growing file do."""
    rng, stream, pos = random.Random(seed), BatchStream(), 0
    while pos < len(text):
        size = rng.choice([1, 2, 7, 64, 500, 4096])
        stream.feed(text[pos:pos + size])
        pos += size
    return stream.close()


def test_recorded_batch_is_demultiplexed_whole():
    text = recorded("good.data.log")
    out = parse_batch(text)
    assert list(out) == ["acpi_off", "soak000"]
    acpi_off = out["acpi_off"].guest("boot")
    # The case that once failed: the guest's dmesg lines, then its status.
    assert "smpboot: Total of 2 processors activated (" in acpi_off.log
    assert acpi_off.kit_exit() == 0 and acpi_off.rc == 1
    busy = out["soak000"]
    assert busy.rc == 1 and busy.guest("busy").kit_exit() == 0
    assert "pmbench loaded reads=20000" in busy.guest("busy").log


@pytest.mark.parametrize("seed", range(20))
def test_reads_that_split_lines_change_nothing(seed):
    text = recorded("good.data.log")
    whole = parse_batch(text)
    chunked = fed_in_chunks(text, seed)
    assert chunked == whole


def test_carriage_returns_do_not_split_lines():
    text = recorded("good.data.log").replace("\n", "\r\n")
    assert parse_batch(text) == parse_batch(recorded("good.data.log"))


def test_l1_that_died_mid_line_keeps_everything_it_sent():
    text = recorded("good.data.log")
    # Cut in the middle of the second fragment's guest's last line of output.
    cut = text.index("pmbench loaded reads=20000") + len("pmbench loaded rea")
    out = fed_in_chunks(text[:cut], seed=1)
    assert out["acpi_off"].rc == 1                      # ended before the cut: intact
    busy = out["soak000"]
    assert busy.rc is None                              # its end never came
    guest = busy.guest("busy")
    assert guest.rc is None and not guest.killed
    assert guest.log.rstrip("\n").endswith("pmbench loaded rea")
    assert "KIT-READY" in guest.log


def test_guest_frame_without_end_is_closed_by_its_fragment():
    out = parse_batch("@@TEST-BEGIN t\n@@GUEST-BEGIN g\nKIT-READY\n@@TEST-END t rc=137\n")
    assert out["t"].rc == 137
    assert out["t"].guest("g").rc is None and "KIT-READY" in out["t"].guest("g").log


def test_marker_text_inside_a_line_is_guest_output():
    out = parse_batch("@@TEST-BEGIN t\n@@GUEST-BEGIN g\necho @@GUEST-END g rc=0\n"
                      "KIT-EXIT=0\n@@GUEST-END g rc=1\n@@TEST-END t rc=0\n")
    assert out["t"].guest("g").kit_exit() == 0


@pytest.mark.parametrize("name,sign", [
    ("softlockup.console.log", "watchdog: BUG: soft lockup - CPU#1 stuck for"),
    ("stackguard.console.log", "BUG: TASK stack guard page was hit"),
])
def test_recorded_dying_l1_consoles_are_recognised(name, sign):
    console = L1Console()
    console.feed(recorded(name))
    assert console.fatal and sign in console.fatal
    assert sign in console.evidence()
    assert "bench: alive" not in console.evidence()


def test_healthy_l1_console_has_heartbeats_and_no_fatal_sign():
    console = L1Console()
    console.feed(recorded("good.console.log"))
    assert console.fatal is None and console.heartbeats >= 3


def watch_through(console_text, *, data_every=5, seconds=400, limits=None):
    """Step a watch through time: a batch running fragment 'f' (limit 100 s)
    that prints every data_every seconds, and the console text fed at t=30.
    Returns (time given up, reason) or (None, None)."""
    watch = l1.L1Watch(limits or {"f": 100}, start=0)
    watch.step(0, data="@@TEST-BEGIN f\n")
    for t in range(1, seconds):
        data = "line\n" if data_every and t % data_every == 0 else ""
        beat = "[ 1.0] bench: alive\n" if t % 10 == 0 and t < 200 else ""
        reason = watch.step(t, data=data, console=(console_text if t == 30 else "") + beat)
        if reason:
            return t, reason
    return None, None


def test_watch_gives_up_a_soft_lockup_at_once_not_at_the_fragment_limit():
    at, reason = watch_through(recorded("softlockup.console.log"))
    assert at == 30 + l1.FATAL_GRACE
    assert "soft lockup" in reason


def test_watch_gives_up_when_the_heartbeat_stops():
    # Data keeps flowing, but the heartbeats end at t=190.
    at, reason = watch_through("", seconds=400)
    assert at == 190 + l1.HEARTBEAT_LIMIT + 1 and "heartbeat" in reason


def test_watch_gives_up_a_silent_fragment_after_its_limit():
    at, reason = watch_through("", data_every=0, seconds=199)
    assert at == 100 + l1.FRAGMENT_SLACK + 1 and "in fragment f" in reason


def test_watch_lets_a_healthy_l1_run():
    watch = l1.L1Watch({"f": 100}, start=0)
    watch.step(0, data="@@TEST-BEGIN f\n")
    for t in range(1, 150):
        assert watch.step(t, data="x\n" if t % 20 == 0 else "",
                          console="[ 1.0] bench: alive\n" if t % 10 == 0 else "") is None
