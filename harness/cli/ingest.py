"""`proofbench ingest`: take asv results files into the database."""
from __future__ import annotations

import argparse
from pathlib import Path

from proofbench.cli.common import add_db_option, engine, optional_project, show_ingest


def add_parser(sub) -> None:
    parser = sub.add_parser("ingest", help="take asv results files into the database")
    parser.add_argument("paths", nargs="*", type=Path, help="results files or directories (default: the project's "
                        "asv results directory)")
    parser.add_argument("--sidecar", type=Path, default=None, help="diagnostics file (default: the project's)")
    parser.add_argument("--machines", type=Path, action="append", default=None, metavar="DIR",
                        help="a directory of machine profiles (<name>.json) that `proofbench run` wrote; may be "
                        "given more than once (default: the project's)")
    parser.add_argument("--repo", type=Path, default=None, help="git checkout the results were measured on, for "
                        "commit order and metadata (default: the project's)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def expand(paths: list[Path]) -> list[Path]:
    """Results files named directly or found under directories."""
    from proofbench.errors import InputError
    from proofbench.pipeline import results_file

    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(results_file.find(path))
        elif path.exists():
            out.append(path)
        else:
            raise InputError(f"{path}: no such results file or directory")
    return out


def handle(args: argparse.Namespace) -> int:
    from proofbench.catalogue import load_catalogue
    from proofbench.errors import InputError
    from proofbench.pipeline.asv import Layout
    from proofbench.pipeline.ingest import Sources, ingest, load_diagnostics, machine_profiles, sources

    found = optional_project(args)
    layout = Layout.of(found) if found is not None else None
    if not args.paths and layout is None:
        raise InputError("ingest: name the results files or directories (there is no project here to take "
                         "them from)")
    paths = expand(args.paths or [layout.results])
    repo = args.repo.resolve() if args.repo else (found.root if found is not None else None)
    if layout is not None:
        given = sources(layout, load_catalogue(found).registry, repo)
    else:
        given = Sources(index={}, diagnostics={}, repo=repo)
    if args.sidecar or args.machines:
        given = Sources(given.index, load_diagnostics(args.sidecar) if args.sidecar else given.diagnostics,
                        given.repo, {k: v for d in args.machines for k, v in machine_profiles(d).items()} if args.machines
                        else given.machine_profiles)
    return show_ingest(ingest(engine(args, found), paths, given))
