"""proofbench's own catalogue of seed subjects: one module of declarations per area (serving beside
inference), their building blocks in `workloads/`, and the claims of the seed documents in
claims.toml. It is a project like any other (proofbench.toml at the repository root names these
modules), and it uses only the public API, `from proofbench import ...`."""
