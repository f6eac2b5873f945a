"""Run the repository's *current* tests against mutants of the last mutmut run.

mutmut copies the tests into its ``mutants`` folder when a run starts, so tests added
afterwards (the pins written against that run's survivors) are not seen by ``mutmut run``
on those mutants; a fresh full run takes tens of minutes. This runs the named mutants
(``MUTANT_UNDER_TEST``, as mutmut's own workers do: one forked pytest each, the module
imported from the mutants' ``src``) against test paths of the working tree, and prints
``killed``, ``SURVIVED`` or ``timeout`` per mutant. Adding tests never revives a killed
mutant, so a mutant killed here is killed.

    benchmarks/mutation.sh MODULE recheck TESTS...   (the mutants: the last run's not killed)
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from pathlib import Path

import pytest


def main(scratch: Path, repo: Path, tests: list[str], names: list[str]) -> None:
    os.chdir(scratch / "mutants")
    sys.path.insert(0, "src")
    os.environ["HYPOTHESIS_PROFILE"] = "mutation"
    # Imported once, before forking (as mutmut's workers do); the mutant is chosen at
    # each call by MUTANT_UNDER_TEST.
    importlib.import_module("tron_server.paths")
    importlib.import_module("tron_server.shell")
    sys.path.insert(1, str(repo))  # the tests' own plugin, heavy: imported once too
    importlib.import_module("tests.support.fixtures")
    # First with no mutant: tests failing on the unmutated code would "kill" every mutant
    # (the mutants are of the source as it was when the mutmut run started).
    for name in ["(none)", *names]:
        pid = os.fork()
        if pid == 0:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.environ["MUTANT_UNDER_TEST"] = name
            signal.alarm(300)  # a mutant that loops outside a test
            # ... and inside one: pytest-timeout (which owns SIGALRM during a test) fails it
            args = ["-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0"]
            args += ["--timeout", "30"]
            os._exit(int(pytest.main(args + [str(repo / t) for t in tests])))
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            verdict = "timeout"
        else:
            verdict = "SURVIVED" if os.waitstatus_to_exitcode(status) == 0 else "killed"
        if name == "(none)":
            if verdict != "SURVIVED":
                sys.exit("the tests fail on the unmutated code of the last run: run it again")
            continue
        print(verdict, name, flush=True)


if __name__ == "__main__":
    # scratch repo tests... -- names...
    split = sys.argv.index("--")
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:split], sys.argv[split + 1 :])
