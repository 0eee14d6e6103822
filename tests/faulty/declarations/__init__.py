"""Subject modules that fail to declare, one error each (tests/test_faults.py loads them
through $PROOFBENCH_SUBJECTS and expects one line naming the file and the line)."""
