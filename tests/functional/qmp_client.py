"""A small QMP client for the functional tests (standard library only).

It speaks the protocol as the QMP specification words it: one JSON object
per message, a greeting first, qmp_capabilities to leave negotiation mode.
Events that arrive while a command waits for its answer are kept in
`events`, in arrival order. The independent client the issue asks for (npm's
qemu-qmp) is used by tests/functional/test_qmp_client.py; this one is for
tests that need raw control (timing, malformed input).
"""

import json
import socket
import time


class QMPError(Exception):
    def __init__(self, error):
        super().__init__(f"{error.get('class')}: {error.get('desc')}")
        self.error_class = error.get("class")
        self.desc = error.get("desc")


class QMPClient:
    def __init__(self, address, timeout=30.0):
        """address: a unix socket path (str) or a (host, port) tuple."""
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(address)
        self.buf = b""
        self.events = []
        self.greeting = self.recv()

    @classmethod
    def wait_connect(cls, address, timeout=30.0):
        """Connect once the VMM has created the socket."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return cls(address, timeout)
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def recv(self):
        """The next message (a dict); None when the VMM closed the socket."""
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command, arguments=None, id=None):
        """Send one command; its whole response (a dict with "return" or
        "error"). Events that came first go to self.events."""
        msg = {"execute": command}
        if arguments is not None:
            msg["arguments"] = arguments
        if id is not None:
            msg["id"] = id
        self.send_raw(json.dumps(msg))
        while True:
            resp = self.recv()
            if resp is None:
                raise ConnectionError(f"QMP closed while waiting for {command}")
            if "event" in resp:
                self.events.append(resp)
                continue
            return resp

    def cmd(self, command, **arguments):
        """execute() that returns the "return" value or raises QMPError."""
        resp = self.execute(command, arguments or None)
        if "error" in resp:
            raise QMPError(resp["error"])
        return resp["return"]

    def negotiate(self):
        return self.cmd("qmp_capabilities")

    def wait_event(self, name, timeout=30.0):
        """The first event called name (kept or still to come)."""
        for i, ev in enumerate(self.events):
            if ev["event"] == name:
                return self.events.pop(i)
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.recv()
            if msg is None:
                raise ConnectionError(f"QMP closed while waiting for event {name}")
            if msg.get("event") == name:
                return msg
            self.events.append(msg)
        raise TimeoutError(f"no {name} event within {timeout} s")
