"""Development scripts: evaluations and benchmarks of proofbench itself, not part of the installed package."""
