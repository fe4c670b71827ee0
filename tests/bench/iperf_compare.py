#!/usr/bin/env python3
"""iperf3 through e1000 and virtio-net: our VMM against Debian's QEMU.

Each cell boots the L2 kit on the bench with one NIC on a tap device in a
network namespace of its own (tests/functional/kvmhost/net.py), and runs
iperf3 guest to host, then host to guest (-R), SECONDS each, against an
iperf3 server in L1. The columns, alternating inside every round: ours with
device-lock=on, ours with device-lock=off, Debian's qemu-system-x86_64 with
the same options. Medians of ROUNDS rounds, in Mbit/s. Not pass/fail.

  tests/bench/iperf_compare.py [--rounds R] [--seconds S] [--smp 1,2]
                               [--configs e1000,virtio,...] [--qemu-only]

Configurations (the seed's ladder, each switch a property of ours):
  e1000            e1000
  e1000-nocoal     e1000,x-coalesced-mmio=off (ours only: QEMU has no switch)
  virtio-slow      virtio-net-pci,ioeventfd=off,x-irqfd=off (QEMU: ioeventfd=off
                   only; it has no irqfd switch)
  virtio           virtio-net-pci, data path in user space
  vhost            virtio-net-pci on tap,vhost=on (the kernel's vhost-net)

Guests with 2 vCPUs run in an L1 with 2 vCPUs (BENCH_L1_SMP=2), the
configuration in which L1 now and then crashes (docs/testing.md); the
harness reruns what did not come back. --qemu-only measures the reference
column alone (a tree without our NICs). One cell costs an L2 boot, about a
minute on the nested bench: the whole table, 3 rounds, takes over an hour.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/functional"))

import kvmhost  # noqa: E402
from kvmhost.net import (E1000, GUEST_ADDR, PREFIX, VIRTIO, iperf_guest_command,  # noqa: E402
                         iperf_rates, missing, nic_args, tap_netdev, tap_script)

REFERENCE = "/usr/bin/qemu-system-x86_64"
OURS = str(REPO / "build/qemu-system-x86_64")

# name: (model, vhost, our device options, QEMU's device options or None)
CONFIGS = {
    "e1000": (E1000, False, "", ""),
    "e1000-nocoal": (E1000, False, "x-coalesced-mmio=off", None),
    "virtio-slow": (VIRTIO, False, "ioeventfd=off,x-irqfd=off", "ioeventfd=off"),
    "virtio": (VIRTIO, False, "", ""),
    "vhost": (VIRTIO, True, "", ""),
}
COLUMNS = ("ours-on", "ours-off", "qemu")
LOCK_STATS = re.compile(r"^lock statistics \(device-lock=\w+\):\n(?:  .*\n)+", re.M)


def cell_fragment(round_, config, smp, column, seconds):
    model, vhost, ours_opts, qemu_opts = CONFIGS[config]
    ours = column.startswith("ours")
    extra = nic_args(model, tap_netdev(vhost=vhost), device_opts=ours_opts if ours else qemu_opts)
    if ours:
        extra = [f"-machine pc,device-lock={column[5:]},lock-stats=on", *extra]
    args = kvmhost.l2_args(iperf_guest_command(seconds=seconds), smp=smp, extra=extra,
                           append=f"kit.ip={GUEST_ADDR}/{PREFIX}")
    return kvmhost.Fragment(f"r{round_}_{config}_smp{smp}_{column}", tap_script("net", 240, args),
                            OURS if ours else REFERENCE, limit=300)


def columns_for(config, qemu_only):
    if qemu_only:
        return ["qemu"] if CONFIGS[config][3] is not None else []
    return [c for c in COLUMNS if c != "qemu" or CONFIGS[config][3] is not None]


def run(args, smp):
    frags = [cell_fragment(r, config, smp, column, args.seconds)
             for r in range(args.rounds) for config in args.configs
             for column in columns_for(config, args.qemu_only)]
    if not frags:
        return {}
    # A measurement wants the machine: one L1, with as many vCPUs as the guest.
    os.environ["BENCH_L1_SMP"] = str(smp)
    return kvmhost.run_batch(frags, mode="nested")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--smp", default="1,2")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--qemu-only", action="store_true")
    args = ap.parse_args()
    args.configs = args.configs.split(",")
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown:
        sys.exit(f"--configs: unknown {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    os.environ["VMM_TEST_L1_PARALLEL"] = "1"
    if not args.qemu_only:
        subprocess.run(["make", "-s", "-C", str(REPO)], check=True, stdout=subprocess.DEVNULL)
        reason = missing(OURS, [CONFIGS[c][0] for c in args.configs], ["tap"])
        if reason:
            sys.exit(f"{reason}; --qemu-only measures the reference column alone")

    samples, stats = {}, {}
    for smp in (int(s) for s in args.smp.split(",")):
        for name, outcome in run(args, smp).items():
            _, config, smp_word, column = name.split("_")
            guest = outcome.guests.get("net")
            rates = iperf_rates(guest.log) if guest else []
            if len(rates) != 2:
                print(f"no result from {name} (see build/test-logs)", file=sys.stderr)
                continue
            for direction, rate in zip(("g->h", "h->g"), rates):
                samples.setdefault((config, smp, direction, column), []).append(rate)
            if smp == 2 and column.startswith("ours"):
                stats[column] = LOCK_STATS.search(guest.log + "\n")

    shown = [c for c in COLUMNS if any(k[3] == c for k in samples)]
    print(f"iperf3 Mbit/s on the bench, medians of {args.rounds} rounds, "
          f"{args.seconds} s per run (- : no result or no such switch)")
    print("| config | vCPUs | direction | " + " | ".join(shown) + " |")
    print("|---|---|---|" + "---|" * len(shown))
    for config in args.configs:
        for smp in (int(s) for s in args.smp.split(",")):
            for direction in ("g->h", "h->g"):
                cells = []
                for column in shown:
                    values = samples.get((config, smp, direction, column))
                    cells.append(f"{statistics.median(values):.0f}" if values else "-")
                print(f"| {config} | {smp} | {direction} | " + " | ".join(cells) + " |")
    for column, match in sorted(stats.items()):
        if match:
            print(f"\n{column}, 2 vCPUs, last run:\n{match.group(0)}")


if __name__ == "__main__":
    main()
