"""virtio-net-pci under Linux's own virtio_pci and virtio_net drivers, on the
bench (one guest): the driver binds, the interface has the MAC given with
mac=, its link is up, and the features Linux negotiated are those a peer
without vnet headers gets. No backend: the traffic tests are the network
bench's (test_linux_guests.py); this one proves the device as the driver
sees it.
"""

import re

from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.net import IFACE_OF, wait_for_iface

MAC = "52:54:00:aa:bb:01"

# The interface virtio_net made, whatever other NIC the machine has.
GUEST = (
    IFACE_OF + wait_for_iface("virtio_net") +
    "echo vnet-if=$IF; "
    "echo vnet-mac=$(cat /sys/class/net/$IF/address); "
    "echo vnet-features=$(cat /sys/class/net/$IF/device/features); "
    "lspci -n | grep -i 1af4; "
    # Opening it sends control commands (RX modes, MAC table, VLAN 0),
    # each a kick Linux makes only when the device asks and then spins on.
    "ip link set $IF up; sleep 1; "
    "echo vnet-carrier=$(cat /sys/class/net/$IF/carrier); "
    "ip link set $IF promisc on; ip link set $IF promisc off; "
    "ip link show $IF; echo vnet-done")


def bench_batch(session):
    args = l2_args(GUEST, smp=1, extra=["-d guest_errors", f"-device virtio-net-pci,mac={MAC}"])
    return [Fragment("vnet_probe", f"guest_run net 120 {args}\n", session.our_vmm,
                     limit=180)], {}


def _values(log):
    """The guest's vnet-KEY=VALUE lines, by key."""
    return dict(re.findall(r"^vnet-(\w+)=(\S*)$", log, re.M))


def test_linux_binds_virtio_net(runs):
    guest = expect_guest(runs["vnet_probe"], "net", exit_status=0,
                         contains=[r"1af4:10(41|00)"])
    values = _values(guest.log)
    assert values.get("if"), guest.log
    assert values.get("mac") == MAC, guest.log
    assert values.get("carrier") == "1", guest.log
    assert re.search(r"<[^>]*\bUP\b[^>]*\bLOWER_UP\b[^>]*>", guest.log), guest.log
    assert re.search(r"^vnet-done$", guest.log, re.M), guest.log
    assert "needs a reset" not in guest.log, guest.log


def test_negotiated_features(runs):
    """The features string has one character per bit, '1' if accepted."""
    guest = expect_guest(runs["vnet_probe"], "net", exit_status=0)
    bits = _values(guest.log).get("features", "")
    accepted = {i for i, c in enumerate(bits) if c == "1"}
    # CSUM, MAC, MRG_RXBUF, STATUS, CTRL_VQ, CTRL_RX, CTRL_VLAN, VERSION_1
    assert {0, 5, 15, 16, 17, 18, 19, 32} <= accepted, bits
    # No vnet-header peer: no guest offloads, no TSO.
    assert not accepted & {1, 7, 8, 9, 11, 12}, bits
