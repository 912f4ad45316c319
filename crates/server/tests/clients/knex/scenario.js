// The Knex 3 scenario over tedious, against a running tessera: what an application written
// with Knex does, and what its migrations and schema builder do.
//
// Usage: node scenario.js HOST PORT PASSWORD
//
// Covers: migrations from an in-memory migration source run with migrate.latest, listed,
// undone with migrate.rollback and migrate.down (the knex_migrations and
// knex_migrations_lock tables); the schema builder: createTable with increments, unique()
// (filtered unique indexes), defaults (DEFAULT '0', DEFAULT '-1', DEFAULT
// CURRENT_TIMESTAMP from knex.fn.now()), decimal(18,4), datetime2, date, nvarchar(max), a
// foreign key and an index; alterTable adding, renaming (sp_rename) and dropping a column
// (with its default constraint), an index and a foreign key, and adding a column to the
// table with the CURRENT_TIMESTAMP default; reflection with hasTable, hasColumn and
// columnInfo (types, lengths, nullability, and the defaults as SQL Server keeps them:
// ('0'), ('-1'), (getdate())); CRUD with returning() (OUTPUT inserted.*), joins,
// pagination (OFFSET/FETCH), transactions committed, rolled back and nested (savepoints),
// a batch insert, upserts (update-else-insert), Unicode, decimals and dates, a 10 KB
// string. Exits non-zero on the first failure.
//
// unique() on mssql creates a filtered unique index (CREATE UNIQUE INDEX ... WHERE [col]
// IS NOT NULL): several NULLs are accepted, a duplicate value fails with 2601.
//
// Checks tessera cannot pass yet are commented out, each marked TESSERA-GAP with what is
// missing, with a stand-in that keeps the rest of the scenario going. The gaps:
//   MERGE           MERGE is not supported (Msg 156); the raw MERGE upsert is replaced by
//                   update-else-insert in a transaction.
'use strict';

const knexLib = require('knex');

const [host, port, password] = process.argv.slice(2);
const DB = 'knex_db';

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
  console.log('ok: ' + what);
}

function connect(database) {
  const knex = knexLib({
    client: 'mssql',
    connection: {
      host,
      port: Number(port),
      user: 'sa',
      password,
      database,
      requestTimeout: 60000,
      options: { encrypt: false, trustServerCertificate: true },
    },
  });
  if (process.env.KNEX_LOG) {
    knex.on('query', (q) => console.log('query: ' + q.sql + ' -- ' + JSON.stringify(q.bindings || []).slice(0, 300)));
    knex.on('query-error', (e, q) => console.log('query failed: ' + q.sql + ' -- ' + e.message));
  }
  return knex;
}

// The migrations, as files in a migrations directory would hold them.
const migrations = {
  '20240101000000_authors_books': {
    async up(knex) {
      await knex.schema.createTable('authors', (t) => {
        t.increments('id');
        t.string('name', 100).notNullable();
        // unique() on mssql creates a filtered index: CREATE UNIQUE INDEX
        // [authors_email_unique] ON [authors] ([email]) WHERE [email] IS NOT NULL.
        t.string('email', 200).unique();
        t.date('born');
        t.boolean('active').notNullable().defaultTo(true);
        // knex.fn.now() is DEFAULT CURRENT_TIMESTAMP, which SQL Server keeps as (getdate()).
        t.datetime('created_at').notNullable().defaultTo(knex.fn.now());
      });
      await knex.schema.createTable('books', (t) => {
        t.increments('id');
        t.string('title', 200).notNullable().index('books_title_index');
        t.decimal('price', 18, 4);
        t.datetime('published', { precision: 7 });
        t.text('body');
        t.integer('author_id').unsigned().references('id').inTable('authors').onDelete('CASCADE');
      });
    },
    async down(knex) {
      await knex.schema.dropTable('books');
      await knex.schema.dropTable('authors');
    },
  },
  '20240102000000_revise_books': {
    async up(knex) {
      await knex.schema.alterTable('books', (t) => {
        t.string('isbn', 20);
        t.integer('stock').notNullable().defaultTo(0);
        t.integer('rank').notNullable().defaultTo(-1);
      });
      await knex.schema.alterTable('books', (t) => {
        t.renameColumn('isbn', 'code');
      });
      await knex.schema.alterTable('books', (t) => {
        t.index(['code'], 'books_code_index');
      });
      // An ALTER TABLE on the table with the DEFAULT CURRENT_TIMESTAMP.
      await knex.schema.alterTable('authors', (t) => {
        t.string('nickname', 50);
      });
      await knex.schema.createTable('tags', (t) => {
        t.increments('id');
        // A unique index on a non-null column is filtered too.
        t.string('label', 50).notNullable().unique();
        t.integer('book_id');
        t.foreign('book_id', 'tags_book_fk').references('books.id');
      });
    },
    async down(knex) {
      await knex.schema.dropTable('tags');
      await knex.schema.alterTable('authors', (t) => {
        t.dropColumn('nickname');
      });
      await knex.schema.alterTable('books', (t) => {
        t.dropIndex(['code'], 'books_code_index');
      });
      await knex.schema.alterTable('books', (t) => {
        t.dropColumn('code');
        t.dropColumn('stock');
        t.dropColumn('rank');
      });
    },
  },
};

