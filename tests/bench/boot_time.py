#!/usr/bin/env python3
"""Boot time and memory: our VMM against Debian's qemu-system-x86_64.

Both boot the L2 kit (same kernel, initrd and options; QEMU through its
SeaBIOS and linuxboot option ROM, ours directly) on the bench's KVM host,
alternating, R rounds each. Reported: median milliseconds from starting
the VMM to the kit's KIT-READY marker, and the VMM's resident memory at
that moment, with the ratios ours/QEMU. Not a pass/fail test.

  tests/bench/boot_time.py [--rounds R] [--smp N] [--kernel bzImage|vmlinux]

--kernel vmlinux boots the uncompressed kernel through its PVH entry (both
VMMs support it) instead of the bzImage.
"""

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/functional"))

import kvmhost  # noqa: E402

REFERENCE = "/usr/bin/qemu-system-x86_64"
BOOT = re.compile(r"^@@BOOT (\w+) ms=(\d+) rss_kib=(\d+)$", re.M)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--kernel", choices=["bzImage", "vmlinux"], default="bzImage")
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", str(REPO)], check=True, stdout=subprocess.DEVNULL)
    ours = str(REPO / "build/qemu-system-x86_64")
    guest = kvmhost.l2_args(None, smp=args.smp, exit_port=False, kernel=args.kernel)
    lines = ['OURS=$VMM']
    for _ in range(args.rounds):
        for who, vmm in (("ours", '"$OURS"'), ("qemu", '"$BENCH_FILES/qemu"')):
            lines.append(f"VMM={vmm}; guest_measure_boot {who} KIT-READY 120 {guest}")
    frag = kvmhost.Fragment("boot_time", "\n".join(lines), ours, limit=300 * args.rounds)
    outcome = kvmhost.run_batch([frag], files={"qemu": REFERENCE})["boot_time"]
    samples = {}
    for who, ms, rss in BOOT.findall(outcome.output):
        samples.setdefault(who, []).append((int(ms), int(rss)))
    if set(samples) != {"ours", "qemu"}:
        sys.exit(f"missing results; output:\n{outcome.output}")
    med = {who: (statistics.median(m for m, _ in s), statistics.median(r for _, r in s))
           for who, s in samples.items()}
    print(f"boot to KIT-READY on the bench ({kvmhost.host_mode()}), {args.kernel}, "
          f"-smp {args.smp}, {args.rounds} rounds, medians")
    for who in ("ours", "qemu"):
        runs = ", ".join(f"{ms}" for ms, _ in samples[who])
        print(f"  {who:5s} {med[who][0]:7.0f} ms  RSS {med[who][1] / 1024:7.1f} MiB   (ms: {runs})")
    print(f"  ratio ours/qemu: time {med['ours'][0] / med['qemu'][0]:.2f}, "
          f"RSS {med['ours'][1] / med['qemu'][1]:.2f}")


if __name__ == "__main__":
    main()
