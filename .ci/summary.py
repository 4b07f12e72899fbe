"""Print one closing line for CI from the test reports of `make test`.

Reads the JUnit XML files of meson (C tests) and pytest (Python tests) and prints
``tests: N passed, M failed, K skipped``; exits non-zero when nothing ran or
something failed, so an empty run can never look green.
"""
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    for s in suites:
        n = int(s.get("tests", 0))
        f = int(s.get("failures", 0)) + int(s.get("errors", 0))
        k = int(s.get("skipped", 0))
        passed += n - f - k
        failed += f
        skipped += k
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
