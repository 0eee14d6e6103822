"""A small project of deliberately broken subjects and inputs, for tests/test_faults.py.

It runs the real pipeline as any project does: `project.py` makes a project directory (a
proofbench.toml naming `tests.faulty.faults`, an asv.conf.json, a git repository), puts proofbench's
checkout on PYTHONPATH so the subjects import, sets PROOFBENCH_MEMORY_LIMIT=256M, generates the
suite and runs `python -m proofbench run --profile smoke --bench '^loading\\.Faulty' --no-report
--db URL` there.

- `faults.py`: runnable faults (a variant that raises, hangs, exhausts memory, is killed; a
  subject whose input FASTA is malformed) beside sound benchmarks;
- `declarations/`: subject modules that fail to declare, one error each;
- `inputs/`: malformed input files (FASTA, claims and profiles TOML).
"""
