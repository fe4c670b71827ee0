"""Guest shell text the harness builds, run by a local busybox-like sh."""

import subprocess
import time

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
