"""The network harness's helpers (kvmhost/net.py), no guest needed: iperf3
output parsed as the tests read it, and what a VMM's help says it has."""

import stat

from kvmhost.net import iperf_rates, missing, nic_args, tap_netdev

# A guest console: a single stream, then 2 parallel streams with -R.
IPERF_LOG = """\
Connecting to host 10.0.2.2, port 5201
[  5] local 10.0.2.15 port 43840 connected to 10.0.2.2 port 5201
[  5]   0.00-1.00   sec  10.0 MBytes  83.9 Mbits/sec    0   38.2 KBytes
[  5]   0.00-3.00   sec  30.0 MBytes  83.0 Mbits/sec    0             sender
[  5]   0.00-3.05   sec  29.9 MBytes  82.1 Mbits/sec                  receiver

iperf Done.
Connecting to host 10.0.2.2, port 5201
Reverse mode, remote host 10.0.2.2 is sending
[  5]   0.00-3.00   sec  12.0 MBytes  33.3 Mbits/sec    1             sender
[  5]   0.00-3.00   sec  11.9 MBytes  33.1 Mbits/sec                  receiver
[  7]   0.00-3.00   sec  12.0 MBytes  33.3 Mbits/sec    1             sender
[  7]   0.00-3.00   sec  11.9 MBytes  33.2 Mbits/sec                  receiver
[SUM]   0.00-3.00   sec  24.0 MBytes  66.6 Mbits/sec    2             sender
[SUM]   0.00-3.00   sec  23.8 MBytes  66.3 Mbits/sec                  receiver
"""


def test_iperf_rates_reads_each_runs_receiver_side():
    assert iperf_rates(IPERF_LOG) == [82.1, 66.3]


def test_iperf_run_that_never_ended_gives_no_rate():
    cut = IPERF_LOG.split("iperf Done.")[0] + "Connecting to host 10.0.2.2, port 5201\n"
    assert iperf_rates(cut) == [82.1]


def test_nic_args_multiqueue_gets_vectors_for_every_queue():
    assert nic_args("virtio-net-pci", tap_netdev(vhost=True, queues=2), queues=2) == [
        "-netdev", "tap,id=n0,ifname=tap0,script=no,downscript=no,vhost=on,queues=2",
        "-device", "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,mq=on,vectors=6"]


def test_tap_netdev_with_vhost_polling():
    assert tap_netdev(vhost=True, poll_us=50) == \
        "tap,id=n0,ifname=tap0,script=no,downscript=no,vhost=on,poll-us=50"


def _fake_vmm(tmp_path, devices, netdev_help):
    vmm = tmp_path / "vmm"
    names = "".join(f'name "{d}", bus PCI\\n' for d in devices)
    vmm.write_text(f'#!/bin/sh\n[ "$1" = -device ] && {{ printf \'{names}\'; exit 0; }}\n'
                   f'{netdev_help}\n')
    vmm.chmod(vmm.stat().st_mode | stat.S_IEXEC)
    return str(vmm)


def test_missing_names_the_device_then_the_backend(tmp_path):
    vmm = _fake_vmm(tmp_path, ["e1000"], "printf 'Available netdev backend types:\\ntap\\n'")
    assert "lists no virtio-net-pci" in missing(vmm, ["virtio-net-pci"], ["tap"])
    assert "-netdev help lists no user" in missing(vmm, ["e1000"], ["user"])
    assert missing(vmm, ["e1000"], ["tap"]) is None


def test_a_vmm_without_netdev_help_is_not_held_back(tmp_path):
    vmm = _fake_vmm(tmp_path, ["e1000"], "echo 'not supported yet' >&2; exit 1")
    assert missing(vmm, ["e1000"], ["user", "socket"]) is None
