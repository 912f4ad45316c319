// The client scenario through tedious (Node.js) with its default options — TLS for the
// whole connection (the test trusts the server's self-signed certificate through
// NODE_EXTRA_CA_CERTS) — against a running tessera server.
//
// Usage: node scenario.js HOST PORT PASSWORD
//
// Covers: a wrong password, TLS and plaintext logins, a TDS 8.0 strict connection
// (encrypt: 'strict') with a query and an error, create database and table, every
// data type through typed parameters (sp_executesql) and back, NULLs, a stored procedure
// with an OUTPUT parameter and a return status (RPC by name), transactions through
// Transaction Manager requests, an error with its number, cancelling a long-running query
// (attention) and a bulk load of 10,000 rows (INSERT BULK + BULK_LOAD). Exits non-zero on
// the first failure.
'use strict';

const { Connection, Request, TYPES } = require('tedious');

const [host, port, password] = process.argv.slice(2);

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
  console.log('ok: ' + what);
}

function connect(options = {}) {
  const config = {
    server: host,
    authentication: { type: 'default', options: { userName: 'sa', password: options.password || password } },
    options: { port: Number(port), database: options.database, connectTimeout: 30000, requestTimeout: options.requestTimeout || 60000 },
  };
  if (options.encrypt !== undefined) {
    config.options.encrypt = options.encrypt;
  }
  return new Promise((resolve, reject) => {
    const c = new Connection(config);
    c.on('error', () => {});
    c.connect((err) => (err ? reject(err) : resolve(c)));
  });
}

// Runs SQL (with optional typed parameters); resolves to the rows of every result set.
function run(c, sql, params = []) {
  return new Promise((resolve, reject) => {
    const rows = [];
    const req = new Request(sql, (err) => (err ? reject(err) : resolve(rows)));
    for (const [name, type, value, opts] of params) {
      req.addParameter(name, type, value, opts);
    }
    req.on('row', (cols) => rows.push(cols.map((col) => col.value)));
    // A parameterised request is an RPC (sp_executesql); a plain one a SQL batch, so that
    // USE and SET outlive it (they would not outlive sp_executesql's scope on SQL Server).
    if (params.length > 0) {
      c.execSql(req);
    } else {
      c.execSqlBatch(req);
    }
  });
}

function call(c, fn, ...args) {
  return new Promise((resolve, reject) => c[fn](...args, (err) => (err ? reject(err) : resolve())));
}

