"""The numpy reference, counting its imports: each import of this module appends a line (the
importing process's id) to the file NORMCHECK_TEST_IMPORT_LOG names. expect_imports.sh reads it:
a campaign imports the module once, in the bridge's zygote, whatever the number of properties."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from numpy_reference import NORMCHECK_CAPABILITIES, backward, forward  # noqa: E402,F401

if os.environ.get("NORMCHECK_TEST_IMPORT_LOG"):
    with open(os.environ["NORMCHECK_TEST_IMPORT_LOG"], "a") as log:
        log.write(f"{os.getpid()}\n")
