#!/usr/bin/env python3
"""`make test`'s verdict on a ctest run: every test passed, or was skipped for a reason that tests/allowed-skips.txt
accepts on this machine. A skip is not a pass: a skip that the list does not accept fails the run as a failed test
does, and every skip is printed with its name and its reason.

  skip_gate.py JUNIT TESTS_JSON ALLOWED CTEST_STATUS [--gpu yes|no] [--root yes|no] [--log PATH]

JUNIT: ctest --output-junit (each test's status, how it was skipped, its output); TESTS_JSON: ctest
--show-only=json-v1 (each test's labels); ALLOWED: tests/allowed-skips.txt; CTEST_STATUS: ctest's exit status.
--gpu and --root stand in for this machine's answers (the gate's own test); --log names the log in the summary.

How a test counts:
  passed   ctest status "run";
  failed   ctest status "fail" (a non-zero exit, a signal, a timeout), or not run for any reason but a skip (no
           executable, a failed fixture), or a skip read from output (SKIP_REGULAR_EXPRESSION: only the
           "\\[  SKIPPED \\]" that gtest_discover_tests gives every GoogleTest test) whose output is not
           GoogleTest's own report of this test skipped ("[ RUN      ] NAME", "[  SKIPPED ] NAME (", the summary
           "[  SKIPPED ] 1 test, listed below:") or also holds "[  FAILED  ]";
  skipped  exit 77 (SKIP_RETURN_CODE; the reason is the test's last "SKIP: " line), GoogleTest's skip (the reason
           is the GTEST_SKIP message) or the DISABLED property; accepted only where an entry of ALLOWED matches.
ALLOWED: one entry a line, "SELECTOR CONDITION REASON", '#' starts a comment. SELECTOR: label:NAME (every test with
that ctest label) or a ctest test name (shell wildcards). CONDITION: when the skip is accepted: no-gpu (this machine
has no NVIDIA GPU: no /dev/nvidia0 and `nvidia-smi -L` fails), gpu, root (run as root), always.
Output: the skips and failures, then `tests: P passed, F failed, S skipped ...` and a line `P passed, F failed`
alone (S: the accepted skips; F includes the skips not accepted). Exit status: 0 when F = 0 and ctest's status
is 0; 1 otherwise; 2 unreadable input (an unreadable file is never a pass)."""
import fnmatch
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

CONDITIONS = ("always", "no-gpu", "gpu", "root")
GTEST_SKIPPED = "[  SKIPPED ] 1 test, listed below:"
GTEST_FAILED = "[  FAILED  ]"


def die(message):
    print("skip_gate: " + message, file=sys.stderr)
    sys.exit(2)


def machine_has_gpu():
    if os.path.exists("/dev/nvidia0"):
        return True
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def read_allowed(path):
    entries = []
    for number, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1] not in CONDITIONS:
            die("%s:%d: expected 'SELECTOR CONDITION REASON' with CONDITION one of %s" % (path, number, ", ".join(CONDITIONS)))
        entries.append((parts[0], parts[1], parts[2]))
    return entries


def read_labels(path):
    try:
        tests = json.load(open(path, encoding="utf-8"))["tests"]
    except (OSError, ValueError, KeyError) as e:
        die("%s: %s" % (path, e))
    labels = {}
    for t in tests:
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                labels[t["name"]] = list(p.get("value", []))
    return labels


def gtest_reason(out):
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            text = []
            for follow in lines[i + 1:]:
                if follow.startswith("[  SKIPPED ]"):
                    break
                text.append(follow.strip())
            return " ".join(t for t in text if t) or "(GTEST_SKIP without a message)"
    return "(no GTEST_SKIP message)"


