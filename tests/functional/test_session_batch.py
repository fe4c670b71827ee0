"""The session's one bench batch (session_batch.py), without booting
anything: run_batch is replaced by a recorder."""

import subprocess
import types

import pytest

import session_batch
from kvmhost import Fragment, Outcome


def module(name, batch=None):
    mod = types.ModuleType(name)
    if batch:
        mod.bench_batch = batch
    return mod


def session():
    return session_batch.Session("/vmm", None, {"net": {"case_a"}})


@pytest.fixture
def batches(monkeypatch):
    """Every run_batch call, as (fragment names, files); each fragment
    comes back with status 0."""
    calls = []

    def record(frags, files=None):
        calls.append(([f.name for f in frags], files))
        return {f.name: Outcome(f.name, 0, "", {}) for f in frags}
    monkeypatch.setattr(session_batch.kvmhost, "run_batch", record)
    return calls


def test_every_module_joins_one_batch_and_reads_all_outcomes(batches):
    disk = module("disk", lambda s: ([Fragment("d1", "", s.our_vmm)], {"img": "/a.img"}))
    net = module("net", lambda s: ([Fragment(n, "", s.our_vmm)
                                    for n in sorted(s.selected_ids("net"))], {"qemu": "/q"}))
    runs = session_batch.run([disk, net], session())
    assert batches == [(["d1", "case_a"], {"img": "/a.img", "qemu": "/q"})]
    assert set(runs.of(disk)) == set(runs.of(net)) == {"d1", "case_a"}


def test_a_modules_skip_or_failure_is_its_own(batches):
    def no_tool(_):
        pytest.skip("genisoimage is not installed")

    def broken(_):
        pytest.fail("npm's qemu-qmp is not installed")

    def build_breaks(_):
        raise subprocess.CalledProcessError(1, "ninja")
    cd, npm, tsan = module("cd", no_tool), module("npm", broken), module("tsan", build_breaks)
    fine = module("fine", lambda s: ([Fragment("f", "", s.our_vmm)], {}))
    runs = session_batch.run([cd, npm, tsan, fine], session())
    assert batches == [(["f"], {})]
    assert "f" in runs.of(fine)
    with pytest.raises(pytest.skip.Exception, match="genisoimage"):
        runs.of(cd)
    with pytest.raises(pytest.fail.Exception, match="qemu-qmp"):
        runs.of(npm)
    with pytest.raises(subprocess.CalledProcessError):
        runs.of(tsan)


def test_nothing_to_boot_boots_nothing(batches):
    runs = session_batch.run([module("empty", lambda s: ([], {}))], session())
    assert batches == [] and runs.of(module("empty", lambda s: ([], {}))) == {}


def test_clashing_names_and_files_stop_before_anything_boots(batches):
    one = module("one", lambda s: ([Fragment("x", "", s.our_vmm)], {"f": "/1"}))
    same_name = module("two", lambda s: ([Fragment("x", "", s.our_vmm)], {}))
    same_file = module("three", lambda s: ([Fragment("y", "", s.our_vmm)], {"f": "/2"}))
    with pytest.raises(ValueError, match="fragment x of two is also one's"):
        session_batch.run([one, same_name], session())
    with pytest.raises(ValueError, match="bench file f of three"):
        session_batch.run([one, same_file], session())
    assert batches == []


def test_a_module_without_a_batch_has_no_outcomes(batches):
    runs = session_batch.run([], session())
    with pytest.raises(LookupError, match="tiny has no bench_batch"):
        runs.of(module("tiny"))


def test_modules_and_ids_come_from_the_selected_items():
    disk = module("disk", lambda s: ([], {}))
    plain = module("plain")
    items = [types.SimpleNamespace(module=disk, callspec=types.SimpleNamespace(id="a")),
             types.SimpleNamespace(module=plain),
             types.SimpleNamespace(module=disk, callspec=types.SimpleNamespace(id="b"))]
    assert session_batch.bench_modules(items) == [disk]
    assert session_batch.selected_ids(items) == {"disk": {"a", "b"}}
