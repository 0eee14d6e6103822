"""`proofbench gate BASE [HEAD]`: a pull-request gate. The merge-base of BASE and HEAD and HEAD itself
are measured in alternating rounds (as asv continuous compares two commits, with the round as the
unit), each series judged by the nightly check's re-measurement rules. Exit 1 on a regression."""
from __future__ import annotations

import argparse

from proofbench.cli.common import (
    add_profile_option,
    add_project_option,
    answer,
    failure,
    measuring,
    project,
    regenerate,
    say,
)

FORMATS = ("text", "markdown", "json")


def add_parser(sub) -> None:
    parser = sub.add_parser("gate", help="measure a branch head against its merge-base in alternating rounds; "
                            "exit 1 on a regression (for pull requests)")
    parser.add_argument("base", help="the branch merged into, e.g. main")
    parser.add_argument("head", nargs="?", default="HEAD", help="the branch head (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help="stop starting rounds once they would take longer than this")
    parser.add_argument("--bench", metavar="REGEX", help="only benchmarks whose name matches")
    add_profile_option(parser)
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (default), markdown (a comment for the pull request) or json (a versioned document)")
    add_project_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from proofbench.reports import gate as shown

    try:
        report = _measure(args)
    except (Exception, KeyboardInterrupt) as exc:
        failure(exc, args, shown)
        raise
    return answer(report, args, shown)


def _measure(args: argparse.Namespace):
    # the gate's answer: both commits measured in alternating rounds, each series judged
    from proofbench import git
    from proofbench.analysis.gate import judge
    from proofbench.catalogue import load_catalogue
    from proofbench.errors import InputError
    from proofbench.machine.capture import capture
    from proofbench.pipeline import history, remeasure
    from proofbench.pipeline.asv import Layout
    from proofbench.pipeline.generate import benchmark_index
    from proofbench.profile import get_profile
    from proofbench.stats import MIN_ROUNDS

    if args.rounds < MIN_ROUNDS:
        raise InputError(f"--rounds must be at least {MIN_ROUNDS} (fewer alternating rounds decide nothing), "
                         f"got {args.rounds}")
    if args.budget is not None and not args.budget >= 0:  # NaN is not >= 0 either
        raise InputError(f"--budget must be a number of seconds, 0 or more, got {args.budget:g}")
    found = project(args)
    layout = Layout.of(found)
    repo = history.repository(layout)
    base_hash, head = (git.rev_parse(repo, rev) for rev in (args.base, args.head))
    for rev, full in ((args.base, base_hash), (args.head, head)):
        if full is None:
            raise InputError(f"{repo}: {rev!r} names no commit")
    base = git.merge_base(repo, args.base, head)
    if base == head:  # nothing on the branch that the base lacks: a commit would be measured against itself
        raise InputError(f"{repo}: {args.head!r} ({head[:8]}) is already in {args.base!r}: its merge-base is itself, "
                         f"so there is nothing to measure it against (name the branch's head and its base)")
    catalogue = load_catalogue(found)
    index = benchmark_index(catalogue.registry)
    profile = get_profile(args.profile, found.profiles)
    with measuring(found):  # the suite and the work folders too, before anything is written
        regenerate(catalogue, layout)
        say(f"measuring {head[:8]} against its merge-base {base[:8]}, {args.rounds} alternating round(s)")
        measured = remeasure.alternate(layout, repo, history.default_branch(layout, repo), (base, head), None,
                                       profile, capture(), rounds=args.rounds, budget=args.budget,
                                       bench=args.bench or profile.bench or None)
    return judge(measured, base, head, found.check.for_benchmark,
                 lambda t: bool(index[t.benchmark].metric.higher_is_better) if t.benchmark in index else False)
