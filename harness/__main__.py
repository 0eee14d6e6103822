"""`python -m proofbench`: the command line, as the `proofbench` script runs it."""
import sys

from proofbench.cli import main

sys.exit(main())
