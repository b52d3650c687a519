#!/usr/bin/env python3
"""junit_readback.py FILE PROPERTY: reads a JUnit report the way a CI system's parser does
(xml.etree, the testsuite/testcase/failure/skipped schema) and checks what a reader needs: the
counts agree with the testcases, PROPERTY failed with its counterexample and reproduce line, a
skipped property says why. Prints what it read."""
import sys
import xml.etree.ElementTree as ET

path, failing = sys.argv[1], sys.argv[2]
root = ET.parse(path).getroot()
suites = root.findall("testsuite") if root.tag == "testsuites" else [root]
assert len(suites) == 1, f"{len(suites)} testsuites"
suite = suites[0]
cases = suite.findall("testcase")
failed = [c for c in cases if c.find("failure") is not None]
skipped = [c for c in cases if c.find("skipped") is not None]
assert int(suite.get("tests")) == len(cases), "tests count"
assert int(suite.get("failures")) == len(failed), "failures count"
assert int(suite.get("skipped")) == len(skipped), "skipped count"
properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
for key in ("kernel", "backend", "seed"):
    assert properties.get(key), f"the suite has no {key} property"
named = [c for c in failed if c.get("name") == failing]
assert named, f"{failing} is not among the failures: {[c.get('name') for c in failed]}"
failure = named[0].find("failure")
text = failure.text or ""
for needed in ("counterexample", "reproduce:", "--property " + failing):
    assert needed in text, f"the failure of {failing} does not say '{needed}'"
assert failure.get("message"), "the failure has no message"
for c in skipped:
    assert c.find("skipped").get("message"), f"{c.get('name')} is skipped without a reason"
print(f"{path}: {len(cases)} testcases, {len(failed)} failed, {len(skipped)} skipped; "
      f"kernel {properties['kernel']}, seed {properties['seed']}")
print(f"failure of {failing}: {failure.get('message')}")
print(text.splitlines()[-1])
