"""``graphdoctor rules`` and ``graphdoctor explain``: what graphdoctor checks, and why."""

from __future__ import annotations

import click

from graphdoctor.cli.common import handle_errors
from graphdoctor.errors import GraphDoctorError


@click.command()
def rules() -> None:
    """List every diagnosis rule: id, name and what it finds."""
    from graphdoctor.diagnose.rules import ALL_RULES

    width = max(len(r.name) for r in ALL_RULES)
    for rule in ALL_RULES:
        click.echo(f"{rule.id}  {rule.name:<{width}}  {rule.title}")


@click.command()
@click.argument("name")
@handle_errors
def explain(name: str) -> None:
    """Print what rule NAME (its name or id, e.g. sync-in-capture or GD101) explains."""
    from graphdoctor.diagnose.rules import ALL_RULES, rule_named

    rule = rule_named(name)
    if rule is None:
        known = ", ".join(r.name for r in ALL_RULES)
        raise GraphDoctorError(f"no rule named {name!r}; the rules are: {known}")
    click.echo(f"{rule.id} {rule.name}\n")
    click.echo(rule.explanation.strip())
