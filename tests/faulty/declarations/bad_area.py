"""A subject declared in an area whose name cannot name a module of the suite."""
from proofbench.declare import Subject, Variant
from proofbench.registry import register
from tests.faulty.declarations.common import SAME, SIZES, prepare

VARIANTS = (Variant("baseline", abs), Variant("optimized", abs))

register(Subject(  # the error
    area="Cooking-Pot", name="stew", item="pot", description="an area that is no module name",
    prepare=prepare, variants=VARIANTS, equivalence=SAME, sizes=SIZES,
))
