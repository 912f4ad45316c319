// The Sequelize 6 scenario over tedious, against a running tessera: what an application
// written with Sequelize does, and what its schema sync and migrations do.
//
// Usage: node scenario.js HOST PORT PASSWORD
//
// Covers: sync() creating tables with associations, sync({ alter: true }) (describeTable
// reads INFORMATION_SCHEMA, showIndex runs sp_helpindex), CRUD, eager loading with
// include, pagination (OFFSET/FETCH), a managed transaction rolled back, bulkCreate,
// Unicode, decimals and dates, a 10 KB string; then QueryInterface migrations: add and
// rename a column (sp_rename), add an index, remove both. Exits non-zero on the first
// failure.
'use strict';

const { Sequelize, DataTypes, Op } = require('sequelize');

const [host, port, password] = process.argv.slice(2);

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
  console.log('ok: ' + what);
}

function connect(database) {
  return new Sequelize(database, 'sa', password, {
    host,
    port: Number(port),
    dialect: 'mssql',
    logging: false,
    dialectOptions: { options: { encrypt: false, requestTimeout: 60000 } },
  });
}

async function main() {
  const master = connect('master');
  await master.query("IF DB_ID('sequelize_db') IS NOT NULL DROP DATABASE sequelize_db");
  await master.query('CREATE DATABASE sequelize_db');
  await master.close();

  const db = connect('sequelize_db');
  await db.authenticate();
  check(true, 'authenticate');
  const Author = db.define('Author', {
    name: { type: DataTypes.STRING(100), allowNull: false },
    born: DataTypes.DATEONLY,
  });
  const Book = db.define('Book', {
    title: { type: DataTypes.STRING(200), allowNull: false },
    price: DataTypes.DECIMAL(10, 2),
    published: DataTypes.DATE,
    body: DataTypes.TEXT,
  }, { indexes: [{ fields: ['title'] }] });
  Author.hasMany(Book);
  Book.belongsTo(Author);
  await db.sync({ force: true });
  const qi = db.getQueryInterface();
  const tables = (await qi.showAllTables()).map((t) => (typeof t === 'string' ? t : t.tableName)).sort();
  check(JSON.stringify(tables) === '["Authors","Books"]', 'sync creates the tables: ' + JSON.stringify(tables));
  const described = await qi.describeTable('Books');
  check(described.title && described.title.allowNull === false && described.id.primaryKey, 'describeTable reads the columns and the key');
  // Sequelize writes a length for the character types only.
  check(described.price.type === 'DECIMAL' && described.title.type === 'NVARCHAR(200)', 'describeTable types: ' + described.price.type + ', ' + described.title.type);
  const indexes = await qi.showIndex('Books');
  check(indexes.some((ix) => ix.fields.some((f) => f.attribute === 'title')), 'showIndex (sp_helpindex) finds the index');
  await db.sync({ alter: true });
  check(true, 'sync({ alter: true }) on an unchanged schema');

  const longText = 'Ünïcödé ✓ '.repeat(1000);
  const ada = await Author.create({ name: 'Ada Łovelace', born: '1815-12-10' });
  await Book.create({ title: 'Notes', price: '12.50', published: new Date(Date.UTC(1843, 8, 1, 12, 30)), body: longText, AuthorId: ada.id });
  await Book.create({ title: 'Sketch ☃', price: '3.99', AuthorId: ada.id });
  const found = await Author.findOne({ where: { name: 'Ada Łovelace' }, include: Book, order: [[Book, 'id', 'ASC']] });
  check(found.born === '1815-12-10', 'a date round-trips');
  check(found.Books.map((b) => b.title).join('|') === 'Notes|Sketch ☃', 'eager loading with include, Unicode intact');
  const notes = found.Books[0];
  check(Number(notes.price) === 12.5, 'a decimal round-trips: ' + JSON.stringify(notes.price));
  check(notes.body === longText, 'a 10 KB string round-trips (' + (notes.body || '').length + ' characters)');
  check(found.Books[0].published.getTime() === Date.UTC(1843, 8, 1, 12, 30), 'a datetime round-trips');

  await Author.bulkCreate(Array.from({ length: 30 }, (_, i) => ({ name: 'Author ' + String(i).padStart(3, '0') })));
  const page = await Author.findAll({ where: { name: { [Op.like]: 'Author %' } }, order: [['name', 'ASC']], offset: 10, limit: 5 });
  check(page.map((a) => a.name).join(',') === ['010', '011', '012', '013', '014'].map((n) => 'Author ' + n).join(','), 'offset/limit pagination');
  check((await Author.count()) === 31, 'count');

  try {
    await db.transaction(async (t) => {
      await Author.create({ name: 'ghost' }, { transaction: t });
      throw new Error('roll back');
    });
  } catch (e) {
    check(e.message === 'roll back', 'a managed transaction throws');
  }
  check((await Author.count({ where: { name: 'ghost' } })) === 0, 'and rolls back');
  try {
    await Book.create({ title: 'orphan', AuthorId: 999999 });
    throw new Error('a foreign key violation committed');
  } catch (e) {
    check(e.name === 'SequelizeForeignKeyConstraintError', 'a foreign key violation: ' + e.name);
  }

  // A migration, as QueryInterface runs one, and its undoing.
  await qi.addColumn('Books', 'isbn', { type: DataTypes.STRING(20), allowNull: true });
  await qi.renameColumn('Books', 'isbn', 'code');
  await qi.addIndex('Books', ['code'], { name: 'books_code' });
  const after = await qi.describeTable('Books');
  check(after.code && !after.isbn, 'addColumn and renameColumn (sp_rename)');
  await qi.removeIndex('Books', 'books_code');
  await qi.removeColumn('Books', 'code');
  check(!(await qi.describeTable('Books')).code, 'removeIndex and removeColumn');

  await db.close();
  const again = connect('master');
  await again.query('DROP DATABASE sequelize_db');
  await again.close();
  console.log('all checks passed');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
