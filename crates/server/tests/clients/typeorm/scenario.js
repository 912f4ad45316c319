// The TypeORM scenario over mssql and tedious, against a running tessera: what an
// application written with TypeORM does, and what its schema synchronization and its
// migrations do. Plain CommonJS with EntitySchema, so there is no compile step.
//
// Usage: node scenario.js HOST PORT PASSWORD
//
// Covers: synchronize creating tables with a one-to-many relation, an index, a unique
// column, defaults, a create-date and a version column; synchronize again on the existing
// schema (the schema diff reads the catalog: INFORMATION_SCHEMA, sys.columns,
// sys.indexes, sys.foreign_keys, sys.default_constraints ...) must find nothing to change;
// CRUD through repositories and the query builder, relations loading and joins,
// pagination (skip/take, OFFSET/FETCH), transactions committed and rolled back, a batch
// insert, Unicode, decimal(18,4), datetime2 and date, a 10 KB nvarchar(max); then two
// migrations (one of raw SQL as the CLI generates, one through the QueryRunner API: add,
// rename and drop a column, an index, a foreign key) run with runMigrations, recorded in
// the migrations table, and undone with undoLastMigration. Exits non-zero on the first
// failure.
//
// Checks tessera cannot pass yet are commented out, each marked TESSERA-GAP with what is
// missing, with a stand-in that keeps the rest of the scenario going where one is needed.
// The gaps:
//   COL_NAME       COL_NAME() is not a built-in: every catalog read of TypeORM
//                  (QueryRunner.getTables/getTable, the schema diff of synchronize on an
//                  existing schema, the QueryRunner API in migrations) fails with Msg 195.
//   TABLE-VARIABLE A table variable declared in a batch run inside a transaction outlives
//                  the batch (and the transaction): TypeORM declares @OutputTable for
//                  every INSERT/UPDATE it returns columns from, so after one save() (which
//                  runs in a transaction) the next transactional insert of another entity
//                  on that connection fails with Msg 213.
//   DISTINCT-ORDER SELECT DISTINCT d.a AS x ... ORDER BY a fails with Msg 145: TypeORM's
//                  paging query (skip/take or findOne with relations joined) orders by the
//                  bare alias of the primary column.
//   SP_RENAME      sp_rename 'db.schema.table.column', 'new' (no @objtype, database
//                  part given) fails with Msg 15225: QueryRunner.renameColumn.
'use strict';

const { DataSource, EntitySchema, TableColumn, TableIndex, TableForeignKey, Table } = require('typeorm');

const [host, port, password] = process.argv.slice(2);
const DB = 'typeorm_db';

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
  console.log('ok: ' + what);
}

const Author = new EntitySchema({
  name: 'Author',
  tableName: 'author',
  columns: {
    id: { type: 'int', primary: true, generated: 'increment' },
    name: { type: 'nvarchar', length: 100 },
    email: { type: 'varchar', length: 200, nullable: true, unique: true },
    born: { type: 'date', nullable: true },
    active: { type: 'bit', default: true },
    createdAt: { type: 'datetime2', createDate: true },
    version: { type: 'int', version: true },
  },
  relations: {
    books: { type: 'one-to-many', target: 'Book', inverseSide: 'author' },
  },
});

const Book = new EntitySchema({
  name: 'Book',
  tableName: 'book',
  columns: {
    id: { type: 'int', primary: true, generated: 'increment' },
    title: { type: 'nvarchar', length: 200 },
    price: { type: 'decimal', precision: 18, scale: 4, nullable: true },
    published: { type: 'datetime2', nullable: true },
    body: { type: 'nvarchar', length: 'MAX', nullable: true },
    stock: { type: 'int', default: 0 },
  },
  indices: [{ name: 'IDX_book_title', columns: ['title'] }],
  relations: {
    author: { type: 'many-to-one', target: 'Author', inverseSide: 'books', joinColumn: { name: 'authorId' }, nullable: true, onDelete: 'CASCADE' },
  },
});

