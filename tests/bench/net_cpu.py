#!/usr/bin/env python3
"""Where the bench host's CPU goes while iperf3 runs through a NIC.

A 2-vCPU guest runs one iperf3 stream (14 s) through DEVICE on a tap in a
2-vCPU L1, guest to host or host to guest (-R). 4 s into the run and 6 s
later the fragment reads L1's /proc/stat, every thread of the VMM
(/proc/PID/task/*/stat: named with -name debug-threads=on) and iperf3's
and the kernel's ksoftirqd/kworker threads. The report gives, per VMM, the
clock ticks of those 6 s (L1 counts 100 per CPU-second): L1 idle, the L2
guest running, each VMM thread (with its user-space share), the others,
and the guest's interrupts per vCPU over the whole run. With --exits it
counts instead, over the same 6 s, L1 KVM's events for the guest by kind
(tracefs histograms: exits of L2 by SVM exit code, MSR accesses by index,
port and MMIO accesses, injected vectors, exits to user space), so that
two VMMs can be compared exit for exit. The --vmms configurations
alternate in each round (default: ours with device-lock=on against
Debian's QEMU). A probe for finding costs, not pass/fail;
docs/benchmarks.md has its readings.

  tests/bench/net_cpu.py [--device e1000|virtio] [--direction g->h|h->g] [--rounds N]
                         [--vmms ours-on,ours-nopoll,qemu] [--exits]
"""

import argparse
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/functional"))

# One 2-vCPU L1 per batch, so the guest's vCPUs, the VMM's threads and
# iperf3 share two CPUs as in the regression scripts' 2-vCPU rows.
os.environ["BENCH_L1_SMP"] = "2"
os.environ.setdefault("VMM_TEST_L1_PARALLEL", "1")

import kvmhost  # noqa: E402
from kvmhost.net import E1000, GUEST_ADDR, HOST_ADDR, PREFIX, VIRTIO, iperf_rates, \
    nic_args, tap_netdev, tap_script  # noqa: E402

# name: (binary, machine options, NIC options). ours-nopoll is ours with
# virtio-net's transmit polling off (x-tx-poll-ns=0; virtio only).
VMMS = {
    "ours-on": (str(REPO / "build/qemu-system-x86_64"), "-machine pc,device-lock=on", ""),
    "ours-nopoll": (str(REPO / "build/qemu-system-x86_64"), "-machine pc,device-lock=on",
                    "x-tx-poll-ns=0"),
    "qemu": ("/usr/bin/qemu-system-x86_64", "-machine pc", ""),
}
MODELS = {"e1000": E1000, "virtio": VIRTIO}
# /proc/stat's cpu line, in its order.
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest")

# Host side: one snapshot is L1's cpu line, then "T " + each VMM thread's
# stat line and "P " + each other thread of interest. Few forks: on a busy
# nested L1 each one costs the run.
SNAPSHOT = r'''snap() {
    head -1 /proc/stat
    cat /proc/"$(cat "$WORK/net.pid")"/task/*/stat | sed 's/^/T /'
    cat /proc/[0-9]*/stat 2>/dev/null |
        grep -E '[(](iperf3|ksoftirqd/[0-9]+|kworker[^)]*)[)]' | sed 's/^/P /'
}
guest_wait_for net "Connecting to host" 400 && sleep 4 && snap > "$WORK/s0" &&
    sleep 6 && snap > "$WORK/s1"
echo @@SNAP-0; cat "$WORK/s0"; echo @@SNAP-1; cat "$WORK/s1"; echo @@SNAP-END'''


# --exits: a histogram trigger per KVM trace event of L1 (event: its keys),
# set when the window opens, read and removed when it closes. Histograms
# count in the kernel, so the window's cost is one hash update per event,
# not a trace record.
HISTOGRAMS = {
    "kvm_exit": "exit_reason",
    "kvm_msr": "ecx,write",
    "kvm_pio": "port,rw",
    "kvm_mmio": "type,gpa",
    "kvm_inj_virq": "vector",
    "kvm_userspace_exit": "reason",
    "kvm_msi_set_irq": "data",
}
HIST_ON = "".join(f"echo 'hist:keys={keys}' > $T/events/kvm/{event}/trigger\n"
                  for event, keys in HISTOGRAMS.items())
HIST_OFF = "".join(f"echo @@HIST {event}; cat $T/events/kvm/{event}/hist; "
                   f"echo '!hist:keys={keys}' > $T/events/kvm/{event}/trigger\n"
                   for event, keys in HISTOGRAMS.items())
