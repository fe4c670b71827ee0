"""The QMP run-state commands against a Linux guest, on the bench: ours and
Debian's QEMU (the reference column) in one batch.

The tiny guests cover the same commands locally (test_qmp_runstate.py);
this is the Linux half issue 13 asks for. The L2 guest prints a marker,
then a tick every 0.2 s. The L1 script holds one QMP connection (-qmp tcp
on L1's loopback, busybox nc fed through a FIFO) and sends, waiting for
each answer by its id: qmp_capabilities, query-status, stop, query-status,
cont, system_reset, quit. While stopped it counts the ticks that still
arrive (none may), after cont that they come again, and after the reset
that the guest booted a second time. The QMP lines come back in the
fragment's output and Python checks each answer and event.

A second guest per VMM takes system_powerdown: Linux's ACPI button driver
turns the power button's SCI into a KEY_POWER input event, which the
guest waits for on the "Power Button" input device (a desktop's logind
would act on it the same way), then powers off. QMP must show POWERDOWN,
then the guest's own SHUTDOWN.
"""

import shutil

import pytest

import kvmhost
from kvmhost import Fragment, expect_guest, l2_args
from kvmhost.output import line_value, qmp_messages

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
PORTS = {"ours": 4446, "reference": 4447}     # fragments may share an L1
MARKER = "QMPB-UP"

GUEST = (f"echo {MARKER}; i=0; "
         "while [ $i -lt 1000 ]; do echo tick=$i; sleep 0.2; i=$((i+1)); done")

# The commands in order, with the id each answer must echo.
COMMANDS = [("c1", "qmp_capabilities"), ("c2", "query-status"), ("c3", "stop"),
            ("c4", "query-status"), ("c5", "cont"), ("c6", "system_reset"),
            ("c7", "quit")]

POWER_MARKER = "QMPB-WAITING-FOR-BUTTON"
# One 24-byte struct input_event (x86-64) is the button's key press.
POWER_GUEST = ("ev=; for d in /sys/class/input/event*; do "
               "[ \"$(cat $d/device/name)\" = 'Power Button' ] && ev=${d##*/}; done; "
               f"echo button=$ev; echo {POWER_MARKER}; "
               "dd if=/dev/input/$ev of=/dev/null bs=24 count=1 2>/dev/null && "
               "echo power-button-pressed")


def qmp_session(port):
    """L1 shell that opens one QMP session over nc (stdin kept open on fd 3)
    and defines qmp_do ID COMMAND: send it, wait (30 s at most) for its answer."""
    return f"""
qmp_do() {{
    printf '{{"execute":"%s","id":"%s"}}\\n' "$2" "$1" >&3
    _d=$(($(uptime_s) + 30))
    until grep -qF "\\"$1\\"" "$WORK/qmp.out"; do
        [ "$(uptime_s)" -lt "$_d" ] || {{ echo "bench: no answer to $2"; return 1; }}
        sleep 0.1
    done
}}
# L1's loopback may be down: QMP is the only thing on it here.
ip link set lo up
# A VMM that is gone makes nc quit: the writes that follow must fail
# without SIGPIPE ending the fragment before it prints what it saw.
trap '' PIPE
mkfifo "$WORK/qmp.in"
nc 127.0.0.1 {port} < "$WORK/qmp.in" > "$WORK/qmp.out" 2>&1 &
nc_pid=$!
exec 3> "$WORK/qmp.in"
"""


def qmp_session_end(guest):
    """L1 shell: wait (30 s at most) for the guest's VMM to end, close the
    session and print what QMP sent, each line prefixed "qmp: "."""
    return f"""
d=$(($(uptime_s) + 30))
while [ ! -f "$WORK/{guest}.rc" ] && [ "$(uptime_s)" -lt "$d" ]; do sleep 0.1; done
exec 3>&-
wait_pid_for "$nc_pid" 10 || kill "$nc_pid"
sed 's/^/qmp: /' "$WORK/qmp.out"
"""


def qmp_script(port):
    """L1 shell: the run-state session on guest q."""
    send = {cid: f"qmp_do {cid} {cmd}" for cid, cmd in COMMANDS}
    return qmp_session(port) + f"""
ticks() {{ grep -c '^tick=' "$WORK/q.log"; }}
{send["c1"]}
{send["c2"]}
{send["c3"]}
{send["c4"]}
# Output already on its way settles first; then nothing more may come.
sleep 0.5; a=$(ticks); sleep 2; b=$(ticks)
echo "paused-ticks=$((b - a))"
{send["c5"]}
d=$(($(uptime_s) + 20))
while [ "$(ticks)" -le "$b" ] && [ "$(uptime_s)" -lt "$d" ]; do sleep 0.2; done
echo "resumed-ticks=$(($(ticks) - b))"
{send["c6"]}
d=$(($(uptime_s) + 180))
while [ "$(grep -c {MARKER} "$WORK/q.log")" -lt 2 ] && [ "$(uptime_s)" -lt "$d" ]; do
    sleep 0.2
done
echo "boots=$(grep -c {MARKER} "$WORK/q.log")"
{send["c7"]}
# The SHUTDOWN event comes before the VMM exits; then nc sees the close.
""" + qmp_session_end("q")


