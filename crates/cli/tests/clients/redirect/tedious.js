// tedious through a gateway: connects (argv: node_modules dir, port, password, database,
// stop file or "-", and for TDS 8.0 strict the TLS server name), prints db_name() and
// whether the server sees the connection encrypted, waits for the stop file (the test
// kills the gateway meanwhile), then prints the value in dbo.a on the same connection.
const [modules, port, password, database, stop, serverName] = process.argv.slice(2);
const fs = require('fs');
const { Connection, Request } = require(modules + '/tedious');

function query(c, sql) {
  return new Promise((resolve, reject) => {
    const rows = [];
    const r = new Request(sql, (err) => (err ? reject(err) : resolve(rows)));
    r.on('row', (cols) => rows.push(cols.map((c) => c.value)));
    c.execSql(r);
  });
}

(async () => {
  const c = new Connection({
    server: '127.0.0.1',
    authentication: { type: 'default', options: { userName: 'sa', password } },
    options: serverName
      ? { port: Number(port), database, encrypt: 'strict', serverName, connectTimeout: 30000 }
      : { port: Number(port), database, encrypt: false, connectTimeout: 30000 },
  });
  await new Promise((resolve, reject) => {
    c.on('connect', (err) => (err ? reject(err) : resolve()));
    c.connect();
  });
  console.log((await query(c, 'select db_name()'))[0][0]);
  const sql = 'select encrypt_option from sys.dm_exec_connections where session_id = @@spid';
  console.log((await query(c, sql))[0][0]);
  while (stop !== '-' && !fs.existsSync(stop)) await new Promise((r) => setTimeout(r, 20));
  console.log((await query(c, 'select v from dbo.a'))[0][0]);
  c.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
