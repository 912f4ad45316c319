// Connection resets (TDS RESETCONNECTION, as a pool sends when it hands a connection out
// again) through tedious's connection.reset(), against a running tessera server:
// - a contained database user's connection stays that user after a reset, and holds no
//   server permission, even when it is named like the sysadmin login;
// - a connection that took another security context (sp_setapprole, EXECUTE AS) is not
//   reset under it: the server answers 18059 and ends the connection;
// - a transaction left open is rolled back, and the client is told (ENVCHANGE 10).
//
// Usage: node reset.js HOST PORT PASSWORD. Exits non-zero on the first failure.
'use strict';

const { Connection, Request } = require('tedious');

const [host, port, password] = process.argv.slice(2);
const TENANT_PASSWORD = 'Tenant-Pass-7';

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
  console.log('ok: ' + what);
}

function connect(userName, pass, database) {
  const config = {
    server: host,
    authentication: { type: 'default', options: { userName, password: pass } },
    options: { port: Number(port), database, encrypt: false, connectTimeout: 30000, requestTimeout: 60000 },
  };
  return new Promise((resolve, reject) => {
    const c = new Connection(config);
    c.on('error', () => {});
    c.connect((err) => (err ? reject(err) : resolve(c)));
  });
}

function run(c, sql) {
  return new Promise((resolve, reject) => {
    const rows = [];
    const req = new Request(sql, (err) => (err ? reject(err) : resolve(rows)));
    req.on('row', (cols) => rows.push(cols.map((col) => col.value)));
    c.execSqlBatch(req);
  });
}

function reset(c) {
  return new Promise((resolve) => c.reset((err) => resolve(err)));
}

function ended(c) {
  return new Promise((resolve) => {
    if (c.closed) {
      resolve();
    } else {
      c.on('end', resolve);
    }
  });
}

async function one(c, sql) {
  const rows = await run(c, sql);
  return rows[0][0];
}

async function main() {
  const sa = await connect('sa', password, 'master');
  await run(sa, "EXEC sp_configure 'contained database authentication', 1; RECONFIGURE");
  await run(sa, 'CREATE DATABASE tenant; ALTER DATABASE tenant SET CONTAINMENT = PARTIAL');
  await run(sa, `USE tenant; CREATE USER sa WITH PASSWORD = '${TENANT_PASSWORD}'; CREATE TABLE t (a int)`);
  await run(sa, `USE tenant; CREATE APPLICATION ROLE app WITH PASSWORD = '${TENANT_PASSWORD}'`);

  // The tenant's own "sa": a contained user, before and after a reset.
  const contained = await connect('sa', TENANT_PASSWORD, 'tenant');
  check((await one(contained, 'SELECT USER_NAME()')) === 'sa', 'the contained user logs in');
  check((await one(contained, "SELECT IS_SRVROLEMEMBER('sysadmin')")) === 0, 'it is no sysadmin');
  check((await reset(contained)) === undefined, 'its connection resets');
  check((await one(contained, 'SELECT DB_NAME()')) === 'tenant', 'after the reset: its database');
  check((await one(contained, "SELECT IS_SRVROLEMEMBER('sysadmin')")) === 0, 'after the reset: still no sysadmin');
  check((await one(contained, 'SELECT USER_NAME()')) === 'sa', 'after the reset: still the contained user');
  try {
    await run(contained, 'CREATE DATABASE stolen');
    throw new Error('a contained user created a database');
  } catch (e) {
    check(/CREATE DATABASE permission denied/.test(e.message), 'after the reset: no server permission: ' + e.message);
  }
  contained.close();

  // A reset under an application role ends the connection with 18059.
  // (The server's sa logs in to master: in the tenant's database, its contained "sa" is
  // the one asked for a password.)
  const withRole = await connect('sa', password, 'master');
  await run(withRole, `USE tenant; EXEC sp_setapprole 'app', '${TENANT_PASSWORD}'`);
  check((await one(withRole, 'SELECT USER_NAME()')) === 'app', 'the application role is set');
  const closing = ended(withRole);
  const err = await reset(withRole);
  check(err && /assumed a new security context/.test(err.message), 'a reset under the role is refused: ' + (err && err.message));
  await closing;
  check(true, 'and the connection ends');

  // So does a reset inside EXECUTE AS.
  const impersonating = await connect('sa', password, 'master');
  await run(impersonating, 'CREATE LOGIN plain WITH PASSWORD = \'Plain-Pass-9\'; EXECUTE AS LOGIN = \'plain\'');
  const closing2 = ended(impersonating);
  const err2 = await reset(impersonating);
  check(err2 && /assumed a new security context/.test(err2.message), 'a reset inside EXECUTE AS is refused');
  await closing2;

  // A plain connection resets as before.
  check((await reset(sa)) === undefined, "sa's own connection resets");
  check((await one(sa, 'SELECT DB_NAME()')) === 'master', 'back in its login database');

  // A reset rolls back a transaction left open, and says so (ENVCHANGE 10): the client's
  // idea of its transaction ends with it.
  await new Promise((resolve, reject) => sa.beginTransaction((err) => (err ? reject(err) : resolve())));
  check(sa.inTransaction === true, 'a transaction is open');
  check((await reset(sa)) === undefined, 'the connection resets');
  check(sa.inTransaction === false, 'the client knows its transaction was rolled back');
  check((await one(sa, 'SELECT @@TRANCOUNT')) === 0, 'and none is open');
  sa.close();
  console.log('all checks passed');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
