"""One bench batch for the whole test session.

Each L1 boot costs about ten seconds, and a module's batch shared out among
the L1 hosts leaves one of them idle while the other finishes its longer
share. So the modules that boot Linux guests on the bench do not each run a
batch: every one of them defines

    def bench_batch(session):  ->  ([Fragment, ...], {bench file: host path})

and the first test that needs a result runs every selected module's
fragments in one run_batch (conftest.py's bench_runs fixture). A module's
tests then read their outcomes as the `runs` fixture (conftest.py).

A module's bench_batch may skip or fail (pytest.skip, pytest.fail, or any
error: a build that breaks) for a reason of its own: that module's tests
get the skip or the error, and every other module's fragments still run.
Fragment names are the outcomes' keys, so they must be unique across
modules; a clash is an error before anything boots.
"""

import dataclasses

import pytest

import kvmhost


@dataclasses.dataclass
class Session:
    """What a module's bench_batch may ask for."""
    our_vmm: str
    tmp_path_factory: pytest.TempPathFactory
    selected: dict             # {module name: ids of its selected parametrized tests}

    def selected_ids(self, module_name):
        return self.selected.get(module_name, set())


class BenchRuns:
    def __init__(self, outcomes, problems):
        self.outcomes = outcomes    # {fragment name: Outcome}
        self.problems = problems    # {module name: the skip or failure its bench_batch raised}

    def of(self, module):
        """The outcomes, as a module's tests read them; or that module's own
        skip or failure, raised again for each of its tests."""
        if not hasattr(module, "bench_batch"):
            raise LookupError(f"{module.__name__} has no bench_batch: none of the "
                              "session batch's outcomes are its")
        if module.__name__ in self.problems:
            raise self.problems[module.__name__]
        return self.outcomes


def bench_modules(items):
    """The modules of the selected items that take part, in test order."""
    modules = []
    for item in items:
        module = getattr(item, "module", None)
        if hasattr(module, "bench_batch") and module not in modules:
            modules.append(module)
    return modules


def selected_ids(items):
    selected = {}
    for item in items:
        if hasattr(item, "callspec"):
            selected.setdefault(item.module.__name__, set()).add(item.callspec.id)
    return selected


def run(modules, session):
    """Every module's fragments in one batch; a BenchRuns."""
    fragments, files, problems, owner = [], {}, {}, {}
    for module in modules:
        try:
            frags, module_files = module.bench_batch(session)
        except (Exception, pytest.skip.Exception, pytest.fail.Exception) as err:
            problems[module.__name__] = err
            continue
        for frag in frags:
            if frag.name in owner:
                raise ValueError(f"fragment {frag.name} of {module.__name__} is also "
                                 f"{owner[frag.name]}'s: names must be unique in the session")
            owner[frag.name] = module.__name__
        for name, path in module_files.items():
            if files.get(name, path) != path:
                raise ValueError(f"bench file {name} of {module.__name__} is another "
                                 f"module's {files[name]}")
            files[name] = path
        fragments += frags
    outcomes = kvmhost.run_batch(fragments, files=files) if fragments else {}
    return BenchRuns(outcomes, problems)