const migrationSource = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};

async function main() {
  const master = connect('master');
  await master.raw(`IF DB_ID('${DB}') IS NOT NULL DROP DATABASE ${DB}`);
  await master.raw(`CREATE DATABASE ${DB}`);
  await master.destroy();

  const knex = connect(DB);
  const [{ v }] = await knex.raw('SELECT 1 AS v');
  check(v === 1, 'connect');

  // Migrations.
  const [batch, names] = await knex.migrate.latest({ migrationSource });
  check(batch === 1 && names.length === 2, 'migrate.latest runs both migrations: ' + JSON.stringify(names));
  const recorded = await knex('knex_migrations').orderBy('id');
  check(recorded.length === 2 && recorded.every((r) => r.batch === 1) && recorded[0].name === '20240101000000_authors_books' && recorded[0].migration_time instanceof Date, 'knex_migrations records them');
  const lock = await knex('knex_migrations_lock').select('is_locked');
  check(lock.length === 1 && lock[0].is_locked === 0, 'knex_migrations_lock is released');
  const [done, pending] = await knex.migrate.list({ migrationSource });
  check(done.length === 2 && pending.length === 0, 'migrate.list');
  check((await knex.migrate.currentVersion({ migrationSource })) === '20240102000000', 'migrate.currentVersion');

  // Reflection.
  check(await knex.schema.hasTable('authors') && await knex.schema.hasTable('tags') && !(await knex.schema.hasTable('nope')), 'hasTable');
  check(await knex.schema.hasColumn('books', 'code') && !(await knex.schema.hasColumn('books', 'isbn')), 'hasColumn after renameColumn (sp_rename)');
  const info = await knex('books').columnInfo();
  check(info.price.type === 'decimal' && info.title.type === 'nvarchar' && info.title.maxLength === 200 && info.title.nullable === false, 'columnInfo: ' + JSON.stringify({ price: info.price, title: info.title }));
  check(info.body.type === 'nvarchar' && info.body.maxLength === -1 && info.published.type === 'datetime2', 'columnInfo of nvarchar(max) and datetime2: ' + JSON.stringify([info.body, info.published]));
  // knex writes the defaults as DEFAULT '0' and DEFAULT '-1'; SQL Server keeps them as
  // ('0') and ('-1'), and DEFAULT CURRENT_TIMESTAMP as (getdate()).
  check(info.stock.defaultValue === "('0')" && info.stock.nullable === false, 'columnInfo of a default: ' + info.stock.defaultValue);
  check(info.rank.defaultValue === "('-1')", 'columnInfo of a negative default: ' + info.rank.defaultValue);
  const created = await knex('authors').columnInfo('created_at');
  check(await knex.schema.hasColumn('authors', 'nickname'), 'alterTable on the table with DEFAULT CURRENT_TIMESTAMP');
  check(created.defaultValue === '(getdate())' && created.type === 'datetime2', 'columnInfo of DEFAULT CURRENT_TIMESTAMP: ' + JSON.stringify(created));
  const email = await knex('authors').columnInfo('email');
  check(email.type === 'nvarchar' && email.maxLength === 200 && email.nullable === true, 'columnInfo of one column');
  const indexes = await knex.raw("SELECT i.name FROM sys.indexes i WHERE i.object_id = OBJECT_ID('books') AND i.name IS NOT NULL ORDER BY i.name");
  check(indexes.map((r) => r.name).filter((n) => !n.startsWith('PK')).join(',') === 'books_code_index,books_title_index', 'the indexes: ' + indexes.map((r) => r.name).join(','));
  const fks = await knex.raw("SELECT name, OBJECT_NAME(parent_object_id) AS t, delete_referential_action_desc AS d FROM sys.foreign_keys ORDER BY name");
  check(fks.length === 2 && fks.some((f) => f.t === 'books' && f.d === 'CASCADE') && fks.some((f) => f.name === 'tags_book_fk'), 'the foreign keys: ' + JSON.stringify(fks));

  // Rollback, then forward again.
  const [rolledBatch, rolled] = await knex.migrate.rollback({ migrationSource });
  check(rolledBatch === 1 && rolled.length === 2, 'migrate.rollback undoes the batch');
  check(!(await knex.schema.hasTable('authors')) && !(await knex.schema.hasTable('tags')), 'and drops the tables');
  check((await knex('knex_migrations').count({ n: '*' }))[0].n === 0, 'and empties knex_migrations');
  await knex.migrate.up({ migrationSource });
  await knex.migrate.up({ migrationSource });
  await knex.migrate.down({ migrationSource });
  check(await knex.schema.hasTable('books') && !(await knex.schema.hasColumn('books', 'code')) && !(await knex.schema.hasColumn('books', 'stock')) && !(await knex.schema.hasColumn('books', 'rank')) && !(await knex.schema.hasColumn('authors', 'nickname')) && !(await knex.schema.hasTable('tags')), 'migrate.up twice and down: dropIndex and dropColumn (with its default constraint)');
  await knex.migrate.latest({ migrationSource });
  check((await knex('knex_migrations').count({ n: '*' }))[0].n === 2, 'migrate.latest again');

  // CRUD.
  const longText = 'Ünïcödé ✓ '.repeat(1000);
  const [ada] = await knex('authors').insert({ name: 'Ada Łovelace', email: 'ada@example.org', born: '1815-12-10' }).returning('*');
  check(typeof ada.id === 'number' && ada.active === true && ada.created_at instanceof Date && ada.name === 'Ada Łovelace', 'insert returning * (OUTPUT inserted.*) gives the identity and the defaults');
  // getdate() is the server's local time, read as UTC: within a day of now.
  check(Math.abs(ada.created_at.getTime() - Date.now()) < 86400000, 'DEFAULT CURRENT_TIMESTAMP fills in the time: ' + ada.created_at.toISOString());
  const published = new Date(Date.UTC(1843, 8, 1, 12, 30, 15, 123));
  const [notesId] = await knex('books').insert({ title: 'Notes', price: '1234567890.1234', published, body: longText, author_id: ada.id, code: 'N-1' }).returning('id');
  check(typeof notesId.id === 'number', 'insert returning id');
  await knex('books').insert({ title: 'Sketch ☃ 数学 😀', price: 3.99, author_id: ada.id });
  const rows = await knex('authors as a')
    .join('books as b', 'b.author_id', 'a.id')
    .where('a.id', ada.id)
    .orderBy('b.id')
    .select('a.name', 'a.born', 'b.title', 'b.price', 'b.published', 'b.body', 'b.stock', 'b.rank');
  check(rows.length === 2 && rows.map((r) => r.title).join('|') === 'Notes|Sketch ☃ 数学 😀', 'join, Unicode intact');
  check(rows[0].born instanceof Date && rows[0].born.toISOString().slice(0, 10) === '1815-12-10', 'a date round-trips: ' + rows[0].born);
  check(rows[0].price === 1234567890.1234 && rows[1].price === 3.99, 'a decimal(18,4) parameter round-trips: ' + rows[0].price);
  // tedious carries decimals as JavaScript numbers, exact to 15 digits; the full 18 digits
  // are written as a literal and read back as text.
  await knex('books').where('id', notesId.id).update({ price: knex.raw('12345678901234.5678') });
  const [exact] = await knex('books').where('id', notesId.id).select(knex.raw('CONVERT(varchar(40), price) AS p'));
  check(exact.p === '12345678901234.5678', 'a decimal(18,4) round-trips exactly: ' + exact.p);
  check(rows[0].published.getTime() === published.getTime(), 'a datetime2 round-trips: ' + rows[0].published.toISOString());
  check(rows[0].body === longText, 'a 10 KB nvarchar(max) round-trips (' + rows[0].body.length + ' characters)');
  check(rows[1].stock === 0 && rows[1].rank === -1, 'column defaults');
  const bySketch = await knex('books').where('title', 'Sketch ☃ 数学 😀').first();
  check(bySketch && bySketch.author_id === ada.id, 'where on an N\'\' Unicode string, first()');
  const like = await knex('authors').whereILike('name', 'ada ł%').select('id');
  check(like.length === 1, 'whereILike');

  const updated = await knex('authors').where('id', ada.id).update({ name: 'Ada Lovelace', active: false }, ['id', 'name', 'active']);
  check(updated.length === 1 && updated[0].name === 'Ada Lovelace' && updated[0].active === false, 'update returning (OUTPUT inserted.*)');
  await knex('books').where('id', notesId.id).increment('stock', 5);
  check((await knex('books').where('id', notesId.id).first('stock')).stock === 5, 'increment');
  const agg = await knex('books as b').join('authors as a', 'a.id', 'b.author_id')
    .groupBy('a.name').select('a.name').count({ n: '*' }).select(knex.raw('CONVERT(varchar(40), SUM(b.price)) AS total'));
  check(agg.length === 1 && agg[0].n === 2 && agg[0].total === '12345678901238.5578', 'group by with aggregates: ' + JSON.stringify(agg));
  // The filtered unique index on email: rows with no email don't collide, a duplicate
  // email fails with 2601 (a unique index, not a constraint).
  const noEmail = await knex('authors').insert([{ name: 'no email 1' }, { name: 'no email 2', email: null }], ['id']);
  check(noEmail.length === 2 && (await knex('authors').whereNull('email')).length === 2, 'a second row with a NULL in the unique (filtered) column is accepted');
  await knex('authors').whereIn('id', noEmail.map((r) => r.id)).del();
  try {
    await knex('authors').insert({ name: 'dup', email: 'ada@example.org' });
    throw new Error('a duplicate key was inserted');
  } catch (e) {
    check(e.number === 2601, 'a duplicate non-NULL value in the unique (filtered) column fails: ' + e.number + ' ' + e.message);
  }
  const filtered = await knex.raw("SELECT i.name, i.is_unique, i.has_filter, i.filter_definition FROM sys.indexes i WHERE i.object_id = OBJECT_ID('authors') AND i.name = 'authors_email_unique'");
  check(filtered.length === 1 && filtered[0].is_unique === true && filtered[0].has_filter === true && filtered[0].filter_definition === '([email] IS NOT NULL)', 'sys.indexes shows the filtered unique index: ' + JSON.stringify(filtered));
  try {
    await knex('books').insert({ title: 'orphan', author_id: 999999 });
    throw new Error('a foreign key violation committed');
  } catch (e) {
    check(e.number === 547, 'a foreign key violation fails: ' + e.number + ' ' + e.message);
  }

  // A batch insert, and pagination.
  const many = Array.from({ length: 30 }, (_, i) => ({ name: 'Author ' + String(i).padStart(3, '0'), email: 'author' + i + '@example.org' }));
  const ids = await knex('authors').insert(many, ['id']);
  check(ids.length === 30 && ids.every((r) => typeof r.id === 'number'), 'batch insert of 30 rows returning their identities');
  const page = await knex('authors').where('active', true).orderBy('name').offset(10).limit(5).pluck('name');
  check(page.join(',') === ['010', '011', '012', '013', '014'].map((n) => 'Author ' + n).join(','), 'offset/limit pagination: ' + page.join(','));
  const top = await knex('authors').orderBy('name', 'desc').limit(2).pluck('name');
  check(top.join(',') === 'Author 029,Author 028', 'limit alone (TOP)');
  const [{ n: total }] = await knex('authors').count({ n: '*' });
  check(total === 31, 'count');
  const paged = await knex('authors').whereIn('id', ids.slice(0, 5).map((r) => r.id)).orderBy('id').offset(1).pluck('id');
  check(paged.length === 4, 'whereIn with offset alone');

  // Transactions.
  await knex.transaction(async (trx) => {
    const [a] = await trx('authors').insert({ name: 'committed', email: 'c@example.org' }, ['id']);
    await trx('books').insert({ title: 'committed book', author_id: a.id });
  });
  check((await knex('books').where('title', 'committed book')).length === 1, 'a transaction commits');
  try {
    await knex.transaction(async (trx) => {
      const [a] = await trx('authors').insert({ name: 'ghost', email: 'g@example.org' }, ['id']);
      await trx('books').insert({ title: 'ghost book', author_id: a.id });
      throw new Error('roll back');
    });
  } catch (e) {
    check(e.message === 'roll back', 'a failing transaction throws');
  }
  check((await knex('authors').where('name', 'ghost')).length === 0 && (await knex('books').where('title', 'ghost book')).length === 0, 'and rolls back, leaving nothing');
  await knex.transaction(async (trx) => {
    await trx('authors').insert({ name: 'outer', email: 'o@example.org' });
    try {
      await trx.transaction(async (inner) => {
        await inner('authors').insert({ name: 'inner', email: 'i@example.org' });
        throw new Error('inner roll back');
      });
    } catch (e) {
      check(e.message === 'inner roll back', 'a nested transaction (savepoint) throws');
    }
  });
  check((await knex('authors').where('name', 'outer')).length === 1 && (await knex('authors').where('name', 'inner')).length === 0, 'and rolls back to its savepoint, the outer commits');
  const trx = await knex.transaction({ isolationLevel: 'serializable' });
  await trx('authors').insert({ name: 'manual', email: 'm@example.org' });
  await trx.rollback();
  check((await knex('authors').where('name', 'manual')).length === 0, 'a transaction with an isolation level rolls back');

  // Upserts. knex 3.3 rejects onConflict() for mssql in the client ('.onConflict() is not
  // supported for mssql.'), so applications upsert with a raw MERGE, or update and insert
  // when nothing was updated.
  const merge = (name, email) => knex.raw(
    'MERGE INTO [authors] WITH (HOLDLOCK) AS t USING (VALUES (?, ?)) AS s ([name], [email]) ON t.[email] = s.[email] ' +
    'WHEN MATCHED THEN UPDATE SET t.[name] = s.[name] WHEN NOT MATCHED THEN INSERT ([name], [email]) VALUES (s.[name], s.[email]) ' +
    'OUTPUT $action AS [action], inserted.[id];', [name, email]);
  // TESSERA-GAP: MERGE: not supported, Msg 156 "Incorrect syntax near the keyword 'MERGE'.".
  // const merged = await merge('Upserted', 'ada@example.org');
  // check(merged.length === 1 && merged[0].action === 'UPDATE', 'MERGE updates the existing row');
  // check((await knex('authors').where('email', 'ada@example.org').first('name')).name === 'Upserted', 'and writes it');
  // const fresh = await merge('Fresh', 'fresh@example.org');
  // check(fresh.length === 1 && fresh[0].action === 'INSERT', 'MERGE inserts a new row');
  void merge;
  const upsert = (name, email) => knex.transaction(async (t) => {
    const n = await t('authors').where('email', email).update({ name });
    if (n === 0) {
      await t('authors').insert({ name, email });
    }
  });
  await upsert('Upserted', 'ada@example.org');
  await upsert('Fresh', 'fresh@example.org');
  check((await knex('authors').where('email', 'ada@example.org').first('name')).name === 'Upserted', 'upsert updates the existing row');
  check((await knex('authors').where('email', 'fresh@example.org')).length === 1, 'upsert inserts a new row');

  // Delete, with the cascade and returning.
  const c = await knex('authors').where('name', 'committed').first('id');
  const deleted = await knex('authors').where('id', c.id).del(['id', 'name']);
  check(deleted.length === 1 && deleted[0].name === 'committed', 'delete returning (OUTPUT deleted.*)');
  check((await knex('books').where('title', 'committed book')).length === 0, 'delete cascades to the books');

  await knex.destroy();
  const again = connect('master');
  await again.raw(`DROP DATABASE ${DB}`);
  await again.destroy();
  console.log('all checks passed');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
