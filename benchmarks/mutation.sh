#!/usr/bin/env bash
# Mutation testing of the guards (issue 26 item 7), one module at a time, against the
# tests that reach it only. Not run in CI: a module takes minutes to tens of minutes.
#
#   benchmarks/mutation.sh MODULE [JOBS]      MODULE: rules | paths | guardrails | shell | wrappers
#   benchmarks/mutation.sh MODULE results     list the survivors of the last run
#   benchmarks/mutation.sh MODULE show NAME   the diff of one mutant
#   benchmarks/mutation.sh MODULE survivors [JOBS]   run again only the mutants that
#       survived the last run (after adding tests; the source must be unchanged)
#   benchmarks/mutation.sh MODULE resume [JOBS]      go on with an interrupted run
#   benchmarks/mutation.sh MODULE recheck TESTS...   the last run's mutants not killed,
#       against the working tree's TESTS (mutmut runs the copy made when its run started):
#       benchmarks/mutation_recheck.py
#
# mutmut wants the code under ./src and the tests under ./tests of the folder it runs in;
# the workspace keeps tron_server under tron_server/src. So each module gets a scratch
# folder .mutation/MODULE (ignored by git) with `src` and `tests` linked to the real ones
# and a pyproject.toml holding that module's [tool.mutmut] section: mutmut copies both
# into .mutation/MODULE/mutants and imports tron_server from there. Each mutant then runs
# only the selected tests that call the function it mutates (mutmut's own stats).
# Results are in benchmarks/RESULTS_mutation.md.
set -euo pipefail

module=${1:?usage: benchmarks/mutation.sh rules|paths|guardrails|shell|wrappers [JOBS|results|show NAME]}
action=${2:-2}
repo=$(cd "$(dirname "$0")/.." && pwd)
# A mutant still running after 2 x multiplier x (its tests' clean duration + constant)
# CPU seconds, or half that in wall time, is taken as looping (killed).
# mutmut's default, 15 x (t + 1 s), let each looping mutant of the walk hold a worker for
# minutes; the tests' CPU time is steady (derandomized hypothesis, below), so 3 x (t + 2 s)
# still leaves room.
multiplier=3
constant=2.0

case "$module" in
rules)
    mutate='src/tron_server/interaction/rules.py'
    tests="tests/interaction/test_rules.py tests/interaction/test_bash_rules.py"
    tests+=" tests/interaction/test_web_rules.py tests/interaction/test_rules_pins.py"
    ;;
paths)
    mutate='src/tron_server/paths.py'
    tests="tests/tools/test_paths.py tests/tools/test_paths_pins.py"
    ;;
guardrails)
    mutate='src/tron_server/hooks/guardrails.py'
    tests="tests/hooks/test_guardrails.py tests/hooks/test_guardrails_pins.py"
    ;;
shell)
    mutate='src/tron_server/shell/*.py'
    tests="tests/shell"
    # The reader's loops: many of its mutants never end (some grow by a GB in seconds).
    # mutmut also stops a mutant after half the CPU limit in *wall* time: on a loaded
    # machine a run that does end needs the room (1 x (t + 1 s) timed out half of them).
    constant=3.0
    ;;
wrappers)  # shell/wrappers.py alone (a change there after a full shell run)
    mutate='src/tron_server/shell/wrappers.py'
    tests="tests/shell tests/interaction/test_bash_rules.py"
    constant=3.0
    ;;
*)
    echo "unknown module $module: rules, paths, guardrails, shell or wrappers" >&2
    exit 2
    ;;
esac

# The selection as a TOML list, of the files that exist (the pins may not, on an old tree).
selection=""
for test in $tests; do
    [ -e "$repo/$test" ] && selection+="${selection:+, }\"$test\""
done

scratch="$repo/.mutation/$module"
mkdir -p "$scratch"
ln -sfn "$repo/tron_server/src" "$scratch/src"
ln -sfn "$repo/tests" "$scratch/tests"
cat >"$scratch/pyproject.toml" <<EOF
# Written by benchmarks/mutation.sh; edit the script, not this file.
[tool.mutmut]
source_paths = ["src"]
only_mutate = ["$mutate"]
pytest_add_cli_args_test_selection = [$selection]
# No xdist (mutmut forks its own workers), a fixed test order.
pytest_add_cli_args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
# A mutant that loops is killed (SIGXCPU) after 2 x $multiplier x (the tests' clean
# duration + $constant s) CPU seconds.
timeout_constant = $constant
timeout_multiplier = $multiplier

[tool.pytest.ini_options]
addopts = "-ra --strict-markers"
timeout = 300
markers = [
    "postgres: needs the local PostgreSQL service",
    "slow: multi-process and crash tests",
]
EOF

# Hypothesis draws the same examples for every mutant and does not shrink (tests/conftest.py;
# the differential test against bash runs fewer of them): a mutant's verdict does not
# depend on the run, and a killed one costs no search for a minimal case.
export HYPOTHESIS_PROFILE=mutation

# The mutants are made anew from the sources each run: an old copy would hide an edit.
mutmut() { (cd "$scratch" && uv run --project "$repo" --group mutation mutmut "$@"); }
case "$action" in
results) mutmut results ;;
show) mutmut show "${3:?mutant name}" ;;
recheck)
    mapfile -t names < <(mutmut results | sed -n "s/^ *\\([^ ]*\\): \\(survived\\|no tests\\|timeout\\)$/\\1/p")
    uv run --project "$repo" --group mutation python "$repo/benchmarks/mutation_recheck.py" \
        "$scratch" "$repo" "${@:3}" -- "${names[@]}"
    ;;
resume) mutmut run --max-children "${3:-2}" && mutmut results ;;
survivors)
    mapfile -t names < <(mutmut results | sed -n "s/^ *\\([^ ]*\\): \\(survived\\|no tests\\)$/\\1/p")
    mutmut run --max-children "${3:-2}" "${names[@]}"
    mutmut results
    ;;
*)
    rm -rf "$scratch/mutants"
    mutmut run --max-children "$action"
    mutmut results
    ;;
esac
