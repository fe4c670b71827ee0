"""query-pci, query-chardev, query-iothreads, set_link and query-rx-filter
over a QMP socket, ours side by side with Debian's QEMU (the reference
column) on the same command line: a halted tiny guest on the local
/dev/kvm (the reference falls back to TCG if KVM refuses it), an e1000 and
a virtio-net on user-mode netdevs, an I/O thread and two -chardev backends.

What is compared is the shape (member names and types) and the values
that do not depend on who programmed the BARs: QEMU's SeaBIOS assigns
addresses and interrupt lines, our VMM assigns them itself and leaves
decoding off until the guest's driver turns it on, so addresses and
"irq" values are only checked for type. Known differences, each asserted
separately rather than hidden: QEMU's NICs have an option ROM (BAR 6) and
ours have none. The ACPI PM function 00:01.3 (PIIX4 PM) is on both, its
"irq" 9 (the SCI, which firmware writes into its interrupt line on QEMU
and our VMM on ours).
"""

import os
import shutil
import subprocess
import tempfile
import time

import pytest

from qmp_client import QMPClient
from vmm_process import require_local_kvm

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")

NICS = ("-netdev user,id=n0 -device e1000,id=nic0,netdev=n0 "
        "-netdev user,id=n1 -device virtio-net-pci,id=vn0,netdev=n1")

# QEMU 7.2's answer for this machine (-nodefaults), function by function:
# (slot, function) -> (class, desc, vendor, device, irq_pin, qdev_id,
# [(bar, type, size, prefetch, mem_type_64)]), BAR 6 (ROM) left out.
EXPECTED_PCI = {
    (0, 0): (0x0600, "Host bridge", 0x8086, 0x1237, 0, "", []),
    (1, 0): (0x0601, "ISA bridge", 0x8086, 0x7000, 0, "", []),
    (1, 1): (0x0101, "IDE controller", 0x8086, 0x7010, 0, "", [(4, "io", 16, None, None)]),
    (1, 3): (0x0680, "Bridge", 0x8086, 0x7113, 1, "", []),
    (2, 0): (0x0200, "Ethernet controller", 0x8086, 0x100e, 1, "nic0",
             [(0, "memory", 0x20000, False, False), (1, "io", 64, None, None)]),
    (3, 0): (0x0200, "Ethernet controller", 0x1af4, 0x1000, 1, "vn0",
             [(0, "io", None, None, None), (1, "memory", 0x1000, False, False),
              (4, "memory", 0x4000, True, True)]),
}
ACPI_FUNCTION = (1, 3)
VIRTIO_NET = (3, 0)


def accel_works(vmm, accel):
    run = subprocess.run([vmm, "-accel", accel, "-M", "pc", "-nodefaults", "-display", "none",
                          "-S", "-qmp", "stdio"], input='{"execute": "qmp_capabilities"}\n'
                         '{"execute": "quit"}\n', capture_output=True, text=True, timeout=60)
    return run.returncode == 0


@pytest.fixture(scope="module", params=["ours", "reference"])
def vm(request, our_vmm, tiny_kernels):
    """A running VMM with its QMP client, negotiated."""
    if request.param == "reference":
        if not REFERENCE:
            pytest.skip("Debian's qemu-system-x86 is not installed")
        vmm = REFERENCE
        accel = "kvm" if accel_works(vmm, "kvm") else "tcg"
    else:
        require_local_kvm()
        vmm, accel = our_vmm, "kvm"
    tmp = tempfile.mkdtemp(prefix="qmp-info-")
    sock = os.path.join(tmp, "qmp.sock")
    args = [vmm, "-accel", accel, "-M", "pc", "-m", "64M", "-nodefaults", "-display", "none",
            "-qmp", f"unix:{sock},server=on,wait=off",
            "-chardev", "null,id=cnull", "-chardev", f"file,id=cfile,path={tmp}/chardev.txt",
            "-serial", f"file:{tmp}/serial.txt", "-object", "iothread,id=io0",
            *NICS.split(), "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "hello"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{request.param}: no QMP socket: {proc.communicate()[1]}")
        time.sleep(0.05)
    qmp = QMPClient.wait_connect(sock, timeout=30)
    qmp.negotiate()
    deadline = time.monotonic() + 30
    while "tiny: hello" not in open(f"{tmp}/serial.txt", errors="replace").read():
        assert time.monotonic() < deadline, "the tiny guest did not start"
        time.sleep(0.1)
    qmp.vmm = request.param
    qmp.pid = proc.pid
    yield qmp
    qmp.execute("quit")
    qmp.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def functions(vm):
    buses = vm.cmd("query-pci")
    assert [b["bus"] for b in buses] == [0]
    assert set(buses[0]) == {"bus", "devices"}
    return {(d["slot"], d["function"]): d for d in buses[0]["devices"]}