async function main() {
  try {
    await connect({ password: 'wrong' });
    throw new Error('login with a wrong password succeeded');
  } catch (e) {
    check(/Login failed for user 'sa'/.test(e.message), 'wrong password refused: ' + e.message);
  }

  const c = await connect();
  const [[encrypted]] = await run(c, 'SELECT encrypt_option FROM sys.dm_exec_connections WHERE session_id = @@SPID');
  check(encrypted === 'TRUE', 'default options: the whole connection in TLS');
  const plain = await connect({ encrypt: false });
  const [[two]] = await run(plain, 'SELECT 1 + 1');
  check(two === 2, 'encrypt: false connects too');
  plain.close();

  // TDS 8.0 strict: TLS (ALPN tds/8.0) before PRELOGIN, the certificate checked.
  const strict = await connect({ encrypt: 'strict' });
  const [[strictEncrypted]] = await run(strict, 'SELECT encrypt_option FROM sys.dm_exec_connections WHERE session_id = @@SPID');
  check(strictEncrypted === 'TRUE', "encrypt: 'strict': TLS first, the whole connection in TLS");
  try {
    await run(strict, 'SELECT * FROM no_such_table');
    throw new Error('no error');
  } catch (e) {
    check(e.number === 208, "encrypt: 'strict': error 208: " + e.message);
  }
  const [[answer]] = await run(strict, 'SELECT @n * 2', [['n', TYPES.Int, 21]]);
  check(answer === 42, "encrypt: 'strict': a parameterised query after an error");
  strict.close();

  await run(c, "IF DB_ID('tedious_db') IS NOT NULL DROP DATABASE tedious_db");
  await run(c, 'CREATE DATABASE tedious_db');
  await run(c, 'USE tedious_db');
  const [[db]] = await run(c, 'SELECT DB_NAME()');
  check(db === 'tedious_db', 'create database and use it');

  await run(
    c,
    `CREATE TABLE all_types (
       id int NOT NULL PRIMARY KEY, b bit, ti tinyint, si smallint, i int, bi bigint, r real, f float,
       d decimal(18,4), m money, vc varchar(50), nvc nvarchar(50), nvcm nvarchar(max), vb varbinary(20),
       dt date, tm time(3), dtm datetime, dt2 datetime2(3), g uniqueidentifier)`,
  );
  const when = new Date(Date.UTC(2024, 1, 29, 13, 45, 7, 123));
  const params = [
    ['id', TYPES.Int, 1],
    ['b', TYPES.Bit, true],
    ['ti', TYPES.TinyInt, 200],
    ['si', TYPES.SmallInt, -300],
    ['i', TYPES.Int, -70000],
    ['bi', TYPES.BigInt, '1099511627776'],
    ['r', TYPES.Real, 1.5],
    ['f', TYPES.Float, -2.25e100],
    ['d', TYPES.Decimal, 12345678901234.5678, { precision: 18, scale: 4 }],
    ['m', TYPES.Money, -1234.5678],
    ['vc', TYPES.VarChar, 'plain'],
    ['nvc', TYPES.NVarChar, '\u65e5\u672c\u8a9e'],
    ['nvcm', TYPES.NVarChar, 'x'.repeat(3000), { length: Infinity }],
    ['vb', TYPES.VarBinary, Buffer.from([0, 1, 0xfe, 0xff])],
    ['dt', TYPES.Date, new Date(Date.UTC(2024, 1, 29))],
    ['tm', TYPES.Time, new Date(Date.UTC(1970, 0, 1, 13, 45, 7, 123)), { scale: 3 }],
    ['dtm', TYPES.DateTime, when],
    ['dt2', TYPES.DateTime2, when, { scale: 3 }],
    ['g', TYPES.UniqueIdentifier, '6F9619FF-8B86-D011-B42D-00C04FC964FF'],
  ];
  await run(c, 'INSERT INTO all_types VALUES (' + params.map((p) => '@' + p[0]).join(', ') + ')', params);
  await run(c, 'INSERT INTO all_types (id) VALUES (@id)', [['id', TYPES.Int, 2]]);
  const rows = await run(c, 'SELECT * FROM all_types ORDER BY id');
  check(rows.length === 2, 'two rows back');
  const got = rows[0];
  const want = [1, true, 200, -300, -70000, '1099511627776', 1.5, -2.25e100, 12345678901234.5678, -1234.5678, 'plain',
    '\u65e5\u672c\u8a9e', 'x'.repeat(3000)];
  want.forEach((w, i) => check(String(got[i]) === String(w), `column ${i} round trip: ${String(got[i]).slice(0, 40)}`));
  check(Buffer.compare(got[13], Buffer.from([0, 1, 0xfe, 0xff])) === 0, 'varbinary round trip');
  check(got[14].toISOString().startsWith('2024-02-29'), 'date round trip');
  check(got[15].toISOString().endsWith('13:45:07.123Z'), 'time round trip');
  check(Math.abs(got[16].getTime() - when.getTime()) <= 4, 'datetime round trip');
  check(got[17].getTime() === when.getTime(), 'datetime2 round trip');
  check(got[18].toUpperCase() === '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'uniqueidentifier round trip');
  check(rows[1].slice(1).every((v) => v === null), 'NULLs round trip');

  // A stored procedure called by name: OUTPUT parameter, result set and return status.
  await run(c, 'CREATE PROCEDURE double_it @a int, @b int OUTPUT AS BEGIN SET NOCOUNT ON; SET @b = @a * 2; SELECT @a AS a; RETURN 7 END');
  const proc = await new Promise((resolve, reject) => {
    const out = { rows: [] };
    const req = new Request('double_it', (err) => (err ? reject(err) : resolve(out)));
    req.addParameter('a', TYPES.Int, 21);
    req.addOutputParameter('b', TYPES.Int);
    req.on('row', (cols) => out.rows.push(cols[0].value));
    req.on('returnValue', (name, value) => (out[name] = value));
    req.on('doneProc', (rowCount, more, returnStatus) => (out.status = returnStatus));
    c.callProcedure(req);
  });
  check(proc.rows[0] === 21, "the procedure's result set");
  check(proc.b === 42, 'OUTPUT parameter');
  check(proc.status === 7, 'return status');

  // Transactions through Transaction Manager requests.
  await run(c, 'CREATE TABLE acct (id int PRIMARY KEY, bal int)');
  await call(c, 'beginTransaction');
  await run(c, 'INSERT INTO acct VALUES (1, 10)');
  await call(c, 'rollbackTransaction');
  check((await run(c, 'SELECT COUNT(*) FROM acct'))[0][0] === 0, 'rollback');
  await call(c, 'beginTransaction');
  await run(c, 'INSERT INTO acct VALUES (2, 20)');
  await call(c, 'commitTransaction');
  check((await run(c, 'SELECT SUM(bal), @@TRANCOUNT FROM acct'))[0].join() === '20,0', 'commit');
  // A named transaction and a savepoint: a name's length byte counts bytes, as tedious
  // (and SqlClient) write it.
  const tm = (fn, ...args) => new Promise((resolve, reject) => c[fn]((err) => (err ? reject(err) : resolve()), ...args));
  await tm('beginTransaction', 'outer_tx');
  await run(c, 'INSERT INTO acct VALUES (3, 30)');
  await tm('saveTransaction', 'sp1');
  await run(c, 'INSERT INTO acct VALUES (4, 40)');
  await tm('rollbackTransaction', 'sp1');
  await tm('commitTransaction', 'outer_tx');
  check((await run(c, 'SELECT SUM(bal), @@TRANCOUNT FROM acct'))[0].join() === '50,0', 'named transaction and savepoint');

  // An error with its number; the connection goes on.
  try {
    await run(c, 'SELECT * FROM no_such_table');
    throw new Error('no error');
  } catch (e) {
    check(e.number === 208, 'error 208: ' + e.message);
  }
  check((await run(c, 'SELECT 3'))[0][0] === 3, 'connection usable after an error');

  // Cancel a long-running query (attention); the connection stays usable.
  const started = Date.now();
  const slow = run(c, "WAITFOR DELAY '00:00:30'");
  setTimeout(() => c.cancel(), 300);
  try {
    await slow;
    throw new Error('the delay was not cancelled');
  } catch (e) {
    check(e.code === 'ECANCEL', 'cancelled: ' + e.message);
  }
  check(Date.now() - started < 20000, 'cancelled well before the delay ends');
  check((await run(c, 'SELECT 4'))[0][0] === 4, 'connection usable after a cancel');
  // A request cancelled before it is sent ends its message with the IGNORE bit: the
  // server answers it, and the connection goes on.
  const early = run(c, 'SELECT 5');
  c.cancel();
  try {
    await early;
    throw new Error('the request was not cancelled');
  } catch (e) {
    check(e.code === 'ECANCEL', 'cancelled before sending: ' + e.message);
  }
  check((await run(c, 'SELECT 6'))[0][0] === 6, 'connection usable after a cancel before sending');

  // Bulk load 10,000 rows.
  await run(c, 'CREATE TABLE loaded (id int NOT NULL PRIMARY KEY, name nvarchar(30), amount decimal(10,2), at datetime2(0))');
  const loaded = await new Promise((resolve, reject) => {
    const bulk = c.newBulkLoad('loaded', (err, rowCount) => (err ? reject(err) : resolve(rowCount)));
    bulk.addColumn('id', TYPES.Int, { nullable: false });
    bulk.addColumn('name', TYPES.NVarChar, { length: 30, nullable: true });
    bulk.addColumn('amount', TYPES.Decimal, { precision: 10, scale: 2, nullable: true });
    bulk.addColumn('at', TYPES.DateTime2, { scale: 0, nullable: true });
    const data = [];
    for (let i = 1; i <= 10000; i++) {
      data.push({ id: i, name: 'row ' + i, amount: i + 0.25, at: new Date(Date.UTC(2024, 0, (i % 28) + 1, 10)) });
    }
    c.execBulkLoad(bulk, data);
  });
  check(loaded === 10000, 'bulk load reports 10,000 rows');
  const [[count, total]] = await run(c, 'SELECT COUNT(*), SUM(amount) FROM loaded');
  check(count === 10000 && Number(total) === 50007500, 'bulk-loaded rows are all there');

  // Bulk load into text, ntext and image columns: their COLMETADATA carries the table's
  // name, which tedious writes as one US_VARCHAR.
  await run(c, 'CREATE TABLE blobs (id int NOT NULL PRIMARY KEY, t text, n ntext, i image)');
  const blobs = await new Promise((resolve, reject) => {
    const bulk = c.newBulkLoad('blobs', (err, rowCount) => (err ? reject(err) : resolve(rowCount)));
    bulk.addColumn('id', TYPES.Int, { nullable: false });
    bulk.addColumn('t', TYPES.Text, { nullable: true });
    bulk.addColumn('n', TYPES.NText, { nullable: true });
    bulk.addColumn('i', TYPES.Image, { nullable: true });
    c.execBulkLoad(bulk, [
      { id: 1, t: 'text', n: 'ntext \u2713', i: Buffer.from([1, 2, 3]) },
      { id: 2, t: null, n: null, i: null },
    ]);
  });
  check(blobs === 2, 'bulk load of text columns reports 2 rows');
  const [[t, n, i]] = await run(c, 'SELECT CAST(t AS varchar(10)), CAST(n AS nvarchar(10)), DATALENGTH(i) FROM blobs WHERE id = 1');
  check(t === 'text' && n === 'ntext \u2713' && Number(i) === 3, `text, ntext and image values: ${t}, ${n}, ${i}`);

  c.close();
  console.log('tedious scenario: all checks passed');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