def powerdown_script(port):
    """L1 shell: system_powerdown once guest p waits for its power button."""
    return qmp_session(port) + """
qmp_do p1 qmp_capabilities
qmp_do p2 system_powerdown
""" + qmp_session_end("p")


def bench_batch(session):
    our_vmm = session.our_vmm
    frags = []
    for kind, vmm in (("ours", our_vmm), ("reference", REFERENCE)):
        if not vmm:
            continue
        # Rebooting allowed: under -no-reboot system_reset shuts down.
        args = l2_args(GUEST, smp=1, no_reboot=False, extra=[
            "-qmp", f"tcp:127.0.0.1:{PORTS[kind]},server=on,wait=off"])
        script = (f"guest_start q 400 {args}\n"
                  f"if guest_wait_for q {MARKER} 180; then\n{qmp_script(PORTS[kind])}fi\n"
                  "guest_wait q\n")
        frags.append(Fragment(f"{kind}_qmp_linux", script, vmm, limit=420))
        args = l2_args(POWER_GUEST, smp=1, exit_port=False, extra=[
            "-qmp", f"tcp:127.0.0.1:{PORTS[kind] + 10},server=on,wait=off"])
        script = (f"guest_start p 300 {args}\n"
                  f"if guest_wait_for p {POWER_MARKER} 180; then\n"
                  f"{powerdown_script(PORTS[kind] + 10)}fi\n"
                  "guest_wait p\n")
        frags.append(Fragment(f"{kind}_powerdown_linux", script, vmm, limit=360))
    return frags, {}


@pytest.mark.parametrize("kind", ["ours", "reference"])
def test_qmp_drives_a_linux_guest(runs, kind):
    outcome = kvmhost.outcome_or_skip(runs, f"{kind}_qmp_linux")
    out = outcome.output
    g = expect_guest(outcome, "q", vmm_status=0, contains=[f"^{MARKER}"], show_script=True)
    msgs = qmp_messages(out)
    assert msgs and "QMP" in msgs[0], out
    answers = {m["id"]: m for m in msgs if "id" in m}
    assert sorted(answers) == [cid for cid, _ in COMMANDS], out
    for cid in ("c1", "c3", "c5", "c6", "c7"):
        assert answers[cid].get("return") == {}, answers[cid]
    for cid, status, running in (("c2", "running", True), ("c4", "paused", False)):
        got = answers[cid].get("return", {})
        assert (got.get("status"), got.get("running")) == (status, running), answers[cid]
    # SeaBIOS, started again after the reset, may reset once more itself.
    events = [(m["event"], m.get("data")) for m in msgs if "event" in m
              and m.get("data") != {"guest": True, "reason": "guest-reset"}]
    assert events == [("STOP", None), ("RESUME", None),
                      ("RESET", {"guest": False, "reason": "host-qmp-system-reset"}),
                      ("SHUTDOWN", {"guest": False, "reason": "host-qmp-quit"})], msgs
    # Each event before its command's answer, as QEMU sends them (its
    # monitor answers after the main loop acted on the command's request).
    order = [m["event"] if "event" in m else m["id"] for m in msgs[1:]
             if m.get("data") != {"guest": True, "reason": "guest-reset"}]
    assert order == ["c1", "c2", "STOP", "c3", "c4", "RESUME", "c5", "RESET", "c6",
                     "SHUTDOWN", "c7"], msgs
    assert int(line_value(out, "paused-ticks")) == 0, g.log
    assert int(line_value(out, "resumed-ticks")) > 0, g.log
    assert int(line_value(out, "boots")) == 2 == g.log.count(MARKER), g.log


@pytest.mark.parametrize("kind", ["ours", "reference"])
def test_system_powerdown_reaches_linux(runs, kind):
    outcome = kvmhost.outcome_or_skip(runs, f"{kind}_powerdown_linux")
    out = outcome.output
    g = expect_guest(outcome, "p", exit_status=0, vmm_status=0,
                     contains=[r"^button=event\d+$", "^power-button-pressed$"], show_script=True)
    msgs = qmp_messages(out)
    answers = {m["id"]: m for m in msgs if "id" in m}
    assert [answers[c].get("return") for c in ("p1", "p2")] == [{}, {}], out
    events = [(m["event"], m.get("data")) for m in msgs if "event" in m]
    assert events == [("POWERDOWN", None),
                      ("SHUTDOWN", {"guest": True, "reason": "guest-shutdown"})], msgs
    order = [m["event"] if "event" in m else m["id"] for m in msgs[1:]]
    assert order == ["p1", "POWERDOWN", "p2", "SHUTDOWN"], msgs
    assert g.log.index("power-button-pressed") < g.log.index("KIT-EXIT=0"), g.log
