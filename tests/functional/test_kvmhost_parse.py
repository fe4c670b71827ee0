"""The harness's parsing of batch output (no guest needed)."""

import kvmhost

BATCH = """\
noise before
@@TEST-BEGIN alpha
host says hi
@@GUEST-BEGIN g1
KIT-READY
4\r
KIT-EXIT=3

@@GUEST-END g1 rc=7
@@TEST-END alpha rc=0 secs=42
@@TEST-BEGIN beta
@@GUEST-BEGIN hung
KIT-READY
@@GUEST-END hung rc=137 killed=timeout
@@TEST-END beta rc=1
@@TEST-BEGIN gamma
half a line
"""


def test_parse_complete_and_open_fragments():
    out = kvmhost.parse_batch(BATCH)
    assert set(out) == {"alpha", "beta", "gamma"}
    alpha = out["alpha"]
    assert alpha.rc == 0 and "host says hi" in alpha.output
    g1 = alpha.guest("g1")
    assert (g1.rc, g1.killed, g1.kit_exit()) == (7, False, 3)
    assert "4\n" in g1.log          # carriage returns are dropped
    assert out["beta"].guest("hung").killed
    assert out["gamma"].rc is None and "half a line" in out["gamma"].output
    # Its run time, when the host printed one.
    assert [out[n].seconds for n in ("alpha", "beta", "gamma")] == [42, None, None]


def test_expect_guest_reports_console_on_failure():
    out = kvmhost.parse_batch(BATCH)
    kvmhost.expect_guest(out["alpha"], "g1", exit_status=3, vmm_status=7, contains=["^4$"])
    try:
        kvmhost.expect_guest(out["beta"], "hung")
    except AssertionError as err:
        assert "killed at its time limit" in str(err)
        assert "--- console of hung ---\nKIT-READY" in str(err)
    else:
        raise AssertionError("a killed guest passed expect_guest")


def test_retry_only_for_hangs():
    frag = kvmhost.Fragment("x", "", "/bin/true")
    out = kvmhost.parse_batch(BATCH)
    assert kvmhost._needs_retry(frag, out["alpha"]) is None
    assert "killed" in kvmhost._needs_retry(frag, out["beta"])
    assert "never came back" in kvmhost._needs_retry(frag, out["gamma"])
    assert kvmhost._needs_retry(kvmhost.Fragment("x", "", "/bin/true", retry_on_timeout=False),
                                out["beta"]) is None


def test_retry_for_a_guest_that_never_came_up():
    frag = kvmhost.Fragment("x", "", "/bin/true")
    early = kvmhost.parse_batch("@@TEST-BEGIN e\n@@GUEST-BEGIN g\nSeaBIOS\n"
                                "@@GUEST-END g rc=0\n@@TEST-END e rc=0\n")["e"]
    assert "early boot" in kvmhost._needs_retry(frag, early)
    assert kvmhost._needs_retry(kvmhost.Fragment("x", "", "/bin/true", up_marker=None),
                                early) is None
    panicked = kvmhost.parse_batch("@@TEST-BEGIN p\n@@GUEST-BEGIN g\nKernel panic - x\n"
                                   "@@GUEST-END g rc=0\n@@TEST-END p rc=0\n")["p"]
    assert kvmhost._needs_retry(frag, panicked) is None


def test_a_host_that_died_twice_gets_a_third_batch():
    frag = kvmhost.Fragment("x", "", "/bin/true")
    out = kvmhost.parse_batch(BATCH)
    died, killed = out["gamma"], out["beta"]
    assert kvmhost._retry_reason(frag, died, 1) == kvmhost.HOST_DIED
    assert kvmhost._retry_reason(frag, died, 2) == kvmhost.HOST_DIED
    assert kvmhost._retry_reason(frag, died, 3) is None
    assert "killed" in kvmhost._retry_reason(frag, killed, 1)
    assert kvmhost._retry_reason(frag, killed, 2) is None




def test_split_deals_each_kind_of_fragment_to_every_host():
    # Two kinds, as a batch has them: long-limit fragments that run briefly
    # and shorter-limit ones that run long. Each host gets half of each.
    frags = ([kvmhost.Fragment(f"net{i}", "", "/vmm", limit=480) for i in range(4)] +
             [kvmhost.Fragment(f"fio{i}", "", "/vmm", limit=400) for i in range(4)] +
             [kvmhost.Fragment("boot", "", "/vmm", limit=210)])
    groups = kvmhost.split_batch(frags, 2)
    assert [[f.name for f in g] for g in groups] == [
        ["net0", "net2", "fio0", "fio2", "boot"], ["net1", "net3", "fio1", "fio3"]]
    # Never more groups than fragments, none empty.
    assert [len(g) for g in kvmhost.split_batch(frags[:1], 2)] == [1]
