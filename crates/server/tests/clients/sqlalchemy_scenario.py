"""The SQLAlchemy 2 scenario, against a running tessera: what an application written with
the ORM does, and what Alembic's migrations do, over pymssql and again over pyodbc
(FreeTDS's ODBC driver).

Usage: python3 sqlalchemy_scenario.py HOST PORT PASSWORD

Covers: connecting (the dialect reads the server version from @@VERSION), schema creation
from ORM models with relations, reflection through the inspector (tables, columns, primary
and foreign keys, indexes), CRUD through sessions, relationship loading, pagination,
a rolled-back transaction, a batch insert, Unicode, decimals and dates, a 10 KB string;
then an Alembic migration upgraded and downgraded. Exits non-zero on the first failure.
"""

import datetime
import decimal
import sys
import urllib.parse

import sqlalchemy as sa
from sqlalchemy import orm


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


class Base(orm.DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.Unicode(100), index=True)
    born: orm.Mapped[datetime.date | None]
    books: orm.Mapped[list["Book"]] = orm.relationship(back_populates="author", order_by="Book.id")


class Book(Base):
    __tablename__ = "book"
    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    author_id: orm.Mapped[int] = orm.mapped_column(sa.ForeignKey("author.id"))
    title: orm.Mapped[str] = orm.mapped_column(sa.Unicode(200))
    price: orm.Mapped[decimal.Decimal] = orm.mapped_column(sa.Numeric(10, 2))
    published: orm.Mapped[datetime.datetime | None]
    body: orm.Mapped[str | None] = orm.mapped_column(sa.UnicodeText)
    author: orm.Mapped[Author] = orm.relationship(back_populates="books")


def main():
    host, port, password = sys.argv[1], sys.argv[2], sys.argv[3]

    def pymssql_url(db):
        return f"mssql+pymssql://sa:{password}@{host}:{port}/{db}"

    def pyodbc_url(db):
        odbc = f"DRIVER={{FreeTDS}};SERVER={host};PORT={port};DATABASE={db};UID=sa;PWD={password};TDS_Version=7.4;ClientCharset=UTF-8"
        return "mssql+pyodbc:///?odbc_connect=" + urllib.parse.quote_plus(odbc)

    # FreeTDS's ODBC driver refuses a wide string longer than 4,000 characters bound with
    # SQLAlchemy's input size for (max) types (SQL_WVARCHAR, size 0): HY090, raised in the
    # driver before anything is sent, whatever the server. SQLAlchemy's documented switch
    # leaves the sizes to the driver.
    engines = (("pymssql", pymssql_url, {}), ("pyodbc", pyodbc_url, {"use_setinputsizes": False}))
    for driver, url, options in engines:
        print("--", driver)
        scenario(url, options)
    print("all checks passed")


