"""What machine this is: hardware, the torch stack and GPUs, as a profile with a fingerprint."""
