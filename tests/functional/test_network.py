"""Networking under real Linux on the bench: e1000 and virtio-net (in user
space and with vhost-net) over a tap device, multiqueue virtio-net, user
networking (libslirp) and the socket backend, all in one batch.

Every fragment is written for any VMM: ours (build/qemu-system-x86_64) and
Debian's qemu-system-x86_64, the reference column that proves the harness
and the checks. Ours runs only what its `-device help` lists (e1000,
virtio-net-pci) and its `-netdev help` (user, socket) does not deny; the
rest is skipped with the reason. Network rule (docs/testing.md): each
fragment's guests talk only to their L1 host, inside a network namespace
the fragment creates.

Cost: each fragment is an L2 boot in an L1 emulated by TCG. Most guests
have one vCPU: 2-vCPU L2 guests under load can hang the one-vCPU L1
(docs/testing.md, "Still open"; the harness reruns them). Our matrix runs
each NIC in both lock modes, e1000 and virtio-net also on 2 vCPUs;
Debian's QEMU runs the fragments ours cannot run yet. VMM_TEST_NET=full
runs all of NIC x vCPUs x lock mode for ours and the whole reference
column; VMM_TEST_NET=reference the whole reference column.
"""

import dataclasses
import os
import re
import shutil

import pytest

import kvmhost
from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.output import line_value
from kvmhost.net import (E1000, GUEST_ADDR, HOST_ADDR, PREFIX, VIRTIO, iperf_guest_command,
                         iperf_rates, missing, nic_args, tap_netdev, tap_script)

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
OURS = str(kvmhost.REPO / "build" / "qemu-system-x86_64")
# The unit test of hw/virtio/vhost.c against the kernel's vhost-net, which
# only L1 has: it rides in this batch.
VHOST_KERNEL_TEST = kvmhost.REPO / "build" / "tests" / "unit" / "test-vhost-kernel"
VHOST_KERNEL_FRAGMENT = "unit_vhost_kernel"
FULL = os.environ.get("VMM_TEST_NET") == "full"

MIB = 64                    # each way, through tap
USER_MIB = 16               # each way, through slirp (its TCP runs in the VMM)
G2H_PORT, H2G_PORT, FWD_PORT, SOCKET_PORT = 5001, 5002, 5555, 5600
GUEST_LIMIT = 420


@dataclasses.dataclass(frozen=True)
class Case:
    kind: str                       # tap, mq, user or socket
    nic: str = VIRTIO
    smp: int = 1
    lock: str = "on"                # ours only: -machine pc,device-lock=
    vhost: bool = False
    poll_us: int = 0                # vhost's busy polling (-netdev tap,poll-us=)

    def name(self, who):
        nic = "vhost" if self.vhost else "virtio" if self.nic == VIRTIO else "e1000"
        lock = f"_{self.lock}" if who == "ours" else ""
        return f"{who}_{self.kind}_{nic}_smp{self.smp}{lock}"


TAP_NICS = [(E1000, False), (VIRTIO, False), (VIRTIO, True)]
# vhost with device-lock=off also polls (poll-us=): the kernel must take
# the timeout, or the pair stays in user space.
VHOST_POLL_US = {"on": 0, "off": 50}
if FULL:
    OURS_TAP = [Case("tap", nic, smp, lock, vhost, VHOST_POLL_US[lock] if vhost else 0)
                for nic, vhost in TAP_NICS for smp in (1, 2) for lock in ("on", "off")]
else:
    # Each NIC in both lock modes; e1000 and virtio-net (whose data path is
    # in the VMM) also on 2 vCPUs.
    OURS_TAP = [Case("tap", E1000, 1, "on"), Case("tap", E1000, 2, "off"),
                Case("tap", VIRTIO, 1, "off"), Case("tap", VIRTIO, 2, "on"),
                Case("tap", VIRTIO, 1, "on", vhost=True),
                Case("tap", VIRTIO, 1, "off", vhost=True, poll_us=VHOST_POLL_US["off"])]
