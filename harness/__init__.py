"""proofbench: declarative benchmarks and regression tracking for the speedups ML documents promise.

The one import path for subject authors:

    from proofbench import (Context, Equivalence, Measure, Metric, Part, Size, Skip, State, Subject, Variant, Workload,
                            register)

Everything else is private to its stage (see README, "Layout").
"""
from proofbench.declare import (
           PEAK_MEMORY,
           TIME,
           Context,
           Equivalence,
           Measure,
           Metric,
           Part,
           Size,
           State,
           Subject,
           Variant,
           Workload,
)
from proofbench.errors import Skip
from proofbench.registry import register

__all__ = ["Context", "Equivalence", "Measure", "Metric", "Part", "PEAK_MEMORY", "Size", "Skip", "State", "Subject",
           "TIME",
           "Variant", "Workload", "register"]
