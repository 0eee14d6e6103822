"""asv benchmark modules, generated from the subject registry by `proofbench generate`."""
