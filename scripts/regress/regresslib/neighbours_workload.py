"""Busy neighbours (the seed's "several busy devices on an SMP guest"):
iperf3 through virtio-net and random 4 KiB reads on IDE at the same time on
a 2-vCPU guest (and 4 where the host allows), each against running alone.

Every guest has both devices; three runs per configuration, each its own
boot so that our lock statistics (lock-stats=on, printed at exit) belong
to one of them: "net" (iperf3 alone), "disk" (fio alone), "both" (the two
at once, for the same time). The kept fraction is the median at once over
the median alone: how much of its throughput a device keeps while the
other one is busy.
"""

import re

from . import matrix  # noqa: F401  (first: it puts the bench harness, kvmhost, on sys.path)
import kvmhost  # noqa: E402
from kvmhost.net import GUEST_ADDR, HOST_ADDR, PREFIX, VIRTIO, iperf_rates, nic_args, \
    tap_netdev, tap_script

from .report import lock_table, number, ratio
from .tiobench_workload import DISK_SETUP, DRIVE

DEVICES = {"net": ("net",), "disk": ("disk",), "both": ("net", "disk")}
METRICS = {"Mbit/s": {"better": "higher"}, "IOPS": {"better": "higher"}}
UNIT = {"net": "Mbit/s", "disk": "IOPS"}
# "  read: IOPS=359, BW=1437KiB/s (1472kB/s)(14.0MiB/10001msec)"
FIO_IOPS = re.compile(r"^\s*read: IOPS=([\d.]+)(k?)", re.M)


def guest_command(tests, seconds):
    net = f"iperf3 -c {HOST_ADDR} -t{seconds} -fm"
    disk = (kvmhost.wait_for_disks("/dev/sda") +
            f"fio --name=randread --filename=/dev/sda --direct=1 --rw=randread --bs=4k "
            f"--ioengine=psync --runtime={seconds} --time_based | grep 'IOPS='")
    if tests == ("net",):
        return net
    if tests == ("disk",):
        return disk
    # Both at once; iperf3's report waits in a file so that the two do not
    # interleave on the console.
    return f"{net} > /tmp/net.log & {disk}; wait; cat /tmp/net.log"


class Neighbours:
    tool = "neighbours"
    guest = "busy"
    devices = DEVICES
    default_devices = ["net", "disk", "both"]
    default_vcpus = [2, 4]
    metrics = METRICS
    headline = ["Mbit/s", "IOPS"]
    files = {}

    def add_arguments(self, ap):
        pass

    def configure(self, args):
        # The script's own run length (iperf's --seconds, tiobench's --runtime).
        seconds = getattr(args, "seconds", None) or getattr(args, "runtime", 10)
        self.seconds = min(seconds, 5) if args.quick else max(seconds, 10)
        return {"seconds": self.seconds}

    def supports(self, device, vmm):
        return True

    def expected(self, run):
        return [(test, UNIT[test]) for test in DEVICES[run.device]]

    def fragment(self, run):
        tests = DEVICES[run.device]
        extra = [run.machine, *nic_args(VIRTIO, tap_netdev()), f'-drive "{DRIVE},if=ide"']
        args = kvmhost.l2_args(guest_command(tests, self.seconds), smp=run.vcpus,
                               initrd="initrd-fio.cpio", append=f"kit.ip={GUEST_ADDR}/{PREFIX}",
                               extra=extra)
        limit = 240 + 2 * self.seconds
        return kvmhost.Fragment(run.name, DISK_SETUP + tap_script(self.guest, limit, args),
                                run.binary, limit=limit + 60)

    def parse(self, run, log):
        figures = {}
        rates = iperf_rates(log)
        if "net" in DEVICES[run.device] and rates:
            figures[("net", "Mbit/s")] = rates[0]
        found = FIO_IOPS.search(log)
        if "disk" in DEVICES[run.device] and found:
            figures[("disk", "IOPS")] = float(found[1]) * (1000 if found[2] else 1)
        return figures

    def summary(self, doc):
        """{"kept": rows}: per vCPUs and VMM, each device's median at once
        over its median alone."""
        medians = {(c["device"], c["vcpus"], c["test"], c["vmm"]): c["median"]
                   for c in doc["cells"]}
        kept = []
        for (device, vcpus, test, vmm), together in medians.items():
            alone = medians.get((test, vcpus, test, vmm))
            if device == "both":
                kept.append({"vcpus": vcpus, "vmm": vmm, "test": test, "alone": alone,
                             "together": together,
                             "kept": together / alone if together and alone else None})
        return {"kept": kept}

    def report(self, doc):
        lines = ["Kept fraction (at once / alone, medians):",
                 "| vCPUs | VMM | device | alone | at once | kept |", "|---|---|---|---|---|---|"]
        for row in doc["kept"]:
            lines.append(f"| {row['vcpus']} | {row['vmm']} | {row['test']} | "
                         f"{number(row['alone'])} | {number(row['together'])} | "
                         f"{ratio(row['kept'])} |")
        return "\n".join(lines) + "\n\nContended locks, run by run:\n" + lock_table(doc)