OURS_CASES = OURS_TAP + [Case("mq", VIRTIO, 1, "on"), Case("user", E1000, 1, "off"),
                         Case("socket", VIRTIO, 1, "on")]


def qemu_cases():
    """The reference column: Debian's QEMU stands in for every fragment of
    ours that cannot run yet (so make check always runs the same fragments,
    proven by one VMM or the other); all of them with VMM_TEST_NET=full or
    reference."""
    wanted = os.environ.get("VMM_TEST_NET") in ("full", "reference")
    cases = {}
    for case in OURS_CASES:
        if wanted or skip_reason("ours", case):
            qemu = dataclasses.replace(case, lock="on")
            cases.setdefault(qemu.name("qemu"), qemu)
    return list(cases.values())


def _md5(var):
    return f"$(md5sum < {var} | cut -c1-32)"


HOST_DATA_MD5 = _md5('"$WORK/h2g"')


# ---- host side: the two transfers, each checked by md5 on the other side ----

def host_receive(port, mib):
    """Host commands: make the host->guest data, and receive the guest's
    (in the background; host_received prints its md5)."""
    return (f'(in_netns netxfer recv {port} | md5sum | cut -c1-32 > "$WORK/g2h.md5") &\n'
            f'RECV=$!\n'
            f'netxfer gen {mib} > "$WORK/h2g"; echo host-sent={HOST_DATA_MD5}\n')


def host_send(guest, addr, port):
    """Host commands: send the data once the guest's netxfer listens."""
    return (f'guest_wait_for {guest} "listening on {H2G_PORT}" 300 && '
            f'in_netns netxfer send {addr} {port} < "$WORK/h2g"\n')


HOST_RECEIVED = ('wait_pid_for "$RECV" 60 || echo host-receive-unfinished\n'
                 'echo host-got=$(cat "$WORK/g2h.md5")\n')


def guest_transfers(mib, peer):
    """Guest commands: receive the host's data, then send its own."""
    return [f"netxfer recv {H2G_PORT} > /tmp/i; echo guest-got={_md5('/tmp/i')}; rm /tmp/i",
            f"netxfer gen {mib} > /tmp/o; echo guest-sent={_md5('/tmp/o')}",
            f"netxfer send {peer} {G2H_PORT} < /tmp/o; rm /tmp/o"]


# ---- the fragments ----

def machine(case, who):
    return [f"-machine pc,device-lock={case.lock}"] if who == "ours" else []


LINK = [
    "echo link=$(cat /sys/class/net/eth0/operstate),$(cat /sys/class/net/eth0/carrier)",
    "echo driver=$(basename $(readlink /sys/class/net/eth0/device/driver))",
    "ethtool eth0 | grep -E 'Speed|Link detected'",
    "ethtool -k eth0 | grep -E "
    "'^(rx-checksumming|tx-checksumming|scatter-gather|tcp-segmentation-offload):'",
]


# What Linux's drivers turn on over a tap with vnet headers, as under
# Debian's QEMU: e1000 has RX checksumming but leaves it off by default.
OFFLOADS = {
    E1000: {"rx-checksumming": "off", "tx-checksumming": "on", "scatter-gather": "on",
            "tcp-segmentation-offload": "on"},
    VIRTIO: {"rx-checksumming": "on", "tx-checksumming": "on", "scatter-gather": "on",
             "tcp-segmentation-offload": "on"},
}


def tap_fragment(case, who, vmm):
    name = case.name(who)
    guest = "; ".join([
        "ip addr show dev eth0 | grep 'inet '",
        f"ping -c3 -W5 {HOST_ADDR} && echo ping-host-ok",
        *guest_transfers(MIB, HOST_ADDR),
        iperf_guest_command(),
        *LINK])
    args = l2_args(guest, smp=case.smp, append=f"kit.ip={GUEST_ADDR}/{PREFIX}",
                   extra=[*machine(case, who), *nic_args(case.nic, tap_netdev(vhost=case.vhost,
                                                                     poll_us=case.poll_us))])
    during = (host_receive(G2H_PORT, MIB)
              + f"guest_wait_for net KIT-READY 300 && in_netns ping -c3 -W5 {GUEST_ADDR} "
                "&& echo ping-guest-ok\n"
              + "echo vhost-threads=$(grep -l '^vhost-' /proc/[0-9]*/comm 2>/dev/null | wc -l)\n"
              # Field 41 of stat: the scheduling policy (3: SCHED_BATCH).
              + "echo vhost-policies=$(for c in $(grep -l '^vhost-' /proc/[0-9]*/comm); do "
                "printf %s, $(cut -d' ' -f41 ${c%comm}stat); done)\n"
              + host_send("net", GUEST_ADDR, H2G_PORT))
    script = tap_script("net", GUEST_LIMIT, args, during=during, after=HOST_RECEIVED)
    return Fragment(name, script, vmm, limit=GUEST_LIMIT + 60)


