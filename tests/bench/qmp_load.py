#!/usr/bin/env python3
"""Does monitor traffic slow the guest? The exit round trip and the PM-timer
read cost with and without a QMP client polling query-status and
x-query-device-locks 100 times a second, side by side.

The tiny multiboot guest (tests/functional/tiny) times N port and MMIO
writes that exit to user space ("bench=pio:N,mmio:N") and N PM-timer reads
("pmbench=N") with its TSC, on the local /dev/kvm. Each round runs the VMM
twice, quiet then polled (the order alternates between rounds so machine
noise hits both alike); the report gives the medians and polled/quiet.
Local only: the bench's L1 has no Python for the poller. Not pass/fail.

  tests/bench/qmp_load.py [--exits N] [--rounds R] [--hz F] [--sandbox]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/functional"))

from exit_cost import build  # noqa: E402
from qmp_client import QMPClient  # noqa: E402

BENCH = re.compile(r"tiny: bench ([\w-]+) exits=(\d+) cycles=(0x[0-9a-f]+)")
PMBENCH = re.compile(r"tiny: pmbench idle reads=(\d+) cycles=(0x[0-9a-f]+)")


def poll(sock, hz, stop, counts):
    """query-status and x-query-device-locks, each hz times a second."""
    client = QMPClient.wait_connect(sock)
    client.negotiate()
    period = 1.0 / hz
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            client.cmd("query-status")
            client.cmd("x-query-device-locks")
        except (ConnectionError, OSError):
            break       # the guest finished and the VMM went away
        counts[0] += 1
        next_at += period
        stop.wait(max(0.0, next_at - time.monotonic()))
    client.close()


def run_once(vmm, elf, exits, polled, hz, sandbox):
    """{kind: cycles per operation} of one boot."""
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "qmp.sock")
        cmd = [str(vmm), "-accel", "kvm", "-m", "64M", "-smp", "2", "-nographic",
               "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
               "-qmp", f"unix:{sock},server=on,wait=off", "-kernel", str(elf),
               "-append", f"bench=pio:{exits},mmio:{exits} pmbench={exits} exit=0"]
        if sandbox:
            cmd += ["-sandbox", "on"]
        vm = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True)
        stop, counts = threading.Event(), [0]
        poller = None
        if polled:
            poller = threading.Thread(target=poll, args=(sock, hz, stop, counts), daemon=True)
            poller.start()
        out, _ = vm.communicate(timeout=600)
        stop.set()
        if poller:
            poller.join(timeout=10)
            if counts[0] == 0:
                raise RuntimeError("the poller never got an answer")
    results = {}
    for kind, n, cycles in BENCH.findall(out):
        results[kind] = int(cycles, 16) / int(n)
    for n, cycles in PMBENCH.findall(out):
        results["pmtimer"] = int(cycles, 16) / int(n)
    if set(results) != {"pio", "mmio", "pmtimer"}:
        raise RuntimeError(f"incomplete guest output:\n{out}")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exits", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--hz", type=float, default=100.0)
    ap.add_argument("--sandbox", action="store_true", help="both runs under -sandbox on")
    args = ap.parse_args()
    vmm, _, tiny = build()
    elf = tiny / "tiny.elf"
    samples = {}
    for round_ in range(args.rounds):
        order = (False, True) if round_ % 2 == 0 else (True, False)
        for polled in order:
            for kind, value in run_once(vmm, elf, args.exits, polled, args.hz,
                                        args.sandbox).items():
                samples.setdefault((kind, polled), []).append(value)
    print(f"guest cost with and without QMP polling ({args.hz:g} Hz query-status + "
          f"x-query-device-locks), local /dev/kvm, {args.exits} operations x {args.rounds} "
          "rounds, median TSC cycles per operation (min-max)")
    for kind in ("pio", "mmio", "pmtimer"):
        quiet, polled = samples[(kind, False)], samples[(kind, True)]
        mq, mp = statistics.median(quiet), statistics.median(polled)
        print(f"  {kind:8s} quiet {mq:9.0f} ({min(quiet):.0f}-{max(quiet):.0f})  "
              f"polled {mp:9.0f} ({min(polled):.0f}-{max(polled):.0f})  polled/quiet {mp / mq:.3f}")


if __name__ == "__main__":
    main()
