#!/usr/bin/env python3
"""Exit round-trip cost: our VMM, the bare KVM_RUN loop and Debian's QEMU,
side by side, for exits to user space, exits KVM handles itself, and the
fast paths (ioeventfd doorbells, coalesced writes).

The tiny multiboot guest makes N writes of each kind, timing them with its
TSC (tests/functional/tiny, "bench=KIND:N,..."):

  pio, mmio            exits to user space: COM1's scratch register (under
                       the serial port's device lock), an unassigned address
  kpio, kmmio          exits KVM handles in the kernel: the PIC's mask
                       register, the IOAPIC's index register
  pdl-doorbell-*       pdl-testdev's doorbell, an ioeventfd (ours only), as
                       the device has it: the main loop consumes every
                       signal
  pdl-array-*          pdl-testdev's coalesced array (ours only)
  pci-eventfd-*        QEMU's pci-testdev wildcard-eventfd tests: ioeventfds
                       under both VMMs
  pci-user-*           its no-eventfd tests: exits to user space

kvm-exit-bare runs the same guest with the least possible user space (pio,
mmio, kpio, kmmio only). Rounds alternate between the three so that machine
noise hits them alike; the report gives medians and, for each fast path,
the ratio to KVM's own exit of the same kind and to an exit to user space.
Not a pass/fail test.

  tests/bench/exit_cost.py [--exits N] [--rounds R] [--nested] [--sandbox]

--nested runs the comparison inside the bench's L1 host (real SVM, nested
paging) instead of on the local /dev/kvm. --sandbox adds our VMM under
-sandbox on as a fourth column (docs/sandbox.md: what the filters cost).
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

REFERENCE = "/usr/bin/qemu-system-x86_64"
BENCH_LINE = re.compile(r"tiny: bench ([\w-]+) exits=(\d+) cycles=(0x[0-9a-f]+)")

BASE_KINDS = ["pio", "mmio", "kpio", "kmmio"]
PCI_KINDS = ["pci-eventfd-pio", "pci-eventfd-mmio", "pci-user-pio", "pci-user-mmio"]
PDL_KINDS = ["pdl-doorbell-pio", "pdl-doorbell-mmio", "pdl-array-pio", "pdl-array-mmio"]
KINDS = {"ours": BASE_KINDS + PDL_KINDS + PCI_KINDS,
         "bare": BASE_KINDS,
         "qemu": BASE_KINDS + PCI_KINDS}
# The fast paths, each against KVM's own exit and an exit to user space of
# the same kind (port or memory).
FAST_PATHS = ["pdl-doorbell-pio", "pdl-doorbell-mmio", "pdl-array-pio", "pdl-array-mmio",
              "pci-eventfd-pio", "pci-eventfd-mmio"]


def build():
    subprocess.run(["make", "-s", "-C", str(REPO)], check=True, stdout=subprocess.DEVNULL)
    tiny = REPO / "build" / "tiny"
    tiny.mkdir(parents=True, exist_ok=True)
    subprocess.run(["make", "-s", "-C", str(REPO / "tests/functional/tiny"), f"OUT={tiny}"],
                   check=True)
    return REPO / "build/qemu-system-x86_64", REPO / "build/tests/bench/kvm-exit-bare", tiny


def command(who, exits):
    append = "bench=" + ",".join(f"{kind}:{exits}" for kind in KINDS[who]) + " exit=0"
    # -cpu host: the same CPUID as the bare loop, which passes KVM's on.
    vm = ("-accel kvm -cpu host -m 64M -nographic -no-reboot "
          "-device isa-debug-exit,iobase=0xf4,iosize=4 -device pci-testdev "
          f"""-kernel "$BENCH_FILES/tiny.elf" -append '{append}'""")
    if who == "ours":
        return f'"$VMM" {vm} -device pdl-testdev'
    if who == "sandbox":
        return f'"$VMM" {vm} -device pdl-testdev -sandbox on'
    if who == "qemu":
        return f'"$BENCH_FILES/qemu" {vm}'
    return f""""$BENCH_FILES/kvm-exit-bare" "$BENCH_FILES/tiny.elf" 'tiny.elf {append}' 64"""


def fragments(vmm, exits, rounds):
    """One fragment per round, the three VMMs in turn: the bench's L1 has
    been seen to crash under load, and the harness then reruns only the
    rounds that did not come back."""
    return [kvmhost.Fragment(f"exits{round_}",
                             "\n".join(f"echo @{who}; {command(who, exits)}" for who in KINDS),
                             str(vmm), limit=900, up_marker=None)
            for round_ in range(rounds)]


def parse(output):
    """{(who, kind): [cycles per write, ...]} from a fragment's output."""
    results, who = {}, None
    for line in output.splitlines():
        if line.startswith("@"):
            who = line[1:].strip()
        m = BENCH_LINE.search(line)
        if m and who:
            kind, exits, cycles = m.group(1), int(m.group(2)), int(m.group(3), 16)
            results.setdefault((who, kind), []).append(cycles / exits)
    return results


def report(results):
    medians = {key: statistics.median(values) for key, values in results.items()}
    columns = [who for who in ("ours", "sandbox", "bare", "qemu") if who in KINDS]
    print(f"  {'kind':18s} " + " ".join(f"{who:>9s}" for who in columns))
    for kind in KINDS["ours"]:
        cells = [f"{medians[(who, kind)]:9.0f}" if (who, kind) in medians else f"{'-':>9s}"
                 for who in columns]
        print(f"  {kind:18s} {' '.join(cells)}")
    print("  fast path / KVM's own exit (kpio, kmmio) and / exit to user space (pio, mmio),"
          " each VMM against itself")
    for who in ("ours", "qemu"):
        for kind in FAST_PATHS:
            if (who, kind) not in medians:
                continue
            port = kind.endswith("-pio")
            kernel = medians.get((who, "kpio" if port else "kmmio"))
            user = medians.get((who, "pio" if port else "mmio"))
            if kernel and user:
                fast = medians[(who, kind)]
                print(f"  {who:4s} {kind:18s} {fast / kernel:6.2f}x kernel exit"
                      f"  {fast / user:6.2f}x user exit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exits", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--nested", action="store_true")
    ap.add_argument("--sandbox", action="store_true")
    args = ap.parse_args()
    if args.sandbox:
        KINDS["sandbox"] = KINDS["ours"]
    # A measurement wants the machine to itself: one L1 at a time.
    os.environ.setdefault("VMM_TEST_L1_PARALLEL", "1")
    vmm, bare, tiny = build()
    files = {"kvm-exit-bare": bare, "tiny.elf": tiny / "tiny.elf", "qemu": REFERENCE}
    outcomes = kvmhost.run_batch(fragments(vmm, args.exits, args.rounds),
                                 mode="nested" if args.nested else "direct", files=files)
    results = {}
    for outcome in outcomes.values():
        for key, values in parse(outcome.output).items():
            results.setdefault(key, []).extend(values)
    where = "nested L1 (SVM)" if args.nested else "local /dev/kvm"
    print(f"exit round trip, {where}, {args.exits} writes x {args.rounds} rounds, "
          f"median TSC cycles per write")
    report(results)


if __name__ == "__main__":
    main()