def scenario(url, options):
    master = sa.create_engine(url("master"), isolation_level="AUTOCOMMIT", **options)
    with master.connect() as c:
        c.exec_driver_sql("IF DB_ID('sa_db') IS NOT NULL DROP DATABASE sa_db")
        c.exec_driver_sql("CREATE DATABASE sa_db")
    check(master.dialect.server_version_info[:2] == (16, 0), "the dialect reads the version (%r)" % (master.dialect.server_version_info,))

    engine = sa.create_engine(url("sa_db"), **options)
    Base.metadata.create_all(engine)
    insp = sa.inspect(engine)
    check(sorted(insp.get_table_names()) == ["author", "book"], "create_all makes the tables")
    cols = {c["name"]: c for c in insp.get_columns("book")}
    check(list(cols) == ["id", "author_id", "title", "price", "published", "body"], "reflected columns in order")
    check(isinstance(cols["price"]["type"], sa.Numeric) and cols["price"]["type"].precision == 10, "numeric(10,2) reflected")
    check(cols["title"]["type"].length == 200 and not cols["title"]["nullable"], "nvarchar(200) not null reflected")
    check(cols["id"].get("autoincrement") in (True, "auto") or cols["id"].get("identity"), "identity reflected")
    check(insp.get_pk_constraint("book")["constrained_columns"] == ["id"], "primary key reflected")
    fks = insp.get_foreign_keys("book")
    check(len(fks) == 1 and fks[0]["referred_table"] == "author" and fks[0]["constrained_columns"] == ["author_id"], "foreign key reflected")
    check(any(ix["column_names"] == ["name"] for ix in insp.get_indexes("author")), "index reflected")

    long_text = "Ünïcödé ✓ " * 1000  # 10,000 characters
    with orm.Session(engine) as s:
        a = Author(name="Ada Łovelace", born=datetime.date(1815, 12, 10))
        a.books = [
            Book(title="Notes", price=decimal.Decimal("12.50"), published=datetime.datetime(1843, 9, 1, 12, 30), body=long_text),
            Book(title="Sketch ☃", price=decimal.Decimal("3.99")),
        ]
        s.add(a)
        s.commit()
        check(a.id is not None and all(b.id for b in a.books), "insert through the session returns identities")

    with orm.Session(engine) as s:
        a = s.scalars(sa.select(Author).where(Author.name == "Ada Łovelace")).one()
        check(a.born == datetime.date(1815, 12, 10), "a date round-trips")
        check([b.title for b in a.books] == ["Notes", "Sketch ☃"], "relationship loaded, Unicode intact")
        check(a.books[0].price == decimal.Decimal("12.50") and a.books[0].body == long_text, "decimal and a 10 KB string round-trip")
        check(a.books[0].published == datetime.datetime(1843, 9, 1, 12, 30), "a datetime round-trips")
        a.books[1].price = decimal.Decimal("4.25")
        s.commit()
        check(s.scalar(sa.select(Book.price).where(Book.title == "Sketch ☃")) == decimal.Decimal("4.25"), "update through the session")

    # A batch insert (executemany), pagination and a grouped count.
    with engine.begin() as c:
        c.execute(sa.insert(Author), [{"name": "Author %03d" % i} for i in range(50)])
    with orm.Session(engine) as s:
        page = s.scalars(sa.select(Author.name).where(Author.name.like("Author %")).order_by(Author.name).offset(10).limit(5)).all()
        check(page == ["Author %03d" % i for i in range(10, 15)], "offset/limit pagination")
        first = s.scalars(sa.select(Author.name).order_by(Author.id).limit(1)).one()
        check(first == "Ada Łovelace", "limit without offset (TOP)")
        counts = s.execute(
            sa.select(Author.name, sa.func.count(Book.id)).join(Book, isouter=True).group_by(Author.name).order_by(sa.func.count(Book.id).desc(), Author.name)
        ).all()
        check(counts[0] == ("Ada Łovelace", 2) and len(counts) == 51, "grouped count over an outer join")

    # A rolled-back transaction leaves nothing; a constraint error rolls back its own.
    with orm.Session(engine) as s:
        s.add(Author(name="ghost"))
        s.flush()
        s.rollback()
    with orm.Session(engine) as s:
        check(s.scalar(sa.select(sa.func.count()).select_from(Author).where(Author.name == "ghost")) == 0, "rollback leaves nothing")
        try:
            s.add(Book(author_id=999999, title="orphan", price=1))
            s.commit()
            raise AssertionError("a foreign key violation committed")
        except sa.exc.IntegrityError as e:
            s.rollback()
            check("547" in str(e.orig), "a foreign key violation is 547")

    # The delete cascade the application asks for.
    with orm.Session(engine) as s:
        a = s.scalars(sa.select(Author).where(Author.name == "Ada Łovelace")).one()
        for b in a.books:
            s.delete(b)
        s.delete(a)
        s.commit()
        check(s.scalar(sa.select(sa.func.count()).select_from(Book)) == 0, "delete through the session")

    alembic_migration(engine)
    engine.dispose()
    with master.connect() as c:
        c.exec_driver_sql("DROP DATABASE sa_db")
    master.dispose()


def alembic_migration(engine):
    """An Alembic migration run as `alembic upgrade` runs it: add a table with a foreign
    key and an index, add a column, rename one, then downgrade back."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        op.create_table(
            "review",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("author_id", sa.Integer, sa.ForeignKey("author.id"), nullable=False),
            sa.Column("stars", sa.SmallInteger, nullable=False, server_default="3"),
        )
        op.create_index("ix_review_author", "review", ["author_id"])
        op.add_column("review", sa.Column("note", sa.Unicode(500)))
        op.alter_column("review", "note", new_column_name="comment")
    insp = sa.inspect(engine)
    cols = [c["name"] for c in insp.get_columns("review")]
    check(cols == ["id", "author_id", "stars", "comment"], "alembic upgrade: table, column added and renamed (%r)" % cols)
    check(any(ix["name"] == "ix_review_author" for ix in insp.get_indexes("review")), "alembic upgrade: index")
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        op.alter_column("review", "comment", new_column_name="note")
        op.drop_column("review", "note")
        op.drop_index("ix_review_author", table_name="review")
        op.drop_table("review")
    check("review" not in sa.inspect(engine).get_table_names(), "alembic downgrade")


if __name__ == "__main__":
    main()
