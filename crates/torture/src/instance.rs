//! An instance in this process: the engine on a data directory, one session in master,
//! batches run to a collecting sink, and what the databases hold read back.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session};

use crate::workload::{Rows, State};

pub struct Instance {
    engine: Arc<Engine>,
    session: Option<Session>,
}

/// A batch's errors, as `Msg number: text` lines.
fn errors(out: &Collected) -> Option<String> {
    let errors = out.errors();
    (!errors.is_empty())
        .then(|| errors.iter().map(|e| format!("Msg {}: {}", e.number, e.message)).collect::<Vec<_>>().join("; "))
}

impl Instance {
    /// Opens (recovering) the instance on `dir`, with XACT_ABORT on. Engine threads are
    /// off: the campaign's operations come only from its batches, so a seed replays them
    /// exactly.
    pub fn open(dir: &Path) -> Result<Instance, String> {
        let mut config = EngineConfig::new(dir);
        config.pool_bytes = 16 << 20;
        config.background = false;
        let engine = Engine::open(config).map_err(|e| format!("the engine does not open: {e}"))?;
        let shared =
            tessera_sql::start_instance(engine.clone()).map_err(|e| format!("the instance does not start: {e:?}"))?;
        let session = Session::new(shared, "sa", "master").map_err(|e| format!("no session: {e:?}"))?;
        let mut instance = Instance { engine, session: Some(session) };
        // A step's transaction is all or nothing even when a statement in it fails (a full
        // log, an I/O error): without this a batch goes on after such an error and
        // commits the rest, as T-SQL does.
        instance.run("SET XACT_ABORT ON")?;
        Ok(instance)
    }

    /// Runs `sql`: the errors it got (number and text), if any.
    pub fn errors_of(&mut self, sql: &str) -> Option<Vec<(i32, String)>> {
        let mut out = Collected::default();
        self.session.as_mut().expect("open").execute(sql, &mut out);
        let errors = out.errors();
        (!errors.is_empty()).then(|| errors.iter().map(|e| (e.number, e.message.clone())).collect())
    }

    /// Runs `sql`: its result sets, or its errors.
    pub fn run(&mut self, sql: &str) -> Result<Collected, String> {
        let mut out = Collected::default();
        self.session.as_mut().expect("open").execute(sql, &mut out);
        match errors(&out) {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// The user tables of `db` with their rows (columns id, k, v), or why they cannot be
    /// read.
    fn tables(&mut self, db: &str) -> Result<BTreeMap<String, Rows>, String> {
        let names = self.run(&format!("SELECT name FROM {db}.sys.tables ORDER BY name"))?;
        let mut tables = BTreeMap::new();
        for row in &names.result_sets[0].1 {
            let Value::Str(name) = &row[0] else { return Err(format!("a table name {:?}", row[0])) };
            let out = self.run(&format!("SELECT id, k, v FROM {db}.dbo.[{name}] ORDER BY id"))?;
            let mut rows = Rows::new();
            for r in &out.result_sets[0].1 {
                let (Value::Int(id), Value::Int(k)) = (&r[0], &r[1]) else {
                    return Err(format!("{db}.{name}: a row {r:?}"));
                };
                let v = match &r[2] {
                    Value::Null => None,
                    Value::Str(s) => Some(s.clone()),
                    other => return Err(format!("{db}.{name}: a value {other:?}")),
                };
                if rows.insert(*id, (*k, v)).is_some() {
                    return Err(format!("{db}.{name}: id {id} twice"));
                }
            }
            tables.insert(name.to_string(), rows);
        }
        Ok(tables)
    }

    /// What the user databases hold; a database that cannot be read (RESTORING, say) is
    /// left out and named in the second list.
    pub fn state(&mut self) -> Result<(State, Vec<String>), String> {
        let names = self.run(
            "SELECT name FROM sys.databases WHERE name NOT IN ('master', 'tempdb', 'model', 'msdb') ORDER BY name",
        )?;
        let mut state = State::new();
        let mut unreadable = Vec::new();
        for row in &names.result_sets[0].1 {
            let Value::Str(db) = &row[0] else { return Err(format!("a database name {:?}", row[0])) };
            match self.tables(db) {
                Ok(tables) => {
                    state.insert(db.to_string(), tables);
                }
                Err(e) => unreadable.push(format!("{db} ({e})")),
            }
        }
        Ok((state, unreadable))
    }

    /// DBCC CHECKDB of `db`: its errors, if any.
    pub fn check(&mut self, db: &str) -> Result<(), String> {
        self.run(&format!("DBCC CHECKDB ({db}) WITH NO_INFOMSGS")).map(|_| ())
    }

    /// Closes the session and the engine (whose files may already refuse every write).
    pub fn close(mut self) {
        if let Some(mut s) = self.session.take() {
            s.close();
        }
        let _ = self.engine.shutdown();
    }
}
