"""``graphdoctor rules`` and ``graphdoctor explain``: what graphdoctor checks, and why."""

from __future__ import annotations

import click

from graphdoctor.cli.common import handle_errors
from graphdoctor.cli.reporting import width
from graphdoctor.columns import prose, term_list
from graphdoctor.errors import GraphDoctorError


@click.command()
def rules() -> None:
    """List every diagnosis rule: id, name and what it finds."""
    from graphdoctor.diagnose.rules import ALL_RULES

    rows = [(f"{rule.id}  {rule.name}", rule.title.replace("``", "`")) for rule in ALL_RULES]
    click.echo(term_list(rows, indent=0, width=max(width(None), 60) - 1))


@click.command()
@click.argument("name")
@handle_errors
def explain(name: str) -> None:
    """Print what rule NAME (its name or id, e.g. sync-in-capture or GD101) explains."""
    from graphdoctor.diagnose.rules import no_such_rule, rule_named

    rule = rule_named(name)
    if rule is None:
        raise GraphDoctorError(no_such_rule(name))
    click.echo(f"{rule.id} {rule.name}\n")
    click.echo(prose(rule.explanation, max(width(None), 40) - 1))
