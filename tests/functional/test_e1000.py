"""Linux's own e1000 driver on our 82540EM, on the bench (one batch): the
driver probes it (EEPROM checksum and MAC, PHY), eth0 has the MAC given
with mac=, its link comes up at 1000 Mb/s full duplex (LSC, the watchdog,
the PHY's auto-negotiation), and frames it sends complete (the TX ring's
write-back and interrupts) without a TX hang; with device-lock on and with
coalesced MMIO and deferred TX off in the global-lock mode.

No backend: what the NIC sends is dropped, as on an unplugged cable. The
network tests with a peer (tap, ping, TCP transfers, iperf3) are
test_network's."""

import re

import pytest

import kvmhost
from kvmhost import Fragment, expect_guest, l2_args

MAC = "52:54:00:ab:cd:ef"

PROBE = (
    kvmhost.guest_wait_until("[ -e /sys/class/net/eth0 ]") +
    "lspci -n | grep 8086:100e; "
    "echo driver=$(basename $(readlink /sys/class/net/eth0/device/driver)); "
    "echo mac=$(cat /sys/class/net/eth0/address); "
    "ip link set eth0 up; "
    + kvmhost.guest_wait_until('[ "$(cat /sys/class/net/eth0/carrier)" = 1 ]') +
    "echo carrier=$(cat /sys/class/net/eth0/carrier); "
    "echo speed=$(cat /sys/class/net/eth0/speed) duplex=$(cat /sys/class/net/eth0/duplex); "
    "ip addr add 10.0.2.15/24 dev eth0; "
    "ping -c 20 -i 0.2 -W 1 10.0.2.2 > /dev/null 2>&1; "
    "echo tx_packets=$(cat /sys/class/net/eth0/statistics/tx_packets); "
    "dmesg | grep -iE 'e1000|eth0' | grep -iE 'hang|error|invalid|link is up'; "
    "exit 0")


def probe(name, vmm, *, lock, dev_opts=""):
    args = l2_args(PROBE, smp=2, extra=[f"-machine pc,device-lock={lock},lock-stats=on",
                                        f"-device e1000,mac={MAC}{dev_opts}"])
    return Fragment(name, f"guest_run nic 150 {args}", vmm, limit=180)


def bench_batch(session):
    our_vmm = session.our_vmm
    return [
        probe("e1000_on", our_vmm, lock="on"),
        probe("e1000_off_plain", our_vmm, lock="off",
              dev_opts=",x-coalesced-mmio=off,x-tx-defer=off"),
    ], {}


@pytest.mark.parametrize("name", ["e1000_on", "e1000_off_plain"])
def test_linux_e1000_probes_and_links(runs, name):
    guest = expect_guest(runs[name], "nic", exit_status=0,
                         contains=[r"8086:100e \(rev 03\)", "^driver=e1000$", f"^mac={MAC}$",
                                   "^carrier=1$", "^speed=1000 duplex=full$",
                                   "NIC Link is Up 1000 Mbps Full Duplex"])
    assert not re.search(r"(?i)tx unit hang|checksum is not valid|invalid mac", guest.log), guest.log
    # ARP requests for the absent peer: sent, written back, counted.
    assert int(re.search(r"^tx_packets=(\d+)$", guest.log, re.M).group(1)) >= 3, guest.log
    stats = dict(re.findall(r"^\s+(\S+)\s+\S+\s+(\d+)\s+\d+\s+[\d.]+$", guest.log, re.M))
    if name == "e1000_on":
        assert int(stats.get("e1000.0", 0)) > 0, guest.log
