"""proofbench: declarative benchmarks and regression tracking for ML optimizations."""
