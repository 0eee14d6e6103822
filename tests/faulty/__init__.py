"""A small project of deliberately broken subjects and inputs, for tests/test_faults.py.

Plug it into the real pipeline with environment variables (nothing under subjects/,
benchmarks/ or .asv/ is read or written):

    PYTHONPATH=.                                   # `tests.faulty` imports from the project root
    PROOFBENCH_SUBJECTS=tests.faulty.faults        # proofbench.registry.load() imports it alone
    PROOFBENCH_WORKDIR=/some/tmp/dir               # generated benchmarks, results, sidecar go there
    PROOFBENCH_MEMORY_LIMIT=256M                   # bounds each benchmark process (proofbench.measure.bench)

then generate the benchmark module into the work directory (`proofbench.pipeline.generate.generate(
proofbench.registry.load())`) and `python -m proofbench.cli run --profile smoke --bench
'^loading\\.Faulty' --no-report --db URL`. `project.py` does all this for the tests.

- `faults.py`: runnable faults (a variant that raises, hangs, exhausts memory, is killed; a
  subject whose input FASTA is malformed) beside sound benchmarks;
- `declarations/`: subject modules that fail to declare, one error each;
- `inputs/`: malformed input files (FASTA, claims and profiles TOML).
"""
