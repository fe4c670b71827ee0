"""x-query-device-locks on a running VMM agrees with lock-stats=on's print.

Ours only (the command is ours). The tiny guest writes COM1's scratch
register flat out ("bench=pio:N"), one exit to user space under the serial
port's lock per write. While it runs, two queries show the count growing;
once stopped, the numbers hold still; after quit, what lock-stats=on
prints at exit is what the last query said, lock for lock.
"""

import re
import time

from test_qmp_runstate import Machine

WRITES = 20_000_000         # longer than the test needs, even on hardware KVM
PRINT_LINE = re.compile(r"^  (\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)$")


def locks(machine):
    """{lock name: its entry} as x-query-device-locks gives them."""
    return {lock["name"]: lock for lock in machine.qmp.cmd("x-query-device-locks")["locks"]}


def printed_locks(stderr):
    """{lock name: (type, acquisitions, contended)} from lock-stats=on's print."""
    assert "lock statistics (device-lock=on):" in stderr, stderr
    return {m.group(1): (m.group(2), int(m.group(3)), int(m.group(4)))
            for line in stderr.splitlines() if (m := PRINT_LINE.match(line))}


def test_live_counts_then_the_exit_print_agrees(our_vmm, tiny_kernels, tmp_path):
    m = Machine(our_vmm, tmp_path, tiny_kernels / "tiny.elf", f"bench=pio:{WRITES}",
                ["-machine", "pc,lock-stats=on"])
    try:
        m.wait_serial(r"tiny: hello\n")
        first = locks(m)["serial0"]["acquisitions"]
        time.sleep(0.5)
        second = locks(m)["serial0"]["acquisitions"]
        assert second > first, (first, second)
        assert "tiny: bench pio exits=" not in m.serial(), "the guest finished too soon"

        assert m.qmp.cmd("stop") == {}
        stopped = locks(m)
        time.sleep(0.5)
        still = locks(m)
        assert still["serial0"]["acquisitions"] == stopped["serial0"]["acquisitions"], \
            (stopped["serial0"], still["serial0"])
        assert m.qmp.cmd("quit") == {}
        assert m.wait_exit() == 0
        stderr = m.proc.stderr.read()
    finally:
        m.close()

    printed = printed_locks(stderr)
    assert set(printed) == set(still), (sorted(printed), sorted(still))
    for name, lock in still.items():
        kind, acquired, contended = printed[name]
        assert kind == lock["type"], (name, kind, lock)
        # Nothing runs the guest's devices after the stop; the main loop
        # may still take a lock on its way out (a timer, the console).
        assert acquired >= lock["acquisitions"] and contended >= lock["contended"], \
            (name, printed[name], lock)
    assert printed["serial0"][1] == still["serial0"]["acquisitions"], \
        (printed["serial0"], still["serial0"])
