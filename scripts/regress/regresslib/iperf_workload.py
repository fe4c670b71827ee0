"""iperf3 through the NICs: TCP with 1 and 4 streams (-P 4, as the seed
ran), guest to host and host to guest (-R), against an iperf3 server on
the bench host, over a tap device in a network namespace of the run's own
(tests/functional/kvmhost/net.py: the network tests' harness)."""

from . import matrix  # noqa: F401  (first: it puts the bench harness, kvmhost, on sys.path)
import kvmhost  # noqa: E402
from kvmhost.net import E1000, GUEST_ADDR, PREFIX, VIRTIO, iperf_guest_command, iperf_rates, \
    nic_args, tap_netdev, tap_script

# name: (model, the tap's options (tap_netdev's), our device options,
# QEMU's device options or None when QEMU has no such switch). The first
# three are the regression matrix; the rest are the seed's ladder of
# switches and our own (ask for them with --devices).
VHOST = {"vhost": True}
DEVICES = {
    "e1000": (E1000, {}, "", ""),
    "virtio": (VIRTIO, {}, "", ""),
    "vhost": (VIRTIO, VHOST, "", ""),
    "e1000-nocoal": (E1000, {}, "x-coalesced-mmio=off", None),
    "virtio-slow": (VIRTIO, {}, "ioeventfd=off,x-irqfd=off", "ioeventfd=off"),
    # The e1000 with the tap's offloads left off, as QEMU's e1000 has them.
    "e1000-nooffload": (E1000, {}, "x-host-offloads=off", None),
    # virtio-net copying every received frame twice, as QEMU's does.
    "virtio-copy": (VIRTIO, {}, "x-rx-in-place=off", None),
    # virtio-net asking for a kick as soon as its transmitq is empty, as
    # QEMU's does (no transmit polling).
    "virtio-nopoll": (VIRTIO, {}, "x-tx-poll-ns=0", None),
    # vhost's kernel worker polling each ring for 50 us (poll-us=, QEMU's too).
    "vhost-poll": (VIRTIO, {**VHOST, "poll_us": 50}, "", ""),
}
DIRECTIONS = ("g->h", "h->g")

# --pin: where the guest runs iperf3 and takes the NIC's interrupts, on a
# guest of 2 vCPUs or more (a 1-vCPU guest has no choice). "none" leaves
# both to the guest's scheduler and its IRQ placement, which differ from
# boot to boot; "same" puts both on vCPU 0, "split" the
# interrupts on vCPU 0 and iperf3 on vCPU 1. The interrupts are the NIC's
# lines in /proc/interrupts: e1000's carries the interface's name,
# virtio-net's one per queue (virtioN-input.Q, virtioN-output.Q).
PIN_CPU = {"none": None, "same": 0, "split": 1}
NIC_IRQS_TO_CPU0 = (
    "irqs=$(grep -E ' (eth0|virtio[0-9]+-(input|output)[.][0-9]+)$' /proc/interrupts | cut -d: -f1)"
    " && [ -n \"$irqs\" ] && echo nic-irqs-on-cpu0: $irqs"
    " && for irq in $irqs; do echo 1 > /proc/irq/$irq/smp_affinity || exit 1; done")


class Iperf:
    tool = "iperf"
    guest = "net"
    devices = DEVICES
    default_devices = ["e1000", "virtio", "vhost"]
    default_vcpus = [1, 2, 4]
    metrics = {"Mbit/s": {"better": "higher"}}
    headline = ["Mbit/s"]
    files = {}

    def add_arguments(self, ap):
        ap.add_argument("--seconds", type=int, default=5, help="seconds per iperf3 run (5)")
        ap.add_argument("--streams", default="1,4", help="parallel streams per run (1,4)")
        ap.add_argument("--pin", choices=sorted(PIN_CPU), default="none",
                        help="guests of 2+ vCPUs: the NIC's interrupts on vCPU 0 and iperf3 "
                             "on vCPU 0 (same) or 1 (split); none: as the guest places them "
                             "(none)")

    def configure(self, args):
        if args.quick:
            args.seconds, args.streams = min(args.seconds, 3), "1"
        self.seconds = args.seconds
        self.streams = [int(s) for s in args.streams.split(",")]
        self.pin = args.pin
        return {"seconds": self.seconds, "streams": self.streams, "pin": self.pin}

    def summary(self, doc):
        return {}

    def supports(self, device, vmm):
        return vmm != "qemu" or DEVICES[device][3] is not None

    def tests(self):
        return [f"tcp-{s} {d}" for s in self.streams for d in DIRECTIONS]

    def expected(self, run):
        return [(test, "Mbit/s") for test in self.tests()]

    def fragment(self, run):
        model, tap, ours_opts, qemu_opts = DEVICES[run.device]
        opts = qemu_opts if run.vmm == "qemu" else ours_opts
        cpu = PIN_CPU[self.pin] if run.vcpus > 1 else None
        runs = [iperf_guest_command(streams=s, seconds=self.seconds, cpu=cpu) for s in self.streams]
        command = " && ".join(([NIC_IRQS_TO_CPU0] if cpu is not None else []) + runs)
        args = kvmhost.l2_args(command, smp=run.vcpus, append=f"kit.ip={GUEST_ADDR}/{PREFIX}",
                               extra=[run.machine, *nic_args(model, tap_netdev(**tap),
                                                             device_opts=opts)])
        # A boot (a minute or more on a busy nested bench) and 2 runs per stream count.
        limit = 240 + len(self.streams) * 2 * (self.seconds + 15)
        return kvmhost.Fragment(run.name, tap_script(self.guest, limit, args), run.binary,
                                limit=limit + 60)

    def parse(self, run, log):
        return {(test, "Mbit/s"): rate for test, rate in zip(self.tests(), iperf_rates(log))}

    def report(self, doc):
        return ""