// A migration as `typeorm migration:generate` writes one: raw SQL through queryRunner.query.
class AddTags1700000000000 {
  async up(queryRunner) {
    await queryRunner.query('CREATE TABLE "tag" ("id" int NOT NULL IDENTITY(1,1), "label" nvarchar(50) NOT NULL, "bookId" int, CONSTRAINT "UQ_tag_label" UNIQUE ("label"), CONSTRAINT "PK_tag" PRIMARY KEY ("id"))');
    await queryRunner.query('ALTER TABLE "tag" ADD CONSTRAINT "FK_tag_book" FOREIGN KEY ("bookId") REFERENCES "book"("id") ON DELETE NO ACTION ON UPDATE NO ACTION');
  }
  async down(queryRunner) {
    await queryRunner.query('ALTER TABLE "tag" DROP CONSTRAINT "FK_tag_book"');
    await queryRunner.query('DROP TABLE "tag"');
  }
}

// A migration written by hand through the QueryRunner API, which reads the catalog to
// know the table before changing it.
// TESSERA-GAP: COL_NAME (every QueryRunner call below reads the table through getTables)
// and SP_RENAME (renameColumn); until they are fixed ReviseBookSql1700000000001 stands in.
class ReviseBook1700000000001 {
  async up(queryRunner) {
    await queryRunner.addColumn('book', new TableColumn({ name: 'isbn', type: 'varchar', length: '20', isNullable: true }));
    await queryRunner.renameColumn('book', 'isbn', 'code');
    await queryRunner.createIndex('book', new TableIndex({ name: 'IDX_book_code', columnNames: ['code'] }));
    await queryRunner.createTable(new Table({
      name: 'review',
      columns: [
        { name: 'id', type: 'int', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
        { name: 'stars', type: 'tinyint' },
        { name: 'bookId', type: 'int' },
      ],
    }));
    await queryRunner.createForeignKey('review', new TableForeignKey({ name: 'FK_review_book', columnNames: ['bookId'], referencedTableName: 'book', referencedColumnNames: ['id'], onDelete: 'CASCADE' }));
  }
  async down(queryRunner) {
    await queryRunner.dropForeignKey('review', 'FK_review_book');
    await queryRunner.dropTable('review');
    await queryRunner.dropIndex('book', 'IDX_book_code');
    await queryRunner.dropColumn('book', 'code');
  }
}

// The same change in raw SQL, without the rename (the stand-in for ReviseBook1700000000001).
class ReviseBookSql1700000000001 {
  async up(queryRunner) {
    await queryRunner.query('ALTER TABLE "book" ADD "code" varchar(20)');
    await queryRunner.query('CREATE INDEX "IDX_book_code" ON "book" ("code")');
    await queryRunner.query('CREATE TABLE "review" ("id" int NOT NULL IDENTITY(1,1), "stars" tinyint NOT NULL, "bookId" int NOT NULL, CONSTRAINT "PK_review" PRIMARY KEY ("id"))');
    await queryRunner.query('ALTER TABLE "review" ADD CONSTRAINT "FK_review_book" FOREIGN KEY ("bookId") REFERENCES "book"("id") ON DELETE CASCADE ON UPDATE NO ACTION');
  }
  async down(queryRunner) {
    await queryRunner.query('ALTER TABLE "review" DROP CONSTRAINT "FK_review_book"');
    await queryRunner.query('DROP TABLE "review"');
    await queryRunner.query('DROP INDEX "IDX_book_code" ON "book"');
    await queryRunner.query('ALTER TABLE "book" DROP COLUMN "code"');
  }
}

function dataSource(database, extra) {
  return new DataSource(Object.assign({
    type: 'mssql',
    host,
    port: Number(port),
    username: 'sa',
    password,
    database,
    logging: !!process.env.TYPEORM_LOG,
    requestTimeout: 60000,
    options: { encrypt: false, trustServerCertificate: true },
  }, extra || {}));
}

async function main() {
  const master = dataSource('master');
  await master.initialize();
  await master.query(`IF DB_ID('${DB}') IS NOT NULL DROP DATABASE ${DB}`);
  await master.query(`CREATE DATABASE ${DB}`);
  await master.destroy();

  const ds = dataSource(DB, {
    entities: [Author, Book],
    // TESSERA-GAP: COL_NAME, SP_RENAME: ReviseBook1700000000001 in place of ReviseBookSql1700000000001.
    migrations: [AddTags1700000000000, ReviseBookSql1700000000001],
  });
  await ds.initialize();
  check(ds.isInitialized, 'initialize (connect)');

  // Schema synchronization, and its diff against the catalog.
  await ds.synchronize();
  const qr = ds.createQueryRunner();
  check(await qr.hasTable('author') && await qr.hasTable('book'), 'synchronize creates the tables (hasTable)');
  check(await qr.hasColumn('book', 'authorId') && !(await qr.hasColumn('book', 'nope')), 'hasColumn');
  const fk = await ds.query("SELECT name, delete_referential_action_desc AS d FROM sys.foreign_keys WHERE parent_object_id = OBJECT_ID('book')");
  check(fk.length === 1 && fk[0].d === 'CASCADE', 'synchronize creates the foreign key');
  // TESSERA-GAP: COL_NAME: getTables reads the catalog with COL_NAME(); Msg 195.
  // const tables = (await qr.getTables(['author', 'book'])).sort((a, b) => a.name.localeCompare(b.name));
  // check(tables.map((t) => t.name).join(',') === 'author,book', 'getTables: ' + tables.map((t) => t.name).join(','));
  // const book = tables[1];
  // const col = (t, n) => t.columns.find((c) => c.name === n);
  // check(col(book, 'price').type === 'decimal' && col(book, 'price').precision === 18 && col(book, 'price').scale === 4, 'getTables reads decimal(18,4)');
  // check(col(book, 'body').length === 'MAX' && col(book, 'title').length === '200', 'getTables reads nvarchar lengths: ' + col(book, 'title').length + ', ' + col(book, 'body').length);
  // check(col(book, 'id').isGenerated && col(book, 'id').isPrimary, 'getTables reads the identity primary key');
  // check(book.foreignKeys.length === 1 && book.foreignKeys[0].referencedTableName.endsWith('author') && book.foreignKeys[0].onDelete === 'CASCADE', 'getTables reads the foreign key');
  // check(book.indices.some((i) => i.name === 'IDX_book_title'), 'getTables reads the index');
  // check(String(col(book, 'stock').default) === '0', 'getTables reads the default: ' + col(book, 'stock').default);
  // const author = tables[0];
  // check(col(author, 'email').isUnique || author.uniques.length === 1 || author.indices.some((i) => i.isUnique), 'getTables reads the unique constraint');
  // const pending = await ds.driver.createSchemaBuilder().log();
  // check(pending.upQueries.length === 0, 'synchronize on the existing schema finds no changes' + (pending.upQueries.length ? ': ' + pending.upQueries.map((q) => q.query).join('; ') : ''));
  // await ds.synchronize();
  // check(true, 'synchronize again on the unchanged schema');
  await qr.release();

  // CRUD.
  const authors = ds.getRepository('Author');
  const books = ds.getRepository('Book');
  const longText = 'Ünïcödé ✓ '.repeat(1000);
  const published = new Date(Date.UTC(1843, 8, 1, 12, 30, 15, 123));
  // TESSERA-GAP: TABLE-VARIABLE: save() inserts in a transaction; the @OutputTable it
  // declares for the author outlives the batch, and the book's save() on the same
  // connection then fails with Msg 213. insert() (no transaction) stands in.
  // const ada = await authors.save({ name: 'Ada Łovelace', email: 'ada@example.org', born: '1815-12-10' });
  // check(typeof ada.id === 'number' && ada.version === 1 && ada.active === true && ada.createdAt instanceof Date, 'save returns the identity, the version and the defaults');
  // await books.save({ title: 'Notes', price: '1234567890.1234', published, body: longText, author: ada });
  // await books.save({ title: 'Sketch ☃ 数学 😀', price: '3.9900', author: { id: ada.id } });
  const adaInsert = await authors.insert({ name: 'Ada Łovelace', email: 'ada@example.org', born: '1815-12-10' });
  const adaId = adaInsert.identifiers[0].id;
  const generated = adaInsert.generatedMaps[0];
  check(typeof adaId === 'number' && generated.version === 1 && generated.active === true && generated.createdAt instanceof Date, 'insert returns the identity, the version and the defaults');
  await books.insert({ title: 'Notes', price: '1234567890.1234', published, body: longText, author: { id: adaId } });
  await books.insert({ title: 'Sketch ☃ 数学 😀', price: '3.9900', author: { id: adaId } });
  check(true, 'insert with a many-to-one relation');

  // TESSERA-GAP: DISTINCT-ORDER: findOne with a relation joined pages with take 1, whose
  // SELECT DISTINCT ... ORDER BY "Author_id" fails with Msg 145. find() stands in.
  // const got = await authors.findOne({ where: { id: adaId }, relations: { books: true }, order: { books: { id: 'ASC' } } });
  const [got] = await authors.find({ where: { id: adaId }, relations: { books: true }, order: { books: { id: 'ASC' } } });
  check(got.born === '1815-12-10', 'a date round-trips: ' + JSON.stringify(got.born));
  check(got.books.map((b) => b.title).join('|') === 'Notes|Sketch ☃ 数学 😀', 'one-to-many relations loading, Unicode intact');
  const notes = got.books[0];
  // tedious carries decimals as JavaScript numbers (both ways), exact to 15 digits; the
  // full 18 digits are written as a literal and read back as text.
  check(notes.price === 1234567890.1234, 'a decimal(18,4) parameter round-trips: ' + JSON.stringify(notes.price));
  await ds.query('UPDATE "book" SET "price" = 12345678901234.5678 WHERE "id" = @0', [notes.id]);
  const exact = await books.createQueryBuilder('b').select('CONVERT(varchar(40), b.price)', 'p').where('b.id = :id', { id: notes.id }).getRawOne();
  check(exact.p === '12345678901234.5678', 'a decimal(18,4) round-trips exactly: ' + exact.p);
  check(notes.body === longText, 'a 10 KB nvarchar(max) round-trips (' + (notes.body || '').length + ' characters)');
  check(notes.published.getTime() === published.getTime(), 'a datetime2 round-trips: ' + notes.published.toISOString());
  // TESSERA-GAP: DISTINCT-ORDER (findOne with a relation); find() stands in.
  // const sketch = await books.findOne({ where: { title: 'Sketch ☃ 数学 😀' }, relations: { author: true } });
  const [sketch] = await books.find({ where: { title: 'Sketch ☃ 数学 😀' }, relations: { author: true } });
  check(sketch && sketch.author.name === 'Ada Łovelace', 'find by an N\'\' Unicode string, many-to-one relation loading');

  await authors.update({ id: adaId }, { name: 'Ada Lovelace', active: false });
  const ada = await authors.findOneBy({ id: adaId });
  check(ada.active === false && ada.name === 'Ada Lovelace', 'update by criteria');
  const byQb = await books.createQueryBuilder('b')
    .innerJoinAndSelect('b.author', 'a')
    .where('a.name = :name', { name: 'Ada Lovelace' })
    .andWhere('b.price > :min', { min: 5 })
    .getMany();
  check(byQb.length === 1 && byQb[0].author.name === 'Ada Lovelace', 'query builder inner join with parameters');
  const raw = await books.createQueryBuilder('b')
    .select('a.name', 'name').addSelect('COUNT(*)', 'n').addSelect('CONVERT(varchar(40), SUM(b.price))', 'total')
    .innerJoin('b.author', 'a').groupBy('a.name').getRawMany();
  check(raw.length === 1 && raw[0].n === 2 && raw[0].total === '12345678901238.5578', 'group by with aggregates: ' + JSON.stringify(raw));
  try {
    await authors.insert({ name: 'dup', email: 'ada@example.org' });
    throw new Error('a duplicate key was inserted');
  } catch (e) {
    check(e.name === 'QueryFailedError' && /UNIQUE KEY|duplicate key/.test(e.message), 'a unique violation fails: ' + e.message);
  }
  try {
    await books.insert({ title: 'orphan', author: { id: 999999 } });
    throw new Error('a foreign key violation committed');
  } catch (e) {
    check(/FOREIGN KEY/.test(e.message), 'a foreign key violation fails: ' + e.message);
  }

  // A batch insert, and pagination.
  const many = Array.from({ length: 30 }, (_, i) => ({ name: 'Author ' + String(i).padStart(3, '0'), email: 'author' + i + '@example.org' }));
  const inserted = await authors.insert(many);
  check(inserted.identifiers.length === 30 && inserted.identifiers.every((x) => typeof x.id === 'number'), 'batch insert of 30 rows returns their identities');
  const [page, total] = await authors.findAndCount({ where: { active: true }, order: { name: 'ASC' }, skip: 10, take: 5 });
  check(page.map((a) => a.name).join(',') === ['010', '011', '012', '013', '014'].map((n) => 'Author ' + n).join(',') && total === 30, 'skip/take pagination with a count');
  // skip/take with a joined relation pages the parents through a DISTINCT subquery.
  const joinedPage = await authors.find({ relations: { books: true }, order: { id: 'ASC' }, skip: 0, take: 2 });
  check(joinedPage.length === 2 && joinedPage[0].books.length === 2 && joinedPage[1].books.length === 0, 'skip/take with a relation joined, ordered');
  // TESSERA-GAP: DISTINCT-ORDER: without an order the paging query is SELECT DISTINCT
  // "distinctAlias"."Author_id" AS "ids_Author_id" FROM (...) "distinctAlias" ORDER BY
  // "Author_id" ASC OFFSET 0 ROWS FETCH NEXT 2 ROWS ONLY; Msg 145.
  // const unordered = await authors.find({ relations: { books: true }, skip: 0, take: 2 });
  // check(unordered.length === 2, 'skip/take with a relation joined, unordered');
  const qbPage = await authors.createQueryBuilder('a').orderBy('a.name', 'DESC').offset(3).limit(2).getMany();
  check(qbPage.map((a) => a.name).join(',') === 'Author 026,Author 025', 'offset/limit in the query builder');
  check((await authors.count()) === 31, 'count');

  // Transactions.
  // TESSERA-GAP: TABLE-VARIABLE: the second save() in the transaction re-declares
  // @OutputTable for another entity; Msg 213. Raw inserts in the transaction stand in.
  // await ds.transaction(async (m) => {
  //   const a = await m.save('Author', { name: 'committed', email: 'c@example.org' });
  //   await m.save('Book', { title: 'committed book', author: a });
  // });
  await ds.transaction(async (m) => {
    await m.query('INSERT INTO "author" ("name", "email", "version") VALUES (@0, @1, 1)', ['committed', 'c@example.org']);
    await m.query('INSERT INTO "book" ("title", "authorId") SELECT @0, "id" FROM "author" WHERE "name" = @1', ['committed book', 'committed']);
  });
  check((await books.countBy({ title: 'committed book' })) === 1, 'a transaction commits');
  try {
    // TESSERA-GAP: TABLE-VARIABLE (as above); raw inserts stand in.
    // await ds.transaction(async (m) => {
    //   const a = await m.save('Author', { name: 'ghost', email: 'g@example.org' });
    //   await m.save('Book', { title: 'ghost book', author: a });
    //   throw new Error('roll back');
    // });
    await ds.transaction(async (m) => {
      await m.query('INSERT INTO "author" ("name", "email", "version") VALUES (@0, @1, 1)', ['ghost', 'g@example.org']);
      await m.query('INSERT INTO "book" ("title", "authorId") SELECT @0, "id" FROM "author" WHERE "name" = @1', ['ghost book', 'ghost']);
      throw new Error('roll back');
    });
  } catch (e) {
    check(e.message === 'roll back', 'a failing transaction throws');
  }
  check((await authors.countBy({ name: 'ghost' })) === 0 && (await books.countBy({ title: 'ghost book' })) === 0, 'and rolls back, leaving nothing');
  const runner = ds.createQueryRunner();
  await runner.connect();
  await runner.startTransaction('SERIALIZABLE');
  // TESSERA-GAP: TABLE-VARIABLE: the @OutputTable of an insert in a transaction outlives
  // the batch, so every later insert of another entity on this pooled connection fails
  // (Msg 213). A raw insert stands in.
  // await runner.manager.insert('Author', { name: 'manual', email: 'm@example.org' });
  await runner.query('INSERT INTO "author" ("name", "email", "version") VALUES (@0, @1, 1)', ['manual', 'm@example.org']);
  await runner.rollbackTransaction();
  await runner.release();
  check((await authors.countBy({ name: 'manual' })) === 0, 'a QueryRunner transaction with an isolation level rolls back');

  // Delete, with the cascade.
  const c = await authors.findOneBy({ name: 'committed' });
  await authors.delete(c.id);
  check((await books.countBy({ title: 'committed book' })) === 0, 'delete cascades to the books');
  await authors.remove(await authors.findBy({ name: 'Author 029' }));
  check((await authors.count()) === 30, 'remove');

  // Migrations.
  const ran = await ds.runMigrations();
  check(ran.map((m) => m.name).join(',') === 'AddTags1700000000000,ReviseBookSql1700000000001', 'runMigrations runs both: ' + ran.map((m) => m.name).join(','));
  const recorded = await ds.query('SELECT "timestamp", "name" FROM "migrations" ORDER BY "id"');
  check(recorded.length === 2 && Number(recorded[1].timestamp) === 1700000000001 && recorded[1].name === 'ReviseBookSql1700000000001', 'the migrations table records them');
  check(!(await ds.showMigrations()), 'showMigrations finds none pending');
  const qr2 = ds.createQueryRunner();
  // TESSERA-GAP: COL_NAME (getTable); hasColumn and sys.indexes stand in.
  // const revised = await qr2.getTable('book');
  // check(revised.columns.some((x) => x.name === 'code') && !revised.columns.some((x) => x.name === 'isbn'), 'addColumn and renameColumn (sp_rename)');
  // check(revised.indices.some((i) => i.name === 'IDX_book_code'), 'createIndex');
  // check(await qr2.hasTable('tag') && (await qr2.getTable('review')).foreignKeys.length === 1, 'createTable and createForeignKey');
  check(await qr2.hasColumn('book', 'code') && !(await qr2.hasColumn('book', 'isbn')), 'the migration adds the column');
  const ix = await ds.query("SELECT name FROM sys.indexes WHERE object_id = OBJECT_ID('book') AND name = 'IDX_book_code'");
  check(ix.length === 1, 'and the index');
  const reviewFk = await ds.query("SELECT name FROM sys.foreign_keys WHERE parent_object_id = OBJECT_ID('review')");
  check(await qr2.hasTable('tag') && reviewFk.length === 1, 'and the tables with their foreign keys');
  await ds.query('INSERT INTO "tag" ("label", "bookId") VALUES (@0, @1)', ['classic', notes.id]);
  await ds.undoLastMigration();
  check(!(await qr2.hasColumn('book', 'code')) && !(await qr2.hasTable('review')), 'undoLastMigration reverts the last');
  check((await ds.query('SELECT COUNT(*) AS n FROM "migrations"'))[0].n === 1, 'and removes it from the migrations table');
  await ds.undoLastMigration();
  check(!(await qr2.hasTable('tag')) && (await ds.query('SELECT COUNT(*) AS n FROM "migrations"'))[0].n === 0, 'undoLastMigration again');
  await qr2.release();
  // TESSERA-GAP: COL_NAME (the schema diff reads the catalog).
  // const after = await ds.driver.createSchemaBuilder().log();
  // check(after.upQueries.length === 0, 'after the migrations are undone the schema matches the entities' + (after.upQueries.length ? ': ' + after.upQueries.map((q) => q.query).join('; ') : ''));

  // save() updates in a transaction, returning the new version through @OutputTable: last,
  // as (TESSERA-GAP: TABLE-VARIABLE) any insert of another shape on its connection
  // would fail after it.
  const before = ada.version;
  ada.name = 'Ada King';
  const updated = await authors.save(ada);
  check(updated.version === before + 1, 'update through save bumps the version: ' + before + ' -> ' + updated.version);
  check((await authors.findOneBy({ id: adaId })).name === 'Ada King', 'and saves');

  await ds.destroy();
  const again = dataSource('master');
  await again.initialize();
  await again.query(`DROP DATABASE ${DB}`);
  await again.destroy();
  console.log('all checks passed');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
