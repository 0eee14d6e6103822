"""Sets a repository up for proofbench (`proofbench init`): the project file, asv's configuration when
there is none, and a subjects module to start from. It asks nothing, never overwrites a file and
writes nothing through a symbolic link; the directories it makes (its database and site, and asv's
environments and results where it wrote asv's configuration) are added to `.gitignore` where it does
not name them yet. A project in a subdirectory of its repository gets asv's `repo` (the repository's
root) and `repo_subdir` (where in it the project is), as asv builds it.

An existing asv.conf.json and suite are used as they are: the subjects module goes into the suite
directory asv already reads (`benchmark_dir`), where asv's benchmark processes import it too.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from proofbench import git
from proofbench.errors import InputError
from proofbench.pipeline.asv import read_config
from proofbench.pipeline.history import distribution_name
from proofbench.project import FILE, PYPROJECT, tool_table

NEW_SUITE = "bench"  # the suite directory of a repository that has no asv.conf.json yet

_ASV_CONF = """{{
    // asv's configuration, written by `proofbench init`: edit it as any asv configuration.
    "version": 1,
    "project": {name},
    "project_url": "",
    // the git repository, from this directory, and the directory in it that holds the project ("": its root)
    "repo": {repo},
    "repo_subdir": {subdir},
    "branches": [{branch}],
    "dvcs": "git",
    "environment_type": "virtualenv",
    // `proofbench history` builds the repository at each commit offline and installs it into a
    // virtualenv that sees the packages proofbench runs with (torch is not downloaded again).
    "build_command": [
        "python -m pip wheel --no-deps --no-build-isolation --no-index -w {{build_cache_dir}} {{build_dir}}"
    ],
    "install_command": [
        "in-dir={{env_dir}} python -m pip install --no-deps --no-build-isolation --force-reinstall {{wheel_file}}"
    ],
    "matrix": {{"req": {{"setuptools": [""], "wheel": [""]}}}},
    "benchmark_dir": {suite},
    "env_dir": ".asv/env",
    "results_dir": ".asv/results",
    "html_dir": ".asv/html",
    "launch_method": "forkserver"
}}
"""

_PROJECT = """# proofbench's project file (written by `proofbench init`): see `proofbench --help` and the README.
# Subjects modules are imported from this directory: put them in the suite directory asv reads
# ({suite}/), so its benchmark processes import them as well.
subjects = ["{module}"]
# claims = "{suite}/claims.toml"        # what your documents promise, judged by the report
# database = "sqlite:///.proofbench/proofbench.sqlite"
# site = ".proofbench/site"

[check]
min_step = 0.03        # steps smaller than 3% are not regressions
significance = 0.001
"""

_SUBJECTS = '''"""The subjects of this project: each optimization with its baseline, its variants and an
equivalence check.

Declare them here and run `proofbench run`. An example (remove the quotes around it to use it):

from proofbench import Equivalence, Metric, Size, Subject, Variant, Workload, register


def _prepare(ctx):                            # ctx.size, ctx.device, ctx.cache_dir, ctx.threads, ctx.variant
    numbers = list(range(ctx.size["n"]))
    return Workload(inputs=numbers, items=len(numbers))


def _baseline(numbers):                       # one call of the work; returns what is compared
    return sum(x * x for x in numbers)


def _optimized(numbers):
    import numpy as np
    values = np.asarray(numbers, dtype=np.int64)
    return int(values @ values)


register(Subject(
    area="math", name="sum_of_squares", item="number",
    description="sum of squares: a Python generator vs one numpy dot product",
    prepare=_prepare,
    variants=(Variant("baseline", _baseline), Variant("optimized", _optimized)),
    equivalence=Equivalence(Metric("difference", "units", False), 0, compare=lambda a, b: abs(a - b)),
    sizes=(Size.of("tiny", n=100), Size.of("small", n=100_000), Size.of("large", n=10_000_000)),
))
"""
'''


_SUITE_INIT = '"""asv\'s benchmark suite: proofbench writes its modules here."""\n'


@dataclass(frozen=True)
class Written:
    """What `init` did with one file: wrote it, or found it there and left it; `added`, the lines
    it added to a file that was there (.gitignore); `table`, that `path` is pyproject.toml, whose
    [tool.proofbench] table is the project file it left; `left`, the lines it did not add to a
    .gitignore that is a symbolic link (nothing is written through one)."""

    path: Path
    written: bool
    added: tuple[str, ...] = ()
    table: bool = False
    left: tuple[str, ...] = ()