def classify(case):
    """(kind, reason): kind passed, failed or skipped."""
    name = case.get("name")
    status = case.get("status")
    out = case.findtext("system-out") or ""
    skipped = case.find("skipped")
    message = skipped.get("message", "") if skipped is not None else ""
    if status == "run":
        return "passed", ""
    if status == "disabled":
        return "skipped", "the DISABLED property"
    if status == "notrun" and message.startswith("SKIP_RETURN_CODE="):
        lines = [l[len("SKIP: "):].strip() for l in out.splitlines() if l.startswith("SKIP: ")]
        return "skipped", lines[-1] if lines else "(exit %s without a 'SKIP: why' line)" % message.split("=", 1)[1]
    if status == "notrun" and message == "SKIP_REGULAR_EXPRESSION_MATCHED":
        # ctest names a parameterised test "Suite.Test/param  # GetParam() = ..."; GoogleTest's lines have the
        # name before the comment.
        gname = name.split("  # ", 1)[0]
        own = "[ RUN      ] %s\n" % gname in out and "[  SKIPPED ] %s (" % gname in out
        if own and GTEST_SKIPPED in out and GTEST_FAILED not in out:
            return "skipped", gtest_reason(out)
        return "failed", "its output matched the skip pattern, but it is not GoogleTest's report of this test skipped and nothing failed"
    if status == "notrun":
        return "failed", "did not run: " + (message or "no reason")
    failure = case.find("failure")
    return "failed", (failure.get("message", "") if failure is not None else "") or "failed"


def accepted(name, labels, entries, have_gpu, is_root):
    holds = {"always": True, "no-gpu": not have_gpu, "gpu": have_gpu, "root": is_root}
    for selector, condition, _ in entries:
        if selector.startswith("label:"):
            match = selector[len("label:"):] in labels
        else:
            match = fnmatch.fnmatchcase(name, selector)
        if match and holds[condition]:
            return "%s, %s" % (selector, condition)
    return None


def yes_no(value, default):
    return default() if value is None else value == "yes"


def main(argv):
    opts = {"--gpu": None, "--root": None, "--log": None}
    args = []
    i = 0
    while i < len(argv):
        if argv[i] in opts and i + 1 < len(argv):
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 4 or not re.fullmatch(r"-?\d+", args[3]):
        die("usage: skip_gate.py JUNIT TESTS_JSON ALLOWED CTEST_STATUS [--gpu yes|no] [--root yes|no] [--log PATH]")
    junit, tests_json, allowed_path, ctest_status = args[0], args[1], args[2], int(args[3])
    try:
        cases = ET.parse(junit).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        die("%s: %s" % (junit, e))
    labels = read_labels(tests_json)
    entries = read_allowed(allowed_path)
    have_gpu = yes_no(opts["--gpu"], machine_has_gpu)
    is_root = yes_no(opts["--root"], lambda: os.geteuid() == 0)

    passed, failed, allowed_skips, refused_skips = [], [], [], []
    for case in cases:
        name = case.get("name")
        kind, reason = classify(case)
        if kind == "passed":
            passed.append(name)
        elif kind == "failed":
            failed.append((name, reason))
        else:
            why = accepted(name, labels.get(name, []), entries, have_gpu, is_root)
            (allowed_skips if why else refused_skips).append((name, reason, why))

    for name, reason, why in allowed_skips:
        print("skipped (allowed): %s: %s [%s]" % (name, reason, why))
    for name, reason, _ in refused_skips:
        print("SKIPPED, NOT ALLOWED: %s: %s (not accepted by %s on this machine)" % (name, reason, allowed_path))
    for name, reason in failed:
        print("FAILED: %s: %s" % (name, reason))
    n_failed = len(failed) + len(refused_skips)
    detail = " (%d of them skips not in %s)" % (len(refused_skips), allowed_path) if refused_skips else ""
    log = "; log %s" % opts["--log"] if opts["--log"] else ""
    print("tests: %d passed, %d failed%s, %d skipped (allowed by %s); ctest exit status %d%s"
          % (len(passed), n_failed, detail, len(allowed_skips), allowed_path, ctest_status, log))
    print("%d passed, %d failed" % (len(passed), n_failed))
    return 0 if n_failed == 0 and ctest_status == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
