"""Network fragments on the bench, shared by the network tests
(test_network.py) and the iperf regression script (scripts/regress/iperf).

Network rule (docs/testing.md): a guest talks only to its host, inside a
network namespace the fragment creates (hostlib.sh's netns_create). Every
VMM of the fragment runs in it, the tap device lives in it, and the host's
tools (iperf3, netxfer, ping) run there through in_netns.
"""

import functools
import re
import subprocess

from . import guest_wait_until

HOST_ADDR = "10.0.2.2"
GUEST_ADDR = "10.0.2.15"
PREFIX = 24

# Guest shell text that defines `ifof DRIVER`: the interfaces that driver
# made, whatever other NIC the guest has.
IFACE_OF = ('ifof() { for d in /sys/class/net/*; do '
            '[ "$(basename "$(readlink $d/device/driver)" 2>/dev/null)" = "$1" ] '
            '&& basename $d; done; }; ')


def wait_for_iface(driver):
    """Guest shell text (after IFACE_OF) that waits until driver has made an
    interface and sets IF to its name."""
    return guest_wait_until(f'[ -n "$(ifof {driver})" ]') + f"IF=$(ifof {driver}); "


# The L2 kit's NIC models and the -device help name of each.
E1000 = "e1000"
VIRTIO = "virtio-net-pci"


def tap_netdev(*, vhost=False, queues=1, poll_us=0):
    """The -netdev value of the fragment's tap device tap0 (poll_us: vhost's
    busy polling, poll-us=)."""
    netdev = "tap,id=n0,ifname=tap0,script=no,downscript=no"
    if vhost:
        netdev += ",vhost=on"
    if queues > 1:
        netdev += f",queues={queues}"
    if poll_us:
        netdev += f",poll-us={poll_us}"
    return netdev


def nic_args(model, netdev, *, mac="52:54:00:12:34:56", queues=1, device_opts=""):
    """-netdev and -device words (shell text) for one NIC on backend netdev.
    With queues > 1 the virtio NIC gets mq=on and 2 * queues + 2 MSI-X
    vectors: one per virtqueue, one for the control queue, one for config."""
    device = f"{model},netdev=n0,mac={mac}"
    if queues > 1:
        device += f",mq=on,vectors={2 * queues + 2}"
    if device_opts:
        device += f",{device_opts}"
    return ["-netdev", netdev, "-device", device]


def tap_script(guest, limit, guest_args, *, multi_queue=False, during="", after=""):
    """A fragment's host side for a guest on tap0: the namespace, the tap
    with the host's address, an iperf3 server, the guest started with
    guest_args (shell text: l2_args' result), then `during` (host commands
    while the guest runs), the wait for its end, and `after`."""
    mq = " multi_queue" if multi_queue else ""
    return f"""netns_create
tap_create tap0 {HOST_ADDR}/{PREFIX}{mq}
in_netns iperf3 -s -D -I "$WORK/iperf.pid"
guest_start {guest} {limit} {guest_args}
{during}
guest_wait {guest}
{after}"""


def iperf_guest_command(*, streams=1, seconds=3, cpu=None):
    """Guest side of an iperf3 pair of runs: guest to host, then host to
    guest (-R), each `seconds` long; on guest CPU `cpu` alone if given."""
    parallel = f" -P{streams}" if streams > 1 else ""
    pinned = f"taskset -c {cpu} " if cpu is not None else ""
    run = f"{pinned}iperf3 -c {HOST_ADDR} -t{seconds} -fm{parallel}"
    return f"{run} && {run} -R"


def iperf_rates(log):
    """Receiver-side Mbit/s of each iperf3 run in a console log, in order:
    a run's [SUM] line when it had parallel streams, else its only one."""
    rates = []
    for run in re.split(r"^Connecting to host", log, flags=re.M)[1:]:
        lines = [line for line in run.splitlines() if line.rstrip().endswith("receiver")]
        summed = [line for line in lines if "[SUM]" in line]
        for line in summed[-1:] or lines[-1:]:
            match = re.search(r"([\d.]+) Mbits/sec", line)
            if match:
                rates.append(float(match.group(1)))
    return rates


@functools.cache
def device_list(vmm):
    """The names `VMM -device help` lists ('' when the VMM cannot say)."""
    try:
        out = subprocess.run([vmm, "-device", "help"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return set(re.findall(r'^name "([^"]+)"', out, re.M))


@functools.cache
def netdev_types(vmm):
    """The backend types `VMM -netdev help` lists, or None when the VMM has
    no such help (ours before its network layer): then nothing is assumed."""
    try:
        proc = subprocess.run([vmm, "-netdev", "help"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return {line.strip() for line in proc.stdout.splitlines()[1:] if line.strip()}


def missing(vmm, models=(), backends=()):
    """Why VMM cannot run a fragment that needs these NIC models and netdev
    backends, or None when it can."""
    devices = device_list(vmm)
    lacking = [m for m in models if m not in devices]
    if lacking:
        return f"{vmm} -device help lists no {', '.join(lacking)} (the NIC branches are not merged)"
    types = netdev_types(vmm)
    lacking = [b for b in backends if types is not None and b not in types]
    if lacking:
        return f"{vmm} -netdev help lists no {', '.join(lacking)}"
    return None