def test_query_pci_matches_qemu(vm):
    found = functions(vm)
    for (slot, fn), (cls, desc, vendor, device, pin, qdev_id, regions) in EXPECTED_PCI.items():
        d = found[(slot, fn)]
        assert d["bus"] == 0
        assert d["class_info"] == {"class": cls, "desc": desc}
        assert (d["id"]["vendor"], d["id"]["device"]) == (vendor, device)
        assert (d["id"]["subsystem-vendor"], set(d["id"])) == (
            0x1af4, {"device", "vendor", "subsystem", "subsystem-vendor"})
        assert d["irq_pin"] == pin
        assert ("irq" in d) == (pin != 0) and isinstance(d.get("irq", 0), int)
        assert d["qdev_id"] == qdev_id
        assert "pci_bridge" not in d
        got = []
        for r in d["regions"]:
            if r["bar"] == 6:
                continue        # QEMU's option ROM
            assert isinstance(r["address"], int) and r["address"] >= -1
            size = None if (slot, fn, r["bar"]) == (*VIRTIO_NET, 0) else r["size"]
            got.append((r["bar"], r["type"], size, r.get("prefetch"), r.get("mem_type_64")))
        assert got == regions, (slot, fn)
    extra = set(found) - set(EXPECTED_PCI)
    assert not extra


def test_query_pci_lists_acpi_function(vm):
    d = functions(vm)[ACPI_FUNCTION]
    assert d["class_info"] == {"class": 0x0680, "desc": "Bridge"}
    assert (d["id"]["vendor"], d["id"]["device"], d["irq_pin"]) == (0x8086, 0x7113, 1)
    assert (d["id"]["subsystem-vendor"], d["id"]["subsystem"]) == (0x1af4, 0x1100)
    assert (d["irq"], d["regions"]) == (9, [])


def test_query_pci_virtio_net_legacy_bar_size(vm):
    # The configuration is sized by the offered features (8 bytes without
    # MQ and MTU), so the legacy BAR is 32 bytes.
    legacy = functions(vm)[VIRTIO_NET]["regions"][0]
    assert (legacy["bar"], legacy["type"], legacy["size"]) == (0, "io", 32)


def test_query_chardev(vm):
    chardevs = {c["label"]: c for c in vm.cmd("query-chardev")}
    for c in chardevs.values():
        assert set(c) == {"label", "filename", "frontend-open"}
    assert chardevs["cnull"] == {"label": "cnull", "filename": "null", "frontend-open": False}
    assert chardevs["cfile"] == {"label": "cfile", "filename": "file", "frontend-open": False}
    # -serial file: is "serial0", opened by the UART.
    assert chardevs["serial0"] == {"label": "serial0", "filename": "file", "frontend-open": True}


def test_query_iothreads(vm):
    threads = vm.cmd("query-iothreads")
    assert [t["id"] for t in threads] == ["io0"]
    t = threads[0]
    assert set(t) == {"id", "thread-id", "poll-max-ns", "poll-grow", "poll-shrink",
                      "aio-max-batch"}
    # A thread of the VMM's process.
    assert os.path.exists(f"/proc/{vm.pid}/task/{t['thread-id']}")
    # QEMU busy-polls up to 32 us by default; ours never polls and says so.
    assert t["poll-max-ns"] == (32768 if vm.vmm == "reference" else 0)
    assert (t["poll-grow"], t["poll-shrink"], t["aio-max-batch"]) == (0, 0, 0)


def test_set_link(vm):
    for name in ("nic0", "n0", "vn0", "n1"):
        assert vm.cmd("set_link", name=name, up=False) == {}
        assert vm.cmd("set_link", name=name, up=True) == {}
    resp = vm.execute("set_link", {"name": "nope", "up": True})
    assert resp["error"] == {"class": "DeviceNotFound", "desc": "Device 'nope' not found"}
    resp = vm.execute("set_link", {"name": "nic0"})
    assert resp["error"] == {"class": "GenericError", "desc": "Parameter 'up' is missing"}


def test_query_rx_filter(vm):
    filters = vm.cmd("query-rx-filter")
    assert [f["name"] for f in filters] == ["vn0"]
    f = vm.cmd("query-rx-filter", name="vn0")[0]
    assert set(f) == {"name", "promiscuous", "multicast", "unicast", "vlan", "broadcast-allowed",
                      "multicast-overflow", "unicast-overflow", "main-mac", "vlan-table",
                      "unicast-table", "multicast-table"}
    # No driver yet: promiscuous, every VLAN, the default MAC of the second NIC.
    assert (f["promiscuous"], f["unicast"], f["multicast"], f["vlan"]) == (
        True, "normal", "normal", "all")
    assert f["main-mac"] == "52:54:00:12:34:57"
    assert f["vlan-table"] == list(range(4095, -1, -1))
    errors = {name: vm.execute("query-rx-filter", {"name": name})["error"]
              for name in ("nic0", "n0", "zz")}
    assert errors == {
        "nic0": {"class": "GenericError",
                 "desc": "net client(nic0) doesn't support rx-filter querying"},
        "n0": {"class": "GenericError", "desc": "net client(n0) isn't a NIC"},
        "zz": {"class": "GenericError", "desc": "invalid net client name: zz"},
    }
