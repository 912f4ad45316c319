// tedious through a redirecting gateway: connects (argv: node_modules dir, port,
// password, database, stop file), prints db_name(), waits for the stop file (the test
// kills the gateway meanwhile), then prints the value in dbo.a on the same connection.
const [modules, port, password, database, stop] = process.argv.slice(2);
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
    options: { port: Number(port), database, encrypt: false, connectTimeout: 30000 },
  });
  await new Promise((resolve, reject) => {
    c.on('connect', (err) => (err ? reject(err) : resolve()));
    c.connect();
  });
  console.log((await query(c, 'select db_name()'))[0][0]);
  while (!fs.existsSync(stop)) await new Promise((r) => setTimeout(r, 20));
  console.log((await query(c, 'select v from dbo.a'))[0][0]);
  c.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
