"""The subjects: each optimization claim made runnable, one module per area."""
