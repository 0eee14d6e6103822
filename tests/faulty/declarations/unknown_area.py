"""A subject declared in an area that does not exist."""
from proofbench.declare import Subject, Variant
from proofbench.registry import register
from tests.faulty.declarations.common import SAME, SIZES, prepare

VARIANTS = (Variant("baseline", abs), Variant("optimized", abs))

register(Subject(  # the error
    area="cooking", name="stew", item="pot", description="no such area",
    prepare=prepare, variants=VARIANTS, equivalence=SAME, sizes=SIZES,
))