def init(root: Path) -> list[Written]:
    """Set `root` (a git checkout) up for proofbench; returns each file with what was done to it.
    Every check comes before the first write: on an InputError nothing has been written."""
    root = root.resolve()
    git.head(root)  # asv stores results per commit: a checkout with a commit is needed
    config = root / "asv.conf.json"
    suite = _suite(config) if config.is_file() else NEW_SUITE
    package = Path(suite).name
    if not package.isidentifier():
        raise InputError(f"{config}: benchmark_dir {suite!r}: asv imports the suite as the package {package!r}, "
                         f"which is not a Python name")
    files = {config: _asv_conf(root, suite),
             root / FILE: _PROJECT.format(suite=suite, module=f"{package}.subjects"),
             root / suite / "__init__.py": _SUITE_INIT,
             root / suite / "subjects.py": _SUBJECTS}
    done = {path: Written(path, False) for path in files if _there(root, path)}
    if root / FILE not in done and tool_table(root / PYPROJECT) is not None:
        done[root / FILE] = Written(root / PYPROJECT, False, table=True)
    made = [] if config in done else [".asv/"]  # an asv configuration of the user's keeps its own places
    gitignore = root / ".gitignore"
    text, missing = _unignored(root, gitignore, [*made, ".proofbench/"])
    return [*(done.get(path) or _write(path, content) for path, content in files.items()),
            _ignore(gitignore, text, missing)]


def _asv_conf(root: Path, suite: str) -> str:
    # Every value JSON-encoded: a `"` or `\` in a name must not end or escape its string.
    top = _repository(root)
    values = {"name": distribution_name(root) or root.name,  # asv uninstalls the project by this name between commits
              "repo": os.path.relpath(top, root), "subdir": "" if top == root else root.relative_to(top).as_posix(),
              "branch": git.current_branch(root) or "main", "suite": suite}
    return _ASV_CONF.format(**{key: json.dumps(value) for key, value in values.items()})


def _repository(root: Path) -> Path:
    # The checkout asv builds: the nearest directory holding `.git`, asv's own test of a local
    # repository (a subdirectory is no repository to asv: it needs the root and `repo_subdir`).
    return next((directory for directory in (root, *root.parents) if (directory / ".git").exists()), root)


def _unignored(root: Path, path: Path, entries: list[str]) -> tuple[str, tuple[str, ...]]:
    # the text of the .gitignore at `path`, and those of `entries` that no line of it names yet
    try:
        text = path.read_text(encoding="utf-8") if _there(root, path) else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({exc}); add {', '.join(entries)} to it yourself") from None
    named = {line.strip().strip("/") for line in text.splitlines()}
    return text, tuple(e for e in entries if e.strip("/") not in named)


def _ignore(path: Path, text: str, missing: tuple[str, ...]) -> Written:
    # `missing` added to the .gitignore at `path`, which held `text`
    if not missing:
        return Written(path, False)
    if path.is_symlink():
        return Written(path, False, left=missing)
    path.write_text(text + ("\n" if text and not text.endswith("\n") else "") + "".join(f"{e}\n" for e in missing),
                    encoding="utf-8")
    return Written(path, not text, () if not text else missing)


def _suite(config: Path) -> str:
    value = read_config(config).get("benchmark_dir", "benchmarks")
    if not isinstance(value, str) or not value or not value.isprintable() or Path(value).is_absolute() \
            or ".." in Path(value).parts:
        raise InputError(f"{config}: benchmark_dir must be a directory inside the repository (a name without "
                         f"control characters), got {value!r}")
    return value


def _there(root: Path, path: Path) -> bool:
    # Whether `path` is there (init keeps it). Nothing is written through a symbolic link: a link
    # to a file counts as that file, kept; a dangling link, or a directory leading out of `root`,
    # is refused, since writing would make a file where the link points.
    for link in (path, *path.parents[:len(path.relative_to(root).parts) - 1]):
        if link.is_symlink() and not link.exists():
            raise InputError(f"{link}: a symbolic link to {os.readlink(link)}, which is not there; init writes "
                             f"nothing through a link: remove it, or create what it names")
    if path.exists():
        return True
    if not path.parent.resolve().is_relative_to(root):
        raise InputError(f"{path.parent}: a symbolic link out of the repository, to {path.parent.resolve()}; "
                         f"init writes nothing through a link")
    return False


def _write(path: Path, text: str) -> Written:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return Written(path, True)
