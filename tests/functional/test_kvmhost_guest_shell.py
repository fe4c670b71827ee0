"""Guest shell text the harness builds, run by a local busybox-like sh."""

import subprocess
import time

import pytest

import kvmhost


def run_sh(text, timeout=20):
    return subprocess.run(["sh", "-c", text], capture_output=True, text=True, timeout=timeout)


def test_wait_keeps_the_callers_loop_counter():
    # The disk soak's rounds: a loop on $i around a wait for the disk.
    # With a wait that reused $i it never ended.
    step = kvmhost.guest_wait_until("[ -e /dev/null ]") + "echo round"
    out = run_sh(f"i=0; while [ $i -lt 3 ]; do {step}; i=$((i + 1)); done; echo done")
    assert out.stdout.split() == ["round", "round", "round", "done"]


def test_wait_until_waits_for_its_condition(tmp_path):
    flag = tmp_path / "flag"
    started = time.monotonic()
    out = run_sh(f"( sleep 0.5; touch {flag} ) & " + kvmhost.guest_wait_until(f"[ -e {flag} ]")
                 + f"[ -e {flag} ] && echo seen=yes")
    assert out.stdout.strip() == "seen=yes"
    assert time.monotonic() - started >= 0.4


def test_wait_until_gives_up_after_ten_seconds():
    started = time.monotonic()
    out = run_sh(kvmhost.wait_for_disks("/dev/no-such-disk") + "echo gave-up")
    assert out.stdout.strip() == "gave-up"
    assert 9 <= time.monotonic() - started < 19


def _append_length(args_text):
    """The length of the -append argument that args_text (l2_args' shell
    text) gives the VMM, with hostlib.sh's kit_cmd run as L1 runs it."""
    out = run_sh(f'. "{kvmhost.HOSTLIB}"; KIT=/kit; set -- {args_text}; '
                 'while [ "$1" != -append ]; do shift; done; printf %s "$2" | wc -c')
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_guest_command_over_linuxs_command_line_is_refused():
    # A kit.cmd Linux cut short left the kit's init waiting for ever (a
    # virtio-blk fragment, killed at its limit after printing nothing).
    base = _append_length(kvmhost.l2_args(""))
    longest = "x" * ((kvmhost.MAX_CMDLINE - base) // 4 * 3)
    assert _append_length(kvmhost.l2_args(longest)) <= kvmhost.MAX_CMDLINE
    with pytest.raises(ValueError, match="command line would be"):
        kvmhost.l2_args(longest + "xxx")
