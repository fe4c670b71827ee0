#!/usr/bin/env python3
"""Issue 10's fio lines for IDE and virtio-blk: our VMM against Debian's
qemu-system-x86_64, side by side in one L1.

  tests/bench/ide_lines.py [--rounds 3] [--runtime 10] [--vmms ours-on,ours-off,ours-nobatch,qemu]
                           [--devices ide,virtio]

A 1-vCPU guest with one disk on a brd RAM disk in L1, `cache=none,aio=native`
on both sides (`if=ide` or `if=virtio`), and in it fio with libaio, direct:
random 4 KiB reads and writes at depth 1, sequential 1 MiB reads and writes
(depth 1 for IDE, whose queue is one command; depth 4 for virtio-blk).
Rounds alternate the VMMs; each prints the medians and ours / QEMU.
Not pass/fail (docs/benchmarks.md).
"""

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/functional"))

import kvmhost  # noqa: E402
from ramdisk_bench import BRD_SETUP, REFERENCE, vmm_configs  # noqa: E402

VMMS = vmm_configs()
DEVICES = {
    "ide": ("/dev/sda", "if=ide", 1),
    "virtio": ("/dev/vda", "if=virtio", 4),
}
# (name, fio --rw, --bs, the figure reported)
JOBS = [("randread-4k", "randread", "4k", "IOPS"), ("randwrite-4k", "randwrite", "4k", "IOPS"),
        ("read-1M", "read", "1M", "MB/s"), ("write-1M", "write", "1M", "MB/s")]
RESULT = re.compile(r"^@@JOB (\S+)\s+(?:read|write): IOPS=([\d.]+)(k?), "
                    r"BW=([\d.]+)([KM]i)B/s", re.M)


def guest_command(device, runtime):
    dev, _, seq_depth = DEVICES[device]
    # Short: the command travels base64-encoded on the kernel command line.
    text = kvmhost.wait_for_disks(dev) + (
        f"F='--filename={dev} --direct=1 --size=96M --runtime={runtime} --time_based "
        "--ioengine=libaio'; j() { echo \"@@JOB $1\"; fio --name=$1 $F --rw=$2 --bs=$3 "
        "--iodepth=$4 | grep -E '(read|write): IOPS='; }; ")
    for name, rw, bs, _ in JOBS:
        text += f"j {name} {rw} {bs} {1 if bs == '4k' else seq_depth}; "
    return text


def figures(log):
    """{job: figure} from one guest's console."""
    found = {}
    for name, iops, kilo, bw, unit in RESULT.findall(log):
        per_second = {"Ki": 1024, "Mi": 1024 * 1024}[unit] * float(bw) / 1e6
        found[name] = float(iops) * (1000 if kilo else 1) if name.endswith("4k") else per_second
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10, help="seconds of each fio job")
    ap.add_argument("--vmms", default="ours-on,ours-off,qemu")
    ap.add_argument("--devices", default="ide,virtio")
    args = ap.parse_args()
    os.environ.setdefault("VMM_TEST_L1_PARALLEL", "1")
    os.environ["BENCH_L1_SMP"] = "1"
    vmms, devices = args.vmms.split(","), args.devices.split(",")
    limit = 300 + len(JOBS) * (args.runtime + 10)
    lines = ["OURS=$VMM", BRD_SETUP]
    runs = []
    for r in range(args.rounds):
        for device in devices:
            for vmm in vmms:
                name = f"r{r}_{device}_{vmm}".replace("-", "_")
                word, machine = VMMS[vmm]
                drive = f'-drive "file=/dev/ram0,format=raw,{DEVICES[device][1]},cache=none,aio=native"'
                guest = kvmhost.l2_args(guest_command(device, args.runtime), smp=1,
                                        initrd="initrd-fio.cpio", extra=[drive])
                lines += [f"VMM={word}; guest_start {name} {limit} {machine} {guest}",
                          f"guest_wait {name}"]
                runs.append((name, device, vmm))
    frag = kvmhost.Fragment("ide_lines", "\n".join(lines), str(REPO / "build/qemu-system-x86_64"),
                            limit=len(runs) * (limit + 30))
    outcome = kvmhost.run_batch([frag], files={"qemu": REFERENCE})["ide_lines"]
    results = {}     # (device, vmm, job) -> [figures]
    for name, device, vmm in runs:
        guest = outcome.guests.get(name)
        for job, value in (figures(guest.log) if guest else {}).items():
            results.setdefault((device, vmm, job), []).append(value)
    print(f"fio, 1 vCPU, brd in L1, cache=none,aio=native, {args.runtime} s per job, "
          f"{args.rounds} rounds ({kvmhost.host_mode()})")
    print("| device | job | unit | " + " | ".join(vmms) + " | " +
          " | ".join(f"{v}/qemu" for v in vmms if v != "qemu") + " |")
    for device in devices:
        for job, _, _, unit in JOBS:
            meds = {v: statistics.median(results[(device, v, job)])
                    for v in vmms if results.get((device, v, job))}
            cells = [f"{' '.join(f'{x:.0f}' for x in results.get((device, v, job), []))} "
                     f"[{meds[v]:.0f}]" if v in meds else "-" for v in vmms]
            ratios = [f"{meds[v] / meds['qemu']:.2f}" if v in meds and meds.get("qemu") else "-"
                      for v in vmms if v != "qemu"]
            print(f"| {device} | {job} | {unit} | " + " | ".join(cells) + " | " +
                  " | ".join(ratios) + " |")
    if not results:
        print(outcome.output[-4000:])


if __name__ == "__main__":
    main()
