"""`proofbench ingest`: take asv results files into the database (no subject is imported)."""
from __future__ import annotations

import argparse
from pathlib import Path

from proofbench.cli.common import add_db_option, engine, optional_project, show_ingest


def add_parser(sub) -> None:
    parser = sub.add_parser("ingest", help="take asv results files into the database")
    parser.add_argument("paths", nargs="*", type=Path, help="results files, machine directories or results "
                        "directories (default: the project's asv results directory)")
    parser.add_argument("--sidecar", type=Path, default=None, help="diagnostics file (default: the project's)")
    parser.add_argument("--machines", type=Path, action="append", default=None, metavar="DIR",
                        help="a directory of machine profiles (<name>.json) that `proofbench run` wrote; may be "
                        "given more than once (default: the project's)")
    parser.add_argument("--repo", type=Path, default=None, help="git checkout of the benchmarked project: commit "
                        "subjects, authors and dates, and each commit's place on --branch's first-parent history "
                        "(default: asv.conf.json's repo for metadata, when it is a local checkout)")
    parser.add_argument("--branch", default=None, help="with --repo, the branch whose first-parent history orders "
                        "the commits (default: the repository's current branch)")
    add_db_option(parser)
    parser.set_defaults(handler=handle)


def expand(paths: list[Path]) -> list[Path]:
    """Results files named directly or found under directories (a results or a machine directory, or
    an asv project's: the results directory its asv.conf.json names)."""
    from proofbench.errors import InputError
    from proofbench.pipeline import results_file

    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = results_file.find(_results_of(path))
            if not found:
                raise InputError(f"{path}: no asv results files in it (expected <results>/<machine>/<commit>-<env>"
                                 f".json, or a machine's directory of them)")
            out.extend(found)
        elif path.exists() or path.is_symlink():
            out.append(path)
        else:
            raise InputError(f"{path}: no such results file or directory")
    return out


def _results_of(directory: Path) -> Path:
    # an asv project's directory (its asv.conf.json there, which is no results file): its results_dir
    from proofbench.pipeline.asv import read_config

    config = directory / "asv.conf.json"
    return directory / str(read_config(config).get("results_dir", "results")) if config.is_file() else directory


def handle(args: argparse.Namespace) -> int:
    from proofbench import git
    from proofbench.errors import InputError
    from proofbench.pipeline import diagnostics, history, labels
    from proofbench.pipeline.asv import Layout
    from proofbench.pipeline.ingest import Profiles, Sources, ingest, machine_profiles

    if args.branch is not None and args.repo is None:
        raise InputError("ingest: --branch needs --repo (the checkout whose first-parent history of the branch "
                         "orders the commits); give --repo too, or leave --branch out")
    found = optional_project(args)
    db = engine(args, found)  # first: a database proofbench cannot use stops the command before it reads anything
    layout = Layout.of(found) if found is not None else None
    if not args.paths and layout is None:
        raise InputError("ingest: name the results files or directories (there is no project here to take "
                         "them from)")
    paths = expand(args.paths or [layout.results])
    repo = args.repo.resolve() if args.repo else _local_repository(layout, history)
    branch = (args.branch or git.current_branch(repo) or "HEAD") if args.repo else None
    profiles = machine_profiles(layout.machines) if layout is not None else Profiles()
    for directory in args.machines or ():
        profiles = profiles.merged(machine_profiles(directory))
    sidecar = args.sidecar or (layout.sidecar if layout is not None else None)
    given = Sources(labels=labels.read(layout.benchmarks) if layout is not None else {},
                    diagnostics=diagnostics.load(sidecar), repo=repo, profiles=profiles, branch=branch)
    return show_ingest(ingest(db, paths, given))


def _local_repository(layout, history) -> Path | None:
    # asv.conf.json's repo gives commit metadata when it is a checkout on this machine
    from proofbench.errors import InputError

    if layout is None:
        return None
    try:
        repo = history.repository(layout)
    except InputError:
        return None  # a URL: nothing to read commit metadata from
    return repo if (repo / ".git").exists() else None
