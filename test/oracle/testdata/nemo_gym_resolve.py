# Runs NeMo Gym's own `ng env resolve` (nemo_gym.cli.main.main, unmodified)
# once per case, inside the root, and leaves each case's stdout, stderr and
# exit code in files for the Go test to compare.
#
# usage: python nemo_gym_resolve.py SPEC.json
#
# SPEC is {"jobs": N, "secret_rule": {"contains": [...], "suffix": [...], "auth": bool},
#          "cases": [{"args": [...], "out": PREFIX}, ...]}; args follow
# `ng env resolve`.
# Every case runs from this process's cwd. The results are PREFIX.stdout,
# PREFIX.stderr and PREFIX.rc.
#
# Speed: importing nemo_gym costs seconds, a parse well under one. So this
# process imports the CLI once and forks one child per case; each child
# starts from the freshly imported modules (nothing has been parsed or
# cached yet), so every case sees exactly what a fresh `ng env resolve` run
# from this cwd would. nemo_gym fixes WORKING_DIR to the cwd at import, so
# the test starts one of these processes per cwd. The test keeps the import
# single-threaded (OPENBLAS_NUM_THREADS=1, no jemalloc background thread), so
# forking is safe; should a thread appear anyway, this says so on stderr.
#
# The one substitution: NeMo Gym's secret-key predicate
# (nemo_gym.secret_utils.looks_like_secret_key) is replaced by gym's rule,
# which the test passes in. gym masks a different set of keys on purpose (the
# README's compatibility table); with both masking the same keys, through
# NeMo Gym's own masking walk, every other leaf can be compared exactly.
import json
import os
import sys
import traceback

spec = json.load(open(sys.argv[1]))

import nemo_gym.secret_utils as secret_utils

_rule = spec["secret_rule"]


def _has_auth(k):
    i = k.find("auth")
    while i >= 0:
        rest = k[i:]
        if not rest.startswith("author") or rest.startswith(("authoriz", "authoris")):
            return True
        i = k.find("auth", i + 1)
    return False


def looks_like_secret_key(key):
    k = str(key).lower()
    return (
        any(s in k for s in _rule["contains"])
        or any(k.endswith(s) for s in _rule["suffix"])
        or (_rule.get("auth", False) and _has_auth(k))
    )


secret_utils.looks_like_secret_key = looks_like_secret_key

import nemo_gym.cli.env  # noqa: E402,F401  (what `env resolve` dispatches to)
import nemo_gym.cli.main as cli_main  # noqa: E402
import nemo_gym.global_config  # noqa: E402,F401

assert nemo_gym.global_config.recursively_hide_secrets.__module__ == "nemo_gym.secret_utils"

if os.path.isdir("/proc/self/task") and len(os.listdir("/proc/self/task")) > 1:
    print("nemo_gym_resolve.py: warning: threads exist before fork:", os.listdir("/proc/self/task"), file=sys.stderr)


def run_case(case):
    out = os.open(case["out"] + ".stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(case["out"] + ".stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.argv = ["ng", "env", "resolve", *case["args"]]
    code = 0
    try:
        cli_main.main()
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def main():
    jobs = max(1, int(spec.get("jobs", 1)))
    running = {}
    pending = list(spec["cases"])
    while pending or running:
        while pending and len(running) < jobs:
            case = pending.pop(0)
            pid = os.fork()
            if pid == 0:
                run_case(case)
            running[pid] = case
        pid, status = os.wait()
        case = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        with open(case["out"] + ".rc", "w") as f:
            f.write(f"{code}\n")


main()
