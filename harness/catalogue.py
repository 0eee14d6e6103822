"""A project's catalogue: its subjects, imported from the modules its file names, and its claims."""
from __future__ import annotations

from dataclasses import dataclass

from proofbench.claim import Claim, check_against, load_claims
from proofbench.project import Project, ProjectError
from proofbench.registry import Registry, UnimportableModule, load


@dataclass(frozen=True)
class Catalogue:
    """The registered subjects and the claims made about them."""

    registry: Registry
    claims: tuple[Claim, ...]


def load_catalogue(project: Project) -> Catalogue:
    """Import every subject module of `project` and read its claims, each checked against them."""
    try:
        registry = load(project.subjects, project.root).restricted(project.subjects)
    except UnimportableModule as exc:  # said where the module was named: the project file's key
        raise ProjectError(f"{project.where('subjects')}: {exc}") from None
    if not len(registry):
        raise ProjectError(f"{project.file}: the subjects modules ({', '.join(project.subjects)}) register no subject; "
                           f"declare one with proofbench.register (see the README, 'Use proofbench in your "
                           f"repository')")
    claims = load_claims(project.claims) if project.claims is not None else ()
    return Catalogue(registry, check_against(claims, registry, project.claims) if claims else ())