EXITS_WINDOW = f"""T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
guest_wait_for net "Connecting to host" 400 && sleep 4 && {{
{HIST_ON}}} && sleep 6 && {{
{HIST_OFF}}} > "$WORK/hist"
echo @@HISTS; cat "$WORK/hist"; echo @@HISTS-END"""
# SVM exit codes (AMD64 APM vol. 2, appendix C) of the exits a NIC's
# traffic makes; others are shown by number.
SVM_EXITS = {0x60: "INTR", 0x61: "NMI", 0x64: "VINTR", 0x6e: "RDTSC", 0x72: "CPUID",
             0x77: "PAUSE", 0x78: "HLT", 0x7b: "IOIO", 0x7c: "MSR", 0x7f: "SHUTDOWN",
             0x81: "VMMCALL", 0x400: "NPF", 0x401: "AVIC_INCOMPLETE_IPI",
             0x402: "AVIC_NOACCEL"}
# x2APIC and timer MSRs by index, for the MSR histogram.
MSRS = {0x6e0: "TSC_DEADLINE", 0x80b: "x2APIC_EOI", 0x830: "x2APIC_ICR",
        0x838: "x2APIC_TMICT", 0x832: "x2APIC_LVTT", 0x4b564d04: "KVM_PV_EOI_EN",
        0x4b564d02: "KVM_STEAL_TIME", 0x4b564d01: "KVM_SYSTEM_TIME",
        0x4b564d06: "KVM_POLL_CONTROL"}


def fragment(name, vmm, device, direction, exits=False):
    binary, machine, device_opts = VMMS[vmm]
    reverse = " -R" if direction == "h->g" else ""
    # The guest's interrupt counts around the run: which vCPU takes the
    # NIC's interrupts, and how many rescheduling and call IPIs it sends.
    command = (f"cat /proc/interrupts > /tmp/irq0; iperf3 -c {HOST_ADDR} -t14 -fm{reverse}; "
               "echo @@IRQ-0; cat /tmp/irq0; echo @@IRQ-1; cat /proc/interrupts; echo @@IRQ-END")
    args = kvmhost.l2_args(command, smp=2,
                           append=f"kit.ip={GUEST_ADDR}/{PREFIX}",
                           extra=[machine, "-name", "bench,debug-threads=on",
                                  *nic_args(MODELS[device], tap_netdev(),
                                            device_opts=device_opts)])
    during = EXITS_WINDOW if exits else SNAPSHOT
    return kvmhost.Fragment(name, tap_script("net", 500, args, during=during), binary,
                            limit=600)


def parse_snapshot(text):
    """{'cpu': [ticks per CPU_FIELDS], thread name: (user, system) ticks}.
    kworkers are summed under one name; the VMM's threads keep theirs."""
    lines = text.strip().splitlines()
    ticks = {"cpu": [int(x) for x in lines[0].split()[1:len(CPU_FIELDS) + 1]]}
    for line in lines[1:]:
        kind, stat = line.split(" ", 1)
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if kind == "P" and comm.startswith("kworker"):
            comm = "kworker"
        # utime and stime: fields 14 and 15 of the line, 12 and 13 after comm.
        user, system = ticks.get(comm, (0, 0))
        ticks[comm] = (user + int(fields[11]), system + int(fields[12]))
    return ticks


def parse_interrupts(text):
    """{source: [count per CPU]} from the guest's /proc/interrupts."""
    lines = text.strip().splitlines()
    ncpus = len(lines[0].split())
    counts = {}
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        words = rest.split()
        if len(words) < ncpus or not all(w.isdigit() for w in words[:ncpus]):
            continue
        # A numbered line is named by its device (its last word): "25 virtio0-input.0".
        name = name.strip()
        counts[f"{name} {words[-1]}" if name.isdigit() else name] = [int(w) for w in words[:ncpus]]
    return counts


def interrupt_report(log):
    """The guest's interrupts during the run, per vCPU, for the sources that
    fired (NIC queues, IPIs, timers)."""
    found = re.search(r"@@IRQ-0\r?\n(.*)@@IRQ-1\r?\n(.*)@@IRQ-END", log, re.S)
    if not found:
        return "no interrupt counts"
    before, after = parse_interrupts(found.group(1)), parse_interrupts(found.group(2))
    fired = []
    for name, counts in after.items():
        delta = [a - b for a, b in zip(counts, before.get(name, [0] * len(counts)))]
        if sum(delta) > 0:
            fired.append(f"{name} {'/'.join(map(str, delta))}")
    return "guest interrupts per vCPU: " + ", ".join(fired)


