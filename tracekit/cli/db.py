"""``tracekit db upgrade|info``: the store's schema revision and what it holds."""

from __future__ import annotations

import click

from tracekit.cli.common import print_json, store_option


@click.group()
def db() -> None:
    """Manage the store: migrate it, show what it holds."""


@db.command()
@store_option
def upgrade(store_url: str | None) -> None:
    """Migrate the store to this tracekit's schema (creates it when missing)."""
    from tracekit.store.db import display_url, head_revision, open_store

    store = open_store(store_url, write=True)  # writers apply pending migrations on open
    try:
        click.echo(f"store {display_url(store.url)} is at schema revision "
                   f"{store.revision()} (head {head_revision()})")
    finally:
        store.dispose()


@db.command()
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print as one JSON document.")
def info(store_url: str | None, as_json: bool) -> None:
    """Show the store's URL, schema revision and row counts per table."""
    from sqlalchemy import func, select

    from tracekit.store.db import display_url, head_revision, open_store
    from tracekit.store.schema import Base

    store = open_store(store_url, write=False)
    try:
        with store.connect() as connection:
            counts = {table.name: int(connection.execute(
                select(func.count()).select_from(table)).scalar_one())
                for table in Base.metadata.sorted_tables}
        document = {"store": display_url(store.url), "dialect": store.engine.dialect.name,
                    "revision": store.revision(), "head": head_revision(), "rows": counts}
    finally:
        store.dispose()
    if as_json:
        print_json(document)
        return
    click.echo(f"store     {document['store']} ({document['dialect']})")
    click.echo(f"revision  {document['revision']} (head {document['head']})")
    width = max(map(len, counts))
    for name, count in counts.items():
        click.echo(f"  {name.ljust(width)}  {count:>12,}")
