"""One module per `proofbench` subcommand: each has `add_parser(subparsers)` and `handle(args)`.

Modules import their heavy dependencies inside `handle`, so `proofbench --help` stays instant.
"""