def parse_histograms(text):
    """{event: {key tuple: hits}} from the @@HIST sections of the window;
    None for an event whose trigger L1 refused (a key it does not have)."""
    hists = {}
    for section in text.split("@@HIST ")[1:]:
        event, _, body = section.partition("\n")
        if "[active]" not in body:
            hists[event.strip()] = None
            continue
        rows = hists[event.strip()] = {}
        for line in body.splitlines():
            found = re.match(r"\{(.*)\} hitcount:\s*(\d+)", line.strip())
            if found:
                key = tuple(int(v, 0) for v in re.findall(r":\s*(0x[0-9a-f]+|\d+)", found.group(1)))
                rows[key] = int(found.group(2))
    return hists


def name_key(event, key):
    if event == "kvm_exit":
        return SVM_EXITS.get(key[0], hex(key[0]))
    if event == "kvm_msr":
        return f"{MSRS.get(key[0], hex(key[0]))} {'wr' if key[1] else 'rd'}"
    if event == "kvm_pio":       # port/rw, 1 a write
        return f"{hex(key[0])}/{key[1]}"
    if event == "kvm_mmio":      # type@gpa, 2 a write
        return f"{key[0]}@{hex(key[1])}"
    return " ".join(map(str, key))


def guest_and_rate(outcome):
    """The guest's outcome (None if it never ran) and its iperf3 Mbit/s text."""
    guest = outcome.guests.get("net")
    rate = iperf_rates(guest.log) if guest else []
    return guest, f"{rate[0] if rate else 'no'} Mbit/s"


def exits_report(outcome):
    found = re.search(r"@@HISTS\n(.*)@@HISTS-END", outcome.output, re.S)
    guest, rate = guest_and_rate(outcome)
    head = f"{outcome.name}: {rate}"
    if not found or "@@HIST " not in found.group(1):
        return f"{head}; no histograms"
    lines = [head]
    for event, rows in parse_histograms(found.group(1)).items():
        if rows is None:
            lines.append(f"    {event}: not counted (L1 refused the trigger)")
            continue
        top = sorted(rows.items(), key=lambda row: -row[1])[:10]
        lines.append(f"    {event} {sum(rows.values())}: "
                     + ", ".join(f"{name_key(event, key)} {hits}" for key, hits in top))
    return "\n".join(lines) + "\n    " + interrupt_report(guest.log if guest else "")


def report(outcome):
    found = re.search(r"@@SNAP-0\n(.*)@@SNAP-1\n(.*)@@SNAP-END", outcome.output, re.S)
    guest, rate = guest_and_rate(outcome)
    if not found:
        return f"{outcome.name}: no snapshots ({rate})"
    if not found.group(1).startswith("cpu ") or not found.group(2).startswith("cpu "):
        # "cat: can't open": the VMM was gone (the guest reset, L1 died).
        return f"{outcome.name}: a snapshot found no VMM ({rate})"
    before, after = parse_snapshot(found.group(1)), parse_snapshot(found.group(2))
    cpu = dict(zip(CPU_FIELDS, (b - a for a, b in zip(before["cpu"], after["cpu"]))))
    threads = []
    for name in after:
        if name != "cpu":
            user, system = (a - b for a, b in zip(after[name], before.get(name, (0, 0))))
            threads.append((user + system, user, name))
    threads.sort(reverse=True)
    return (f"{outcome.name}: {rate}; ticks: idle {cpu['idle']}, "
            f"guest {cpu['guest']}, user {cpu['user']} (guest included), system "
            f"{cpu['system']}, softirq {cpu['softirq']}\n    "
            + ", ".join(f"{name} {n} ({user} user)" for n, user, name in threads if n > 0)
            + "\n    " + interrupt_report(guest.log if guest else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=sorted(MODELS), default="e1000")
    ap.add_argument("--direction", choices=("g->h", "h->g"), default="h->g")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--vmms", default="ours-on,qemu",
                    help=f"comma-separated, alternating in each round: {', '.join(VMMS)}")
    ap.add_argument("--exits", action="store_true",
                    help="count L1 KVM's events by kind instead of CPU ticks")
    args = ap.parse_args()
    vmms = args.vmms.split(",")
    unknown = [v for v in vmms if v not in VMMS]
    if unknown:
        ap.error(f"unknown VMM {unknown[0]!r} (known: {', '.join(VMMS)})")
    frags = [fragment(f"{r}{i}_{vmm}", vmm, args.device, args.direction, args.exits)
             for r in range(args.rounds) for i, vmm in enumerate(vmms)]
    outcomes = kvmhost.run_batch(frags, logdir=REPO / "build/bench-logs/net_cpu")
    print(f"{args.device}, {args.direction}, 2-vCPU guest in a 2-vCPU L1, 6 s of "
          + ("L1 KVM's events:" if args.exits else "ticks:"))
    for frag in frags:
        print((exits_report if args.exits else report)(outcomes[frag.name]))


if __name__ == "__main__":
    main()
