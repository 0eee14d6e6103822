"""`python -m proofbench`: the command line, as the `proofbench` script runs it."""
from proofbench.cli import run

run()
