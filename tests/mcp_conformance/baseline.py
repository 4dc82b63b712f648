"""Compares a conformance run's results (`conformance server ... -o DIR`) with the checks
expected to fail at one revision (a JSON file, per revision: whole scenarios, or single checks
of a scenario).

Fails on a failed check that is not expected, on an expected scenario or check that passed
(the list must not go stale), and on an expected scenario that did not run.

    python3 tests/mcp_conformance/baseline.py DIR tests/mcp_conformance/expected-failures-next.json 2026-07-28
"""

import json
import pathlib
import re
import sys


def main(results: pathlib.Path, expected_path: pathlib.Path, revision: str) -> int:
    expected = json.loads(expected_path.read_text()).get(revision, {})
    whole = expected.get("scenarios", {})
    single = expected.get("checks", {})
    problems = []
    ran = set()
    for checks_file in sorted(results.glob("*/checks.json")):
        # DIR/server-<scenario>-<timestamp>/checks.json
        match = re.fullmatch(r"server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z", checks_file.parent.name)
        if not match:
            problems.append(f"{checks_file}: not a server scenario's result")
            continue
        scenario = match.group(1)
        ran.add(scenario)
        checks = json.loads(checks_file.read_text())
        failed = {c["id"]: c.get("errorMessage", "") for c in checks if c.get("status") == "FAILURE"}
        if scenario in whole:
            if not failed:
                problems.append(f"{scenario}: passes now; remove it from {expected_path.name}")
            continue
        allowed = single.get(scenario, {})
        for check, message in failed.items():
            if check not in allowed:
                problems.append(f"{scenario}: {check} failed: {message}")
        for check in allowed:
            if check not in failed:
                problems.append(f"{scenario}: {check} passes now; remove it from {expected_path.name}")
        passed = len([c for c in checks if c.get("status") == "SUCCESS"])
        print(f"{scenario}: {passed} passed, {len(failed)} failed{' (expected)' if failed else ''}")
    for scenario in list(whole) + list(single):
        if scenario not in ran:
            problems.append(f"{scenario}: expected to fail but did not run")
    for scenario in sorted(whole):
        if scenario in ran:
            print(f"{scenario}: fails, as expected")
    if not ran:
        problems.append(f"no scenario results in {results}")
    for problem in problems:
        print(f"UNEXPECTED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]))