def mq_fragment(case, who, vmm):
    # Linux hashes flows over the TX queues once XPS (which ties each vCPU
    # to its own queue) is off; the tap puts each flow's RX on the queue its
    # packets came from. Eight streams miss a queue with odds of 1 in 128.
    guest = "; ".join([
        "ethtool -L eth0 combined 2; ethtool -l eth0 | tail -n 4",
        "for f in /sys/class/net/eth0/queues/tx-*/xps_cpus; do echo 0 > $f; done",
        iperf_guest_command(streams=8),
        "ethtool -S eth0 | grep -E '_queue_[0-9]+_packets'"])
    # Ours prints its lock statistics at exit: each queue pair's own lock.
    lock_stats = [f"-machine pc,device-lock={case.lock},lock-stats=on"] if who == "ours" else []
    args = l2_args(guest, smp=case.smp, append=f"kit.ip={GUEST_ADDR}/{PREFIX}",
                   extra=[*lock_stats, *nic_args(VIRTIO, tap_netdev(queues=2), queues=2)])
    script = tap_script("net", GUEST_LIMIT, args, multi_queue=True)
    return Fragment(case.name(who), script, vmm, limit=GUEST_LIMIT + 60)


def user_fragment(case, who, vmm):
    guest = "; ".join(["ip addr show dev eth0 | grep 'inet '", "ip route | grep default",
                       *guest_transfers(USER_MIB, HOST_ADDR)])
    netdev = f"user,id=n0,hostfwd=tcp:127.0.0.1:{FWD_PORT}-:{H2G_PORT}"
    args = l2_args(guest, smp=case.smp, append="kit.ip=dhcp",
                   extra=[*machine(case, who), *nic_args(case.nic, netdev)])
    # Slirp takes the guest's connections to its gateway (10.0.2.2) to the
    # host's loopback: in the fragment's namespace, where netxfer listens.
    script = ("netns_create\n" + host_receive(G2H_PORT, USER_MIB)
              + f"guest_start user {GUEST_LIMIT} {args}\n"
              + host_send("user", "127.0.0.1", FWD_PORT)
              + "guest_wait user\n" + HOST_RECEIVED)
    return Fragment(case.name(who), script, vmm, limit=GUEST_LIMIT + 60)


def socket_guest(peer):
    # Each pings until the other is up (resting between tries: every fork
    # costs the other guest's boot time on L1's one CPU), proves it with
    # three more, and waits for the host to end both.
    return (f"i=0; until ping -c1 -W2 {peer} > /dev/null; do i=$((i+1)); "
            f"[ $i -lt 100 ] || break; sleep 3; done; ping -c3 -W5 {peer} && echo ping-peer-ok; "
            "sleep 900")


