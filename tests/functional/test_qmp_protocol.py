"""The QMP protocol over raw sockets, against our VMM and Debian's QEMU.

One VMM per column runs a tiny guest that stays up (it halts with
interrupts off) and three monitors at once: -qmp on a unix socket, -qmp on
a loopback TCP port, and -chardev socket + -mon mode=control,pretty=on.
The tests feed each what a careless or hostile client would: requests
before negotiation, malformed JSON, non-objects, unknown commands, wrong
argument types, a message of several MB, deep nesting, a disconnect in the
middle of a message. Every answer must be the QMP error QEMU 7.2 gives, and
the VMM must keep running and answering (the last test). The VMM is ended
with SIGTERM (quit belongs to another part of the tree).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from vmm_process import require_local_kvm, skip_if_stopped_at_kvm

REFERENCE = shutil.which("qemu-system-x86_64", path="/usr/bin")
COLUMNS = ["ours"] + (["reference"] if REFERENCE else [])
HUGE = 5 * 1024 * 1024
TIMEOUT = 30.0          # seconds: a connection's wait for any one reply


# Debian's QEMU 7.2 reads its monitor one byte per main-loop iteration,
# about 7.5 us a byte on a quiet bench (38 s for HUGE), so a connection
# that sends megabytes waits in proportion to their size.
SECONDS_PER_BYTE = 20e-6


def allow_time_for(qmp, size):
    qmp.sock.settimeout(max(TIMEOUT, size * SECONDS_PER_BYTE))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RawQMP:
    """A connection that sends bytes as given and reads JSON values as they
    come (compact or pretty), keeping the raw text for shape checks."""

    def __init__(self, address, timeout=TIMEOUT):
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(family, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            try:
                self.sock.connect(address)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.buf = ""
        self.raw = ""
        self.greeting = self.recv()

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def recv(self):
        decoder = json.JSONDecoder()
        while True:
            text = self.buf.lstrip()
            if text:
                try:
                    value, end = decoder.raw_decode(text)
                    self.buf = text[end:]
                    return value
                except json.JSONDecodeError:
                    pass
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the VMM closed the connection")
            decoded = chunk.decode()
            self.raw += decoded
            self.buf += decoded

    def request(self, data):
        """Send data, return the next message that is not an event."""
        self.send(data)
        while True:
            msg = self.recv()
            if "event" not in msg:
                return msg

    def until_id(self, ident):
        """Messages up to the one answering id (those before it returned too)."""
        before = []
        while True:
            msg = self.recv()
            if msg.get("id") == ident:
                return msg, before
            before.append(msg)

    def execute(self, command, arguments=None, ident=None):
        msg = {"execute": command}
        if arguments is not None:
            msg["arguments"] = arguments
        if ident is not None:
            msg["id"] = ident
        return self.request(json.dumps(msg))

    def negotiate(self):
        assert self.execute("qmp_capabilities") == {"return": {}}


def assert_error(resp, cls, desc, ident=None):
    expected = {"error": {"class": cls, "desc": desc}}
    if ident is not None:
        expected["id"] = ident
    assert resp == expected


@pytest.fixture(scope="module", params=COLUMNS)
def vmm(request, our_vmm, tiny_kernels, tmp_path_factory):
    """The running VMM and its three monitors' addresses."""
    column = request.param
    require_local_kvm()     # the reference too: both take -accel kvm here
    binary = our_vmm if column == "ours" else REFERENCE
    tmp = tmp_path_factory.mktemp(f"qmp-{column}")
    unix_a, unix_c = str(tmp / "a.sock"), str(tmp / "c.sock")
    port = free_port()
    args = [binary, "-accel", "kvm", "-m", "64M", "-nodefaults", "-display", "none",
            "-kernel", str(tiny_kernels / "tiny.elf"), "-append", "idle",
            "-qmp", f"unix:{unix_a},server=on,wait=off",
            "-qmp", f"tcp:127.0.0.1:{port},server,nowait",
            "-chardev", f"socket,id=monc,path={unix_c},server=on,wait=off",
            "-mon", "chardev=monc,mode=control,pretty=on"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    yield {"proc": proc, "a": unix_a, "b": ("127.0.0.1", port), "c": unix_c,
           "column": column}
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    if column == "ours":
        # Our VMM removes its unix sockets at exit.
        assert not os.path.exists(unix_a) and not os.path.exists(unix_c)


@pytest.fixture
def qmp(vmm):
    conn = RawQMP(vmm["a"])
    yield conn
    conn.close()


def test_greeting_shape(qmp):
    g = qmp.greeting
    assert list(g) == ["QMP"]
    assert list(g["QMP"]) == ["version", "capabilities"]
    version = g["QMP"]["version"]
    assert list(version) == ["qemu", "package"]
    assert version["qemu"]["major"] == 7 and version["qemu"]["minor"] == 2
    assert isinstance(version["qemu"]["micro"], int)
    assert isinstance(version["package"], str)
    assert g["QMP"]["capabilities"] == ["oob"]
    # One line, ended as QEMU ends every line.
    assert qmp.raw.endswith("}\r\n") and qmp.raw.count("\n") == 1


def test_negotiation_rules(qmp):
    assert_error(qmp.execute("query-version", ident=1), "CommandNotFound",
                 "Expecting capabilities negotiation with 'qmp_capabilities'", 1)
    assert_error(qmp.execute("no-such-command"), "CommandNotFound",
                 "Expecting capabilities negotiation with 'qmp_capabilities'")
    assert_error(qmp.execute("qmp_capabilities", {"enable": ["foo"]}), "GenericError",
                 "Parameter 'null' does not accept value 'foo'")
    assert_error(qmp.execute("qmp_capabilities", {"enable": [1]}), "GenericError",
                 "Invalid parameter type for 'enable[0]', expected: string")
    assert_error(qmp.execute("qmp_capabilities", {"enable": "oob"}), "GenericError",
                 "Invalid parameter type for 'enable', expected: array")
    assert qmp.execute("qmp_capabilities", {"enable": ["oob"]}, ident="n") == \
        {"return": {}, "id": "n"}
    assert_error(qmp.execute("qmp_capabilities"), "CommandNotFound",
                 "Capabilities negotiation is already complete, command ignored")
    # With oob enabled, exec-oob is a member; no command here supports it.
    assert_error(qmp.request('{"exec-oob": "query-version", "id": 2}'), "GenericError",
                 "The command query-version does not support OOB", 2)
    assert_error(qmp.request('{"exec-oob": "query-version", "execute": "query-version"}'),
                 "GenericError", "QMP input member 'execute' clashes with 'exec-oob'")


def test_id_echoed_verbatim(qmp):
    qmp.negotiate()
    for ident in [7, "text", [1, {"a": None}], {"x": [True, False]}, None, 2.5, -3]:
        resp = qmp.request(json.dumps({"execute": "query-version", "id": ident}))
        assert "return" in resp and "id" in resp and resp["id"] == ident
    # On errors too.
    assert_error(qmp.execute("nope", ident={"k": "v"}), "CommandNotFound",
                 "The command nope has not been found", {"k": "v"})


def test_query_version_matches_greeting(qmp):
    qmp.negotiate()
    assert qmp.execute("query-version") == {"return": qmp.greeting["QMP"]["version"]}


def test_malformed_json(qmp):
    qmp.negotiate()
    for bad in ['{"execute": "query-version",}', '{"execute": tru}', '{ bad }', "}"]:
        resp = qmp.request(bad)
        assert resp["error"]["class"] == "GenericError", bad
        assert resp["error"]["desc"].startswith("JSON parse error, "), (bad, resp)
        assert set(resp) == {"error"}
    assert_error(qmp.request("nul "), "GenericError", "JSON parse error, invalid keyword 'nul'")
    assert_error(qmp.request('{"execute": "query-version", "execute": "x"}'), "GenericError",
                 "JSON parse error, duplicate key")
    # QEMU reads an integer below int64 as a floating-point number.
    assert qmp.request('{"execute": "query-version", "id": -9223372036854775809}')["id"] \
        == -9.2233720368547758e+18
    # QEMU's single-quoted strings.
    assert "return" in qmp.request("{'execute': 'query-version'}")
    # After a byte no token has, input up to the next '{' is skipped.
    assert_error(qmp.request("\x01"), "GenericError", "JSON parse error, stray '\x01'")
    qmp.send("nul 12 ")
    assert qmp.request('{"execute": "query-version", "id": 3}')["id"] == 3


def test_non_object_input(qmp):
    qmp.negotiate()
    for text in ["[1, 2]", '"str"', "123 ", "true "]:
        assert_error(qmp.request(text), "GenericError", "QMP input must be a JSON object")


def test_request_members(qmp):
    qmp.negotiate()
    assert_error(qmp.request('{"foo": 1}'), "GenericError",
                 "QMP input member 'foo' is unexpected")
    assert_error(qmp.request('{"execute": 1}'), "GenericError",
                 "QMP input member 'execute' must be a string")
    assert_error(qmp.request('{"execute": "query-version", "arguments": []}'),
                 "GenericError", "QMP input member 'arguments' must be an object")
    assert_error(qmp.request('{"id": 5}'), "GenericError",
                 "QMP input lacks member 'execute'", 5)


def test_unknown_command(qmp):
    qmp.negotiate()
    assert_error(qmp.execute("x-no-such-command", ident="u"), "CommandNotFound",
                 "The command x-no-such-command has not been found", "u")


def test_wrong_argument_types(qmp):
    qmp.negotiate()
    assert_error(qmp.execute("query-version", {"verbose": True}), "GenericError",
                 "Parameter 'verbose' is unexpected")
    assert_error(qmp.execute("qmp_capabilities", {"enable": {}}), "GenericError",
                 "Invalid parameter type for 'enable', expected: array")


def test_huge_message(qmp):
    qmp.negotiate()
    allow_time_for(qmp, HUGE)
    ident = "x" * HUGE
    qmp.send(json.dumps({"execute": "query-version", "id": ident}))
    resp, before = qmp.until_id(ident)
    assert "return" in resp and not before
    # Nesting beyond QEMU's limit: an error first (QEMU then complains about
    # the rest of the value too), and the connection still serves.
    qmp.send("[" * 1100 + "]" * 1100 + '{"execute": "query-version", "id": "after"}')
    resp, before = qmp.until_id("after")
    assert "return" in resp
    assert before[0] == {"error": {"class": "GenericError",
                                   "desc": "JSON nesting depth limit exceeded"}}
    assert all("error" in m for m in before)


def test_token_count_limit(qmp):
    """QEMU's limit of 2 Mi tokens a message, to the token: an id of n
    ones in a query-version request is 2n + 9 tokens."""
    qmp.negotiate()
    limit = 2 * 1024 * 1024
    at = (limit - 9) // 2
    allow_time_for(qmp, 2 * at)
    for n, fits in ((at, True), (at + 1, False)):
        qmp.send('{"execute": "query-version", "id": [' + ",".join(["1"] * n) + "]}"
                 + '{"execute": "query-version", "id": "after"}')
        resp, before = qmp.until_id("after")
        assert "return" in resp
        if fits:
            assert len(before) == 1 and len(before[0]["id"]) == n
        else:
            assert before[0] == {"error": {"class": "GenericError",
                                           "desc": "JSON token count limit exceeded"}}


def test_disconnect_mid_message_then_reconnect(vmm):
    first = RawQMP(vmm["a"])
    first.negotiate()
    first.send('{"execute": "query-ver')
    first.close()
    second = RawQMP(vmm["a"])
    assert "QMP" in second.greeting
    # A new connection negotiates again; the half message is forgotten.
    assert_error(second.execute("query-version"), "CommandNotFound",
                 "Expecting capabilities negotiation with 'qmp_capabilities'")
    second.negotiate()
    assert "return" in second.execute("query-version")
    second.close()


def test_several_monitors_at_once(vmm):
    conns = [RawQMP(vmm[k]) for k in ("a", "b", "c")]
    for conn in conns:
        conn.negotiate()
    for i, conn in enumerate(conns):
        conn.send(json.dumps({"execute": "query-version", "id": i}))
    for i, conn in enumerate(conns):
        resp, _ = conn.until_id(i)
        assert "return" in resp
    # The -mon ...,pretty=on monitor indents, QEMU's way.
    assert '{\r\n    "QMP": {\r\n        "version": {\r\n' in conns[2].raw
    assert '"return": {\r\n    }\r\n}\r\n' in conns[2].raw
    for conn in conns:
        conn.close()


def test_vmm_still_running(vmm):
    assert vmm["proc"].poll() is None, vmm["proc"].stderr.read().decode()
    conn = RawQMP(vmm["a"])
    conn.negotiate()
    assert "return" in conn.execute("query-version")
    conn.close()


@pytest.mark.parametrize("args,named", [
    (["-chardev", "null,id=c0", "-serial", "chardev:c0", "-mon", "chardev=c0,mode=control"],
     "Device 'c0' is in use"),
    (["-qmp", "unix:{tmp}/q.sock"], "socket client mode is not supported"),
    (["-qmp", "tcp:127.0.0.1:1,server=on"], "add wait=off"),
])
def test_monitor_errors_exit_1_with_one_line(our_vmm, tiny_kernels, tmp_path, args, named):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run([our_vmm, "-accel", "kvm", "-m", "64M", "-nodefaults",
                           "-kernel", str(tiny_kernels / "tiny.elf"), *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    skip_if_stopped_at_kvm(proc.stderr)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and named in proc.stderr, proc.stderr
