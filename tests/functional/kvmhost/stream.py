"""Reading a batch while it runs: the framed output and L1's kernel console.

A nested batch sends two streams (scripts/run-in-l1.sh): the batch's framed
output on L1's second serial port, and L1's kernel console on the first.
Both are read as they grow, in chunks that end anywhere, and an L1 that dies
may cut either one mid-line. BatchStream demultiplexes the framed output line
by line into fragments and their guests' consoles; L1Console watches the
kernel console for the signs of a dying host. Keeping the streams apart means
a kernel message can never split a line of a guest's log.

The framing (tests/functional/kvmhost/hostlib.sh):
    @@TEST-BEGIN NAME
    ... fragment output ...
    @@GUEST-BEGIN GUEST
    ... the guest's console ...
    @@GUEST-END GUEST rc=N [killed=WHY]
    @@TEST-END NAME rc=N secs=S
"""

import dataclasses
import re

_TEST_BEGIN = re.compile(r"@@TEST-BEGIN (\S+)$")
_TEST_END = re.compile(r"@@TEST-END (\S+) rc=(\d+)(?: secs=(\d+))?$")
_GUEST_BEGIN = re.compile(r"@@GUEST-BEGIN (\S+)$")
_GUEST_END = re.compile(r"@@GUEST-END (\S+) rc=(\d+)(?: killed=(\S+))?$")


@dataclasses.dataclass
class Guest:
    name: str
    rc: int | None          # None: its end never came back (L1 died meanwhile)
    log: str
    killed: bool

    def kit_exit(self):
        """The status the L2 kit's init printed for its command, or None."""
        found = re.findall(r"^KIT-EXIT=(\d+)$", self.log, re.M)
        return int(found[-1]) if found else None

    def panicked(self):
        return "Kernel panic" in self.log


@dataclasses.dataclass
class Outcome:
    name: str
    rc: int | None          # None: the fragment's end never came back
    output: str             # everything the fragment printed
    guests: dict
    retried: str | None = None
    seconds: int | None = None  # how long it ran on its host, when that came back

    def guest(self, name):
        if name not in self.guests:
            raise AssertionError(f"test {self.name}: guest {name} never ran\n"
                                 f"--- test output ---\n{self.output}")
        return self.guests[name]


class _Open:
    """A fragment (or guest) whose end has not been seen yet."""

    def __init__(self, name):
        self.name = name
        self.lines = []


class BatchStream:
    """Demultiplexes a batch's framed output, fed in chunks as it arrives."""

    def __init__(self):
        self._partial = ""
        self._fragment = None       # the open _Open fragment
        self._guest = None          # the open _Open guest inside it
        self._guests = {}           # guests of the open fragment
        self.outcomes = {}
        self.events = 0             # fragment begins and ends seen so far

    @property
    def running(self):
        """The fragment that has begun and not ended, or None."""
        return self._fragment.name if self._fragment else None

    def feed(self, chunk):
        text = self._partial + chunk.replace("\r", "")
        *lines, self._partial = text.split("\n")
        for line in lines:
            self._line(line)

    def close(self):
        """End of the stream: a cut last line, and any open frame, are kept."""
        if self._partial:
            self._line(self._partial)
            self._partial = ""
        if self._guest:
            self._end_guest(None, None)
        if self._fragment:
            self._end_fragment(None)
        return self.outcomes

    def _line(self, line):
        if m := _TEST_BEGIN.match(line):
            if self._fragment:          # the previous one never ended
                self.close()
            self._fragment, self._guests = _Open(m.group(1)), {}
            self.events += 1
        elif (m := _TEST_END.match(line)) and self._fragment and m.group(1) == self._fragment.name:
            if self._guest:
                self._end_guest(None, None)
            self._end_fragment(int(m.group(2)), m.group(3) and int(m.group(3)))
            self.events += 1
        elif not self._fragment:
            pass                        # noise between fragments
        elif (m := _GUEST_BEGIN.match(line)) and not self._guest:
            self._fragment.lines.append(line)
            self._guest = _Open(m.group(1))
        elif (m := _GUEST_END.match(line)) and self._guest and m.group(1) == self._guest.name:
            self._fragment.lines.append(line)
            self._end_guest(int(m.group(2)), m.group(3))
        else:
            self._fragment.lines.append(line)
            if self._guest:
                self._guest.lines.append(line)

    def _end_guest(self, rc, killed):
        guest = self._guest
        log = "\n".join(guest.lines)
        # guest_wait ends a console with a newline of its own.
        self._guests[guest.name] = Guest(guest.name, rc, log + "\n" if log else "",
                                         bool(killed))
        self._guest = None

    def _end_fragment(self, rc, seconds=None):
        frag = self._fragment
        self.outcomes[frag.name] = Outcome(frag.name, rc, "\n".join(frag.lines) + "\n",
                                           self._guests, seconds=seconds)
        self._fragment, self._guests = None, {}


def parse_batch(text):
    """Outcomes of the fragments framed in a whole batch's output."""
    stream = BatchStream()
    stream.feed(text)
    return stream.close()


# What L1's kernel prints when it is dying or no longer makes progress. Any
# of these ends the L1: whatever runs there can no longer be trusted.
_FATAL = re.compile(
    r"BUG: soft lockup|stack guard page was hit|Kernel panic|"
    r"rcu: INFO: rcu_\w+ (self-)?detected stall|BUG: unable to handle|"
    r"general protection fault|Oops:|kernel BUG at|BUG: kernel NULL pointer|"
    r"watchdog: Watchdog detected hard LOCKUP")
HEARTBEAT = "bench: alive"      # what init-l1 writes to /dev/kmsg every few seconds


class L1Console:
    """Watches L1's kernel console, fed in chunks as it arrives."""

    def __init__(self):
        self._partial = ""
        self.lines = []
        self.fatal = None           # the first fatal line seen
        self.heartbeats = 0

    def feed(self, chunk):
        text = self._partial + chunk.replace("\r", "")
        *lines, self._partial = text.split("\n")
        for line in lines:
            self.lines.append(line)
            if HEARTBEAT in line:
                self.heartbeats += 1
            elif self.fatal is None and _FATAL.search(line):
                self.fatal = line.strip()

    def evidence(self, count=40):
        """The console's last lines, heartbeats left out."""
        lines = [line for line in self.lines + [self._partial] if HEARTBEAT not in line]
        return "\n".join(lines[-count:]).strip()