def socket_fragment(case, who, vmm):
    """Two VMMs joined by -netdev socket over the namespace's loopback. For
    ours, the second VMM is Debian's QEMU: QEMU's framing both ways."""
    def side(addr, peer, mac, netdev, model, machine_args):
        return l2_args(socket_guest(peer), smp=1, append=f"kit.ip={addr}/24",
                       extra=[*machine_args, *nic_args(model, netdev, mac=mac)])
    listen = side("10.0.3.1", "10.0.3.2", "52:54:00:00:03:01",
                  f"socket,id=n0,listen=127.0.0.1:{SOCKET_PORT}", case.nic, machine(case, who))
    connect = side("10.0.3.2", "10.0.3.1", "52:54:00:00:03:02",
                   f"socket,id=n0,connect=127.0.0.1:{SOCKET_PORT}", E1000, [])
    peer_vmm = '"$BENCH_FILES/qemu"' if who == "ours" else '"$VMM"'
    # The second VMM connects as soon as the first listens: QEMU's
    # connect= fails at once when nobody listens.
    script = f"""netns_create
guest_start a {GUEST_LIMIT} {listen}
i=0; until in_netns netstat -ltn | grep -q ':{SOCKET_PORT} '; do
    i=$((i+1)); [ $i -lt 300 ] || break; sleep 0.1; done
OURS=$VMM; VMM={peer_vmm}
guest_start b {GUEST_LIMIT} {connect}
VMM=$OURS
guest_wait_for a ping-peer-ok {GUEST_LIMIT - 60} && guest_wait_for b ping-peer-ok 60 && echo both-pinged
kill -KILL "$(cat "$WORK/a.pid")" "$(cat "$WORK/b.pid")"
guest_wait a; guest_wait b
# Their status is the SIGKILL's, which the harness would take for a limit.
true
"""
    return Fragment(case.name(who), script, vmm, limit=GUEST_LIMIT + 60)


BUILDERS = {"tap": tap_fragment, "mq": mq_fragment, "user": user_fragment,
            "socket": socket_fragment}


def needs(case):
    """(NIC models, netdev backends) a case needs from the VMM under test
    (the socket fragment's second VMM is QEMU for ours)."""
    return [case.nic], [{"mq": "tap"}.get(case.kind, case.kind)]


def skip_reason(who, case):
    if who == "qemu":
        return None if REFERENCE else "Debian's qemu-system-x86 is not installed"
    if not os.path.exists(OURS):
        return f"{OURS} is missing: run make first"
    return missing(OURS, *needs(case))


def all_cases():
    return [("ours", c) for c in OURS_CASES] + [("qemu", c) for c in qemu_cases()]


def bench_batch(session):
    # Only the fragments of the tests selected (-k): each costs an L2 boot.
    selected = session.selected_ids(__name__)
    frags = [BUILDERS[case.kind](case, who, OURS if who == "ours" else REFERENCE)
             for who, case in all_cases()
             if case.name(who) in selected and skip_reason(who, case) is None]
    files = {"qemu": REFERENCE} if REFERENCE else {}
    if VHOST_KERNEL_FRAGMENT in selected and VHOST_KERNEL_TEST.exists():
        frags.append(Fragment(VHOST_KERNEL_FRAGMENT,
                              '"$BENCH_FILES/test-vhost-kernel"; echo "unit-status=$?"',
                              OURS, limit=120, up_marker=None))
        files["test-vhost-kernel"] = str(VHOST_KERNEL_TEST)
    return frags, files


def _params(kind):
    return [pytest.param(who, case, id=case.name(who))
            for who, case in all_cases() if case.kind == kind]


def _outcome(runs, who, case):
    reason = skip_reason(who, case)
    if reason:
        pytest.skip(reason)
    return runs[case.name(who)]


def _check_transfers(outcome):
    # Each side hashes what it made and what it got: the same bytes arrived.
    for sent, got, what in (("host-sent", "guest-got", "host to guest"),
                            ("guest-sent", "host-got", "guest to host")):
        assert re.fullmatch(r"[0-9a-f]{32}", line_value(outcome.output, sent)), outcome.output
        assert line_value(outcome.output, sent) == line_value(outcome.output, got), \
            f"{what}: the md5 differs\n{outcome.output}"
    assert "host-receive-unfinished" not in outcome.output, outcome.output


