// The TypeORM scenario over mssql and tedious, against a running tessera: what an
// application written with TypeORM does, and what its schema synchronization and its
// migrations do. Plain CommonJS with EntitySchema, so there is no compile step.
//
// Usage: node scenario.js HOST PORT PASSWORD
//
// Covers: synchronize creating tables with a one-to-many relation, an index, a unique
// column, defaults, a create-date and a version column; QueryRunner.getTables reading them
// back from the catalog (INFORMATION_SCHEMA, sys.columns, sys.indexes, sys.foreign_keys,
// sys.default_constraints, COL_NAME, OBJECT_NAME ...): types, lengths, decimal precision,
// identity, primary and foreign keys, indexes, unique constraints, defaults; the schema
// diff of synchronize on the existing schema finding nothing to change, and synchronize
// run again; CRUD through repositories (save() in a transaction returning the generated
// columns through a per-batch @OutputTable table variable, one entity after another on a
// connection; insert() outside one) and the query builder, relations loading and joins,
// findOne with a relation joined and skip/take with a relation joined, ordered and not
// (TypeORM's SELECT DISTINCT ... ORDER BY <alias> paging query), OFFSET/FETCH,
// transactions of save()s committed and rolled back, a QueryRunner transaction with an
// isolation level, a batch insert, Unicode, decimal(18,4), datetime2 and date, a 10 KB
// nvarchar(max); then two migrations (one of raw SQL as the CLI generates, one through
// the QueryRunner API: addColumn, renameColumn (sp_rename 'db.dbo.table.column', 'new'),
// createIndex, createTable, createForeignKey) run with runMigrations, checked with
// getTable, recorded in the migrations table, undone with undoLastMigration, after which
// the schema diff again matches the entities. Exits non-zero on the first failure.
//
// Checks tessera cannot pass yet would be commented out, each marked TESSERA-GAP with what
// is missing, with a stand-in where one is needed. None remain: COL_NAME, the table
// variables of TypeORM's @OutputTable, DISTINCT with ORDER BY an alias and sp_rename of a
// column, the earlier gaps, are all fixed and their checks enabled.
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
// know the table before changing it (getTables: COL_NAME, OBJECT_NAME, sys.columns ...),
// and renames a column with sp_rename 'db.schema.table.column', 'new'.
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
    migrations: [AddTags1700000000000, ReviseBook1700000000001],
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
  // getTables: the catalog read behind the schema diff and the QueryRunner API.
  const tables = (await qr.getTables(['author', 'book'])).sort((a, b) => a.name.localeCompare(b.name));
  check(tables.map((t) => t.name).join(',') === 'author,book', 'getTables: ' + tables.map((t) => t.name).join(','));
  const book = tables[1];
  const col = (t, n) => t.columns.find((c) => c.name === n);
  check(col(book, 'price').type === 'decimal' && col(book, 'price').precision === 18 && col(book, 'price').scale === 4, 'getTables reads decimal(18,4)');
  check(col(book, 'body').length === 'MAX' && col(book, 'title').length === '200', 'getTables reads nvarchar lengths: ' + col(book, 'title').length + ', ' + col(book, 'body').length);
  check(col(book, 'id').isGenerated && col(book, 'id').isPrimary, 'getTables reads the identity primary key');
  check(book.foreignKeys.length === 1 && book.foreignKeys[0].referencedTableName.endsWith('author') && book.foreignKeys[0].onDelete === 'CASCADE', 'getTables reads the foreign key');
  check(book.indices.some((i) => i.name === 'IDX_book_title'), 'getTables reads the index');
  check(String(col(book, 'stock').default) === '0', 'getTables reads the default: ' + col(book, 'stock').default);
  const author = tables[0];
  check(col(author, 'email').isUnique || author.uniques.length === 1 || author.indices.some((i) => i.isUnique), 'getTables reads the unique constraint');
  const pending = await ds.driver.createSchemaBuilder().log();
  check(pending.upQueries.length === 0, 'synchronize on the existing schema finds no changes' + (pending.upQueries.length ? ': ' + pending.upQueries.map((q) => q.query).join('; ') : ''));
  await ds.synchronize();
  check(true, 'synchronize again on the unchanged schema');
  await qr.release();

  // CRUD.
  const authors = ds.getRepository('Author');
  const books = ds.getRepository('Book');
  const longText = 'Ünïcödé ✓ '.repeat(1000);
  const published = new Date(Date.UTC(1843, 8, 1, 12, 30, 15, 123));
  // save() inserts in a transaction, returning the generated columns through a table
  // variable (@OutputTable) declared per batch; one save() after another, of another
  // entity, on the same connection.
  const saved = await authors.save({ name: 'Ada Łovelace', email: 'ada@example.org', born: '1815-12-10' });
  check(typeof saved.id === 'number' && saved.version === 1 && saved.active === true && saved.createdAt instanceof Date, 'save returns the identity, the version and the defaults');
  await books.save({ title: 'Notes', price: '1234567890.1234', published, body: longText, author: saved });
  await books.save({ title: 'Sketch ☃ 数学 😀', price: '3.9900', author: { id: saved.id } });
  check((await books.countBy({ author: { id: saved.id } })) === 2, 'save of a book after an author on the same connection (@OutputTable per batch)');
  const adaId = saved.id;
  // insert() (no transaction) returns the generated columns too; this author goes again.
  const maryInsert = await authors.insert({ name: 'Mary Shelley', email: 'mary@example.org' });
  const maryId = maryInsert.identifiers[0].id;
  const generated = maryInsert.generatedMaps[0];
  check(typeof maryId === 'number' && generated.version === 1 && generated.active === true && generated.createdAt instanceof Date, 'insert returns the identity, the version and the defaults');
  await books.insert({ title: 'Frankenstein', author: { id: maryId } });
  check((await books.countBy({ author: { id: maryId } })) === 1, 'insert with a many-to-one relation');
  await authors.delete(maryId);

  // findOne with a relation joined pages with take 1: SELECT DISTINCT ... ORDER BY the
  // alias of the primary column.
  const got = await authors.findOne({ where: { id: adaId }, relations: { books: true }, order: { books: { id: 'ASC' } } });
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
  const sketch = await books.findOne({ where: { title: 'Sketch ☃ 数学 😀' }, relations: { author: true } });
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
  // Without an order the paging query is SELECT DISTINCT "distinctAlias"."Author_id" AS
  // "ids_Author_id" FROM (...) "distinctAlias" ORDER BY "Author_id" ASC OFFSET 0 ROWS FETCH
  // NEXT 2 ROWS ONLY.
  const unordered = await authors.find({ relations: { books: true }, skip: 0, take: 2 });
  check(unordered.length === 2, 'skip/take with a relation joined, unordered');
  const qbPage = await authors.createQueryBuilder('a').orderBy('a.name', 'DESC').offset(3).limit(2).getMany();
  check(qbPage.map((a) => a.name).join(',') === 'Author 026,Author 025', 'offset/limit in the query builder');
  check((await authors.count()) === 31, 'count');

  // Transactions.
  // Two save()s of different entities in one transaction: each declares its own @OutputTable.
  await ds.transaction(async (m) => {
    const a = await m.save('Author', { name: 'committed', email: 'c@example.org' });
    await m.save('Book', { title: 'committed book', author: a });
  });
  check((await books.countBy({ title: 'committed book' })) === 1, 'a transaction commits');
  try {
    await ds.transaction(async (m) => {
      const a = await m.save('Author', { name: 'ghost', email: 'g@example.org' });
      await m.save('Book', { title: 'ghost book', author: a });
      throw new Error('roll back');
    });
  } catch (e) {
    check(e.message === 'roll back', 'a failing transaction throws');
  }
  check((await authors.countBy({ name: 'ghost' })) === 0 && (await books.countBy({ title: 'ghost book' })) === 0, 'and rolls back, leaving nothing');
  const runner = ds.createQueryRunner();
  await runner.connect();
  await runner.startTransaction('SERIALIZABLE');
  await runner.manager.insert('Author', { name: 'manual', email: 'm@example.org' });
  await runner.manager.insert('Book', { title: 'manual book' });
  await runner.rollbackTransaction();
  await runner.release();
  check((await authors.countBy({ name: 'manual' })) === 0 && (await books.countBy({ title: 'manual book' })) === 0, 'a QueryRunner transaction with an isolation level rolls back');

  // Delete, with the cascade.
  const c = await authors.findOneBy({ name: 'committed' });
  await authors.delete(c.id);
  check((await books.countBy({ title: 'committed book' })) === 0, 'delete cascades to the books');
  await authors.remove(await authors.findBy({ name: 'Author 029' }));
  check((await authors.count()) === 30, 'remove');

  // Migrations.
  const ran = await ds.runMigrations();
  check(ran.map((m) => m.name).join(',') === 'AddTags1700000000000,ReviseBook1700000000001', 'runMigrations runs both: ' + ran.map((m) => m.name).join(','));
  const recorded = await ds.query('SELECT "timestamp", "name" FROM "migrations" ORDER BY "id"');
  check(recorded.length === 2 && Number(recorded[1].timestamp) === 1700000000001 && recorded[1].name === 'ReviseBook1700000000001', 'the migrations table records them');
  check(!(await ds.showMigrations()), 'showMigrations finds none pending');
  const qr2 = ds.createQueryRunner();
  const revised = await qr2.getTable('book');
  check(revised.columns.some((x) => x.name === 'code') && !revised.columns.some((x) => x.name === 'isbn'), 'addColumn and renameColumn (sp_rename)');
  check(revised.indices.some((i) => i.name === 'IDX_book_code'), 'createIndex');
  check(await qr2.hasTable('tag') && (await qr2.getTable('review')).foreignKeys.length === 1, 'createTable and createForeignKey');
  await ds.query('INSERT INTO "tag" ("label", "bookId") VALUES (@0, @1)', ['classic', notes.id]);
  await ds.undoLastMigration();
  check(!(await qr2.hasColumn('book', 'code')) && !(await qr2.hasTable('review')), 'undoLastMigration reverts the last');
  check((await ds.query('SELECT COUNT(*) AS n FROM "migrations"'))[0].n === 1, 'and removes it from the migrations table');
  await ds.undoLastMigration();
  check(!(await qr2.hasTable('tag')) && (await ds.query('SELECT COUNT(*) AS n FROM "migrations"'))[0].n === 0, 'undoLastMigration again');
  await qr2.release();
  const after = await ds.driver.createSchemaBuilder().log();
  check(after.upQueries.length === 0, 'after the migrations are undone the schema matches the entities' + (after.upQueries.length ? ': ' + after.upQueries.map((q) => q.query).join('; ') : ''));

  // save() updates in a transaction, returning the new version through @OutputTable; then
  // an insert of another shape on the pool (the table variable went with its batch).
  const before = ada.version;
  ada.name = 'Ada King';
  const updated = await authors.save(ada);
  check(updated.version === before + 1, 'update through save bumps the version: ' + before + ' -> ' + updated.version);
  check((await authors.findOneBy({ id: adaId })).name === 'Ada King', 'and saves');
  const late = await books.save({ title: 'Late', author: { id: adaId } });
  check(typeof late.id === 'number' && (await books.countBy({ title: 'Late' })) === 1, 'a book saved after the update through save');

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
