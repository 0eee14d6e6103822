"""What several commands share: the --project and --db options, the project, the engine, the console."""
from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console

from proofbench import project as project_file
from proofbench.project import Project

console = Console(stderr=True, highlight=False, markup=False)  # text from data is never markup


INTERRUPTED = 130  # the exit status of Ctrl-C or SIGTERM, as a shell gives a process the signal ended

def say(text: str, style: str | None = None) -> None:
    """Print a line to stderr: text from data shows as written (control characters made visible),
    never folded (a path split over two lines cannot be copied)."""
    from proofbench.reports.formatting import visible

    console.print(visible(text), style=style, soft_wrap=True)


def add_project_option(parser: argparse.ArgumentParser) -> None:
    """--project DIR: the project whose file to use (default: found from the working directory up)."""
    parser.add_argument("--project", metavar="DIR", type=Path, default=None,
                        help="the project directory (default: the nearest one holding proofbench.toml, "
                             "from the working directory up)")


def add_profile_option(parser: argparse.ArgumentParser) -> None:
    """--profile NAME: a built-in profile, listed from the built-in profiles file (so the help
    cannot fall behind it), or one of the project's."""
    from proofbench.profile import DEFAULT, builtin_names

    names = ", ".join(f"{name} (default)" if name == DEFAULT else name for name in builtin_names())
    parser.add_argument("--profile", default=None, help=f"{names}, or one of the project's")


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """Every command that touches the database takes --db URL (else $PROOFBENCH_DB, else the project's)."""
    parser.add_argument("--db", metavar="URL", help="SQLAlchemy database URL (default: $PROOFBENCH_DB, else the "
                        "project file's `database`)")
    add_project_option(parser)


def project(args: argparse.Namespace) -> Project:
    """The project of this command; a one-line error naming `proofbench init` when there is none."""
    return project_file.require(getattr(args, "project", None))


def optional_project(args: argparse.Namespace) -> Project | None:
    """The project of this command, for commands that also work without one."""
    given = getattr(args, "project", None)
    return project_file.require(given) if given is not None else project_file.find()


def engine(args: argparse.Namespace, found: Project | None = None, write: bool = True, create: bool = True):
    """An engine on the chosen database, its schema brought up to date; a command that only
    reads passes `write=False` and then also works on a database it may not write; a command that
    works on what was measured passes `create=False`: a SQLite file that is not there is an error,
    never a new empty database (a mistyped --db would let a nightly check pass on nothing)."""
    from proofbench.db.session import connect

    found = found if found is not None else optional_project(args)
    url = project_file.database_url(getattr(args, "db", None), found, create=write and create)
    return connect(url, write=write, create=create)


def known(exc: BaseException) -> BaseException:
    """`exc`, or the ProofbenchError it stands for: a database that failed midway (a full disk)
    is the database's state, exit 2, not a bug in proofbench."""
    from proofbench.db.session import failed_midway

    return failed_midway(exc) or exc


def error_line(exc: BaseException, args: argparse.Namespace) -> str:
    """How an error reads to a user: its message, or for a bug its type and first line; never
    a password of the database URL given (--db, $PROOFBENCH_DB)."""
    from proofbench.db.session import scrub
    from proofbench.errors import ProofbenchError
    from proofbench.reports.formatting import visible

    if isinstance(exc, ProofbenchError):
        text = str(exc)
    else:
        text = f"internal error: {type(exc).__name__}: " + (str(exc).strip().splitlines() or [""])[0][:300]
    for url in filter(None, (getattr(args, "db", None), os.environ.get(project_file.DB_VAR))):
        text = scrub(text, url)
    return visible(text)


def failure(exc: BaseException, args: argparse.Namespace, shown, recorded: int | None = None) -> tuple[int, str]:
    """A failed command's exit code and line, printed in the format asked for (`args.format`;
    `shown`: the command's report module, with `error_json` and `error_markdown`): a bot reading
    the JSON, or a job posting the Markdown, gets the failure, not nothing. `recorded`: the run
    the command had stored before an interrupt (a check interrupted while writing its files)."""
    import json

    from proofbench.errors import ProofbenchError

    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM: a job's timeout
        code, line = INTERRUPTED, "interrupted before it ended; nothing of this run was recorded" if recorded is None \
            else f"interrupted after check run #{recorded} was recorded: its alerts stand (proofbench alerts list)"
    else:
        exc = known(exc)
        code, line = exc.exit_code if isinstance(exc, ProofbenchError) else 3, error_line(exc, args)
    if args.format == "json":
        print(json.dumps(shown.error_json(line, exit_code=code), indent=2))
    elif args.format == "markdown":
        print(shown.error_markdown(line, exit_code=code))
    return code, line


def answer(report, args: argparse.Namespace, shown) -> int:
    """Print `report` in the format asked for (`shown`: its report module, with `to_json`,
    `markdown` and `text`); returns its exit code."""
    import json

    if args.format == "json":
        print(json.dumps(shown.to_json(report), indent=2))
    else:
        print(shown.markdown(report) if args.format == "markdown" else shown.text(report))
    return report.exit_code


def show_ingest(report) -> int:
    """Print an ingest's outcome; 2 when a file was refused (each named on stderr)."""
    import sys

    from proofbench.reports import ingest as shown
    from proofbench.reports.formatting import visible

    say(shown.summary(report))
    for line in shown.refusals(report):
        print(f"proofbench: {visible(line)}", file=sys.stderr)
    return 2 if report.refused else 0


@contextlib.contextmanager
def progress_bar(first: str) -> Iterator[Callable[[float, str], None]]:
    """A transient progress bar on stderr; yields the function asv's progress goes to."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                  TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        task = progress.add_task(first, total=100)
        yield lambda pct, name: progress.update(task, completed=pct, description=name)


def regenerate(catalogue, layout) -> None:
    """Write the suite's generated modules before asv reads them, saying which changed."""
    from proofbench.pipeline.generate import generate

    for path in generate(catalogue.registry, layout.benchmarks):
        say(f"regenerated {path} (commit it for runs across commits)", style="yellow")


def measuring(found: Project) -> contextlib.AbstractContextManager:
    """This process's hold on the project's asv environments, for a command that builds and
    measures commits in them (`proofbench.pipeline.asv.building`): taken before `bench` empties
    its work folders, given back when the command ends. RunError where another process holds it."""
    from proofbench.pipeline.asv import Layout, building

    return building(Layout.of(found))


def bench(found: Project, profile_name: str | None, machine=None):
    """The project's suite ready to measure commits again on this machine (`machine`: its
    profile, captured here when not given) for confirmation and bisection, inside `measuring`;
    RunError/InputError where its repository is not a local checkout."""
    from proofbench.catalogue import load_catalogue
    from proofbench.machine.capture import capture
    from proofbench.pipeline import history
    from proofbench.pipeline.asv import Layout
    from proofbench.pipeline.remeasure import Bench
    from proofbench.profile import get_profile

    layout = Layout.of(found)
    repo = history.repository(layout)
    regenerate(load_catalogue(found), layout)
    profile = get_profile(profile_name, found.profiles)
    return Bench.fresh(layout, repo, history.default_branch(layout, repo), profile, machine or capture())