@pytest.mark.parametrize("who,case", _params("tap"))
def test_tap_ping_transfer_iperf_link(runs, who, case):
    outcome = _outcome(runs, who, case)
    guest = expect_guest(outcome, "net", contains=[
        rf"inet {GUEST_ADDR}/{PREFIX}", "^ping-host-ok$", "^link=up,1$",
        rf"^driver={'e1000' if case.nic == E1000 else 'virtio_net'}$", "Link detected: yes"])
    assert "ping-guest-ok" in outcome.output, outcome.output
    _check_transfers(outcome)
    rates = iperf_rates(guest.log)
    assert len(rates) == 2 and all(r > 0 for r in rates), guest.log
    for feature, state in OFFLOADS[case.nic].items():
        assert re.search(rf"^{feature}: {state}", guest.log, re.M), \
            f"{feature} is not {state}\n{guest.log}"
    threads = int(line_value(outcome.output, "vhost-threads"))
    assert (threads > 0) == case.vhost, f"{threads} vhost threads in L1\n{outcome.output}"
    if case.vhost and who == "ours":
        # The kernel took every ring (and poll-us=): none stayed behind.
        assert "stays in user space" not in guest.log, guest.log
        # io-sched-batch (on by default) covers the kernel's worker too.
        policies = set(line_value(outcome.output, "vhost-policies").strip(",").split(","))
        assert policies == {"3"}, f"vhost workers' policies {policies}\n{outcome.output}"
    print(f"{outcome.name}: iperf3 Mbit/s guest->host {rates[0]}, host->guest {rates[1]}")


@pytest.mark.parametrize("who,case", _params("mq"))
def test_virtio_multiqueue_uses_both_queue_pairs(runs, who, case):
    outcome = _outcome(runs, who, case)
    guest = expect_guest(outcome, "net", exit_status=0)
    assert re.search(r"^Combined:\s+2$", guest.log, re.M), guest.log
    rates = iperf_rates(guest.log)
    assert len(rates) == 2 and all(r > 0 for r in rates), guest.log
    counts = {f"{d}{q}": int(n) for d, q, n in
              re.findall(r"^\s*(rx|tx)_queue_(\d+)_packets: (\d+)$", guest.log, re.M)}
    for queue in ("rx0", "rx1", "tx0", "tx1"):
        assert counts.get(queue, 0) > 100, f"queue {queue}: {counts}\n{guest.log}"
    if who == "ours":
        # Each pair's data path took its own lock (device-lock=on), which
        # the statistics list after the function's as "<id>.qp<N>".
        stats = dict(re.findall(r"^\s+(\S+)\s+\S+\s+(\d+)\s+\d+\s+[\d.]+$", guest.log, re.M))
        for pair in ("qp0", "qp1"):
            taken = [int(n) for name, n in stats.items() if name.endswith(f".{pair}")]
            assert taken and taken[0] > 100, f"pair lock {pair}: {stats}\n{guest.log}"


@pytest.mark.parametrize("who,case", _params("user"))
def test_user_dhcp_and_hostfwd_transfer(runs, who, case):
    outcome = _outcome(runs, who, case)
    expect_guest(outcome, "user", contains=[
        r"^kit: dhcp lease 10\.0\.2\.15/24 on eth0 via 10\.0\.2\.2$",
        r"^default via 10\.0\.2\.2 dev eth0"])
    _check_transfers(outcome)


@pytest.mark.parametrize("who,case", _params("socket"))
def test_socket_backend_two_vmms_ping(runs, who, case):
    outcome = _outcome(runs, who, case)
    for name in ("a", "b"):
        expect_guest(outcome, name, contains=["^ping-peer-ok$"])
    assert "both-pinged" in outcome.output, outcome.output


@pytest.mark.parametrize("name", [VHOST_KERNEL_FRAGMENT])
def test_vhost_kernel_unit_in_l1(runs, name):
    """test-vhost-kernel skips where there is no /dev/vhost-net (here, most
    likely); L1 has it, and root: a frame each way through the kernel's
    vhost-net, and each ring's busy-loop timeout read back."""
    if not VHOST_KERNEL_TEST.exists():
        pytest.skip(f"{VHOST_KERNEL_TEST} is missing: run make first")
    output = runs[name].output
    assert line_value(output, "unit-status") == "0", output
    assert re.search(r"^ok 1 /vhost-kernel/frames-both-ways$", output, re.M), output
