//! The campaigns' workload: T-SQL batches chosen from a seed, each with the state the
//! databases must hold once it has succeeded (the model).
//!
//! Two databases, `ta` (FULL recovery) and `tb` (SIMPLE), each with a table `acct` of 100
//! accounts and a table `kv`; every table has the columns `id int` (the key), `k int` and
//! `v varchar(max)`, so one model type holds them all. The steps cover what a power loss
//! must not break: inserts that split pages, updates that change row lengths, deletes
//! that empty pages, transfers within a database and across the two (one transaction),
//! transactions rolled back, checkpoints, log backups (log truncation), large values,
//! minimally logged SELECT … INTO, DDL inside transactions, index creation, and a full
//! backup of `ta` restored as `tr`.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A table's rows: `id → (k, v)`.
pub type Rows = BTreeMap<i64, (i64, Option<Arc<str>>)>;
/// Every database's tables: database → table → rows.
pub type State = BTreeMap<String, BTreeMap<String, Rows>>;

use tessera_io::faults::Rng;

/// A number in `[lo, hi]`.
fn between(rng: &mut Rng, lo: i64, hi: i64) -> i64 {
    lo + rng.below((hi - lo + 1) as u64) as i64
}

/// What a step does, for reports and for what a power loss during it may leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Setup,
    Insert,
    Update,
    Delete,
    Transfer,
    CrossDatabaseTransfer,
    RolledBack,
    Checkpoint,
    LogBackup,
    LargeValue,
    SelectInto,
    Ddl,
    Index,
    Backup,
    Restore,
}

/// One batch and the state once it has succeeded.
pub struct Step {
    pub kind: Kind,
    pub sql: String,
    pub after: State,
}

const ACCOUNTS: i64 = 100;
const BALANCE: i64 = 1000;
/// The databases the workload writes, with their recovery models.
pub const DATABASES: [(&str, &str); 2] = [("ta", "FULL"), ("tb", "SIMPLE")];
/// Where `ta`'s full backups are restored.
pub const RESTORED: &str = "tr";

/// The steps of one seed, made one at a time as the run goes.
pub struct Workload {
    rng: Rng,
    state: State,
    /// Where backups go (outside the data directory), and the data directory.
    media: String,
    data: String,
    /// The setup's batches, each with the state after it.
    setup: std::vec::IntoIter<(String, State)>,
    /// Tables made by SELECT … INTO and by DDL steps, by database, oldest first.
    made: BTreeMap<String, Vec<String>>,
    next_table: u32,
    index_on: BTreeMap<String, bool>,
    /// `ta`'s tables at its last full backup.
    backed_up: Option<BTreeMap<String, Rows>>,
    backups: u32,
    steps_left: u32,
}

fn text(s: &str) -> Option<Arc<str>> {
    Some(Arc::from(s))
}

/// A value of `len` characters from the seed: letters, so it needs no escaping.
fn value(rng: &mut Rng, len: usize) -> String {
    let first = rng.below(26) as usize;
    (0..len).map(|i| (b'a' + ((first + i) % 26) as u8) as char).collect()
}

impl Workload {
    /// `steps` random steps after the setup; backups go to `media`, restored files to `data`.
    pub fn new(seed: u64, steps: u32, media: &std::path::Path, data: &std::path::Path) -> Workload {
        let mut state = State::new();
        let mut setup = Vec::new();
        for (db, model) in DATABASES {
            state.insert(db.to_string(), BTreeMap::new());
            setup.push((format!("CREATE DATABASE {db}; ALTER DATABASE {db} SET RECOVERY {model}"), state.clone()));
            let tables = state.get_mut(db).unwrap();
            tables.insert("acct".to_string(), Rows::new());
            tables.insert("kv".to_string(), Rows::new());
            setup.push((
                format!(
                    "USE {db}; BEGIN TRANSACTION; \
                     CREATE TABLE acct (id int PRIMARY KEY, k int NOT NULL, v varchar(max)); \
                     CREATE TABLE kv (id int PRIMARY KEY, k int NOT NULL, v varchar(max)); COMMIT"
                ),
                state.clone(),
            ));
            let rows: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {BALANCE}, 'account {i}')")).collect();
            let acct = state.get_mut(db).unwrap().get_mut("acct").unwrap();
            for i in 0..ACCOUNTS {
                acct.insert(i, (BALANCE, text(&format!("account {i}"))));
            }
            setup.push((format!("INSERT INTO {db}.dbo.acct (id, k, v) VALUES {}", rows.join(", ")), state.clone()));
        }
        Workload {
            rng: Rng::new(seed),
            state,
            media: media.display().to_string(),
            data: data.display().to_string(),
            setup: setup.into_iter(),
            made: BTreeMap::new(),
            next_table: 0,
            index_on: BTreeMap::new(),
            backed_up: None,
            backups: 0,
            steps_left: steps,
        }
    }

    /// The state before any step: no user database.
    pub fn initial() -> State {
        State::new()
    }

    fn db(&mut self) -> String {
        DATABASES[self.rng.below(2) as usize].0.to_string()
    }

    fn table(&mut self, db: &str, name: &str) -> &mut Rows {
        self.state.get_mut(db).and_then(|t| t.get_mut(name)).expect("table in the model")
    }

    /// An id not in `db.kv`.
    fn fresh_id(&mut self, db: &str) -> i64 {
        loop {
            let id = between(&mut self.rng, 0, 20_000);
            if !self.table(db, "kv").contains_key(&id) {
                return id;
            }
        }
    }

    fn insert(&mut self) -> (Kind, String) {
        let db = self.db();
        let n = between(&mut self.rng, 1, 60);
        let mut values = Vec::new();
        for _ in 0..n {
            let id = self.fresh_id(&db);
            let len = between(&mut self.rng, 0, 400) as usize;
            let v = value(&mut self.rng, len);
            let k = id * 7 % 1000;
            values.push(format!("({id}, {k}, '{v}')"));
            self.table(&db, "kv").insert(id, (k, text(&v)));
        }
        (Kind::Insert, format!("INSERT INTO {db}.dbo.kv (id, k, v) VALUES {}", values.join(", ")))
    }

    fn update(&mut self) -> (Kind, String) {
        let db = self.db();
        let lo = between(&mut self.rng, 0, 20_000);
        let hi = lo + between(&mut self.rng, 0, 1500);
        let len = between(&mut self.rng, 0, 600) as usize;
        let v = value(&mut self.rng, len);
        for (_, row) in self.table(&db, "kv").range_mut(lo..=hi) {
            row.0 += 1;
            row.1 = text(&v);
        }
        (Kind::Update, format!("UPDATE {db}.dbo.kv SET k = k + 1, v = '{v}' WHERE id BETWEEN {lo} AND {hi}"))
    }

    fn delete(&mut self) -> (Kind, String) {
        let db = self.db();
        let lo = between(&mut self.rng, 0, 20_000);
        let hi = lo + between(&mut self.rng, 0, 2500);
        let rows = self.table(&db, "kv");
        let gone: Vec<i64> = rows.range(lo..=hi).map(|(id, _)| *id).collect();
        for id in gone {
            rows.remove(&id);
        }
        (Kind::Delete, format!("DELETE FROM {db}.dbo.kv WHERE id BETWEEN {lo} AND {hi}"))
    }

    /// Moves `amount` from account `from` of `a` to account `to` of `b`.
    fn transfer_between(&mut self, a: &str, from: i64, b: &str, to: i64, amount: i64) -> String {
        self.table(a, "acct").get_mut(&from).expect("account").0 -= amount;
        self.table(b, "acct").get_mut(&to).expect("account").0 += amount;
        format!(
            "BEGIN TRANSACTION; UPDATE {a}.dbo.acct SET k = k - {amount} WHERE id = {from}; \
             UPDATE {b}.dbo.acct SET k = k + {amount} WHERE id = {to}; COMMIT"
        )
    }

    fn transfer(&mut self, across: bool) -> (Kind, String) {
        let a = self.db();
        let b = if across { DATABASES.iter().map(|d| d.0).find(|d| *d != a).unwrap().to_string() } else { a.clone() };
        let (from, to, amount) = (
            between(&mut self.rng, 0, ACCOUNTS - 1),
            between(&mut self.rng, 0, ACCOUNTS - 1),
            between(&mut self.rng, 1, 50),
        );
        let sql = self.transfer_between(&a, from, &b, to, amount);
        (if across { Kind::CrossDatabaseTransfer } else { Kind::Transfer }, sql)
    }

    fn rolled_back(&mut self) -> (Kind, String) {
        let db = self.db();
        let id = self.fresh_id(&db);
        let lo = between(&mut self.rng, 0, 20_000);
        (
            Kind::RolledBack,
            format!(
                "BEGIN TRANSACTION; INSERT INTO {db}.dbo.kv (id, k, v) VALUES ({id}, 0, 'never'); \
                 DELETE FROM {db}.dbo.kv WHERE id BETWEEN {lo} AND {lo} + 500; \
                 UPDATE {db}.dbo.acct SET k = k + 1000000; ROLLBACK"
            ),
        )
    }

    fn large_value(&mut self) -> (Kind, String) {
        let db = self.db();
        let id = self.fresh_id(&db);
        let pattern = value(&mut self.rng, 13);
        let times = between(&mut self.rng, 500, 8000) as usize;
        self.table(&db, "kv").insert(id, (-1, text(&pattern.repeat(times))));
        (
            Kind::LargeValue,
            format!(
                "INSERT INTO {db}.dbo.kv (id, k, v) VALUES ({id}, -1, REPLICATE(CONVERT(varchar(max), '{pattern}'), {times}))"
            ),
        )
    }

    fn new_table(&mut self, db: &str, prefix: &str) -> String {
        self.next_table += 1;
        let name = format!("{prefix}{}", self.next_table);
        self.made.entry(db.to_string()).or_default().push(name.clone());
        name
    }

    /// Drops the oldest table made, once a database has three.
    fn drop_old(&mut self, db: &str) -> String {
        let made = self.made.entry(db.to_string()).or_default();
        if made.len() <= 3 {
            return String::new();
        }
        let old = made.remove(0);
        self.state.get_mut(db).unwrap().remove(&old);
        format!("; DROP TABLE {old}")
    }

    fn select_into(&mut self) -> (Kind, String) {
        let db = self.db();
        let lo = between(&mut self.rng, 0, 20_000);
        let hi = lo + between(&mut self.rng, 0, 8000);
        let name = self.new_table(&db, "b");
        let rows: Rows = self.table(&db, "kv").range(lo..=hi).map(|(id, r)| (*id, r.clone())).collect();
        self.state.get_mut(&db).unwrap().insert(name.clone(), rows);
        let dropped = self.drop_old(&db);
        (
            Kind::SelectInto,
            format!(
                "USE {db}; BEGIN TRANSACTION; SELECT id, k, v INTO {name} FROM kv WHERE id BETWEEN {lo} AND {hi}{dropped}; COMMIT"
            ),
        )
    }

    fn ddl(&mut self) -> (Kind, String) {
        let db = self.db();
        let name = self.new_table(&db, "d");
        let n = between(&mut self.rng, 1, 40);
        let mut rows = Rows::new();
        for i in 0..n {
            rows.insert(i, (i, text(&format!("row {i}"))));
        }
        let values: Vec<String> = (0..n).map(|i| format!("({i}, {i}, 'row {i}')")).collect();
        self.state.get_mut(&db).unwrap().insert(name.clone(), rows);
        let dropped = self.drop_old(&db);
        (
            Kind::Ddl,
            format!(
                "USE {db}; BEGIN TRANSACTION; CREATE TABLE {name} (id int PRIMARY KEY, k int NOT NULL, v varchar(max)); \
                 INSERT INTO {name} (id, k, v) VALUES {}{dropped}; COMMIT",
                values.join(", ")
            ),
        )
    }

    fn index(&mut self) -> (Kind, String) {
        let db = self.db();
        let on = self.index_on.entry(db.clone()).or_default();
        *on = !*on;
        let sql = if *on { "CREATE INDEX kv_k ON kv (k)" } else { "DROP INDEX kv_k ON kv" };
        (Kind::Index, format!("USE {db}; {sql}"))
    }

    fn backup(&mut self) -> (Kind, String) {
        if let (Some(_), 0) = (&self.backed_up, self.rng.below(2)) {
            self.state.insert(RESTORED.to_string(), self.backed_up.clone().unwrap());
            let (m, d) = (&self.media, &self.data);
            return (
                Kind::Restore,
                format!(
                    "RESTORE DATABASE {RESTORED} FROM DISK = '{m}/ta_{}.bak' WITH REPLACE, \
                     MOVE 'ta' TO '{d}/{RESTORED}.mdf', MOVE 'ta_log' TO '{d}/{RESTORED}_log.ldf'",
                    self.backups
                ),
            );
        }
        self.backups += 1;
        self.backed_up = self.state.get("ta").cloned();
        (Kind::Backup, format!("BACKUP DATABASE ta TO DISK = '{}/ta_{}.bak' WITH INIT", self.media, self.backups))
    }

    fn random_step(&mut self) -> (Kind, String) {
        match self.rng.below(100) {
            0..20 => self.insert(),
            20..30 => self.update(),
            30..36 => self.delete(),
            36..48 => self.transfer(false),
            48..56 => self.transfer(true),
            56..61 => self.rolled_back(),
            61..66 => {
                let db = self.db();
                (Kind::Checkpoint, format!("USE {db}; CHECKPOINT"))
            }
            // A log backup needs a full one first (4214).
            66..68 if self.backups > 0 => {
                (Kind::LogBackup, format!("BACKUP LOG ta TO DISK = '{}/ta_log.bak'", self.media))
            }
            66..68 => self.backup(),
            68..74 => self.large_value(),
            74..79 => self.select_into(),
            79..85 => self.ddl(),
            85..89 => self.index(),
            89..92 => self.backup(),
            _ => self.insert(),
        }
    }

    /// The bank's invariant, whatever the model says: transfers move money between
    /// accounts (within a database and across the two), so the balances of every account
    /// outside the restored copy add up to what the accounts were opened with.
    pub fn bank_balances(state: &State) -> (i64, i64) {
        let accounts = state.iter().filter(|(db, _)| *db != RESTORED).filter_map(|(_, t)| t.get("acct"));
        let (count, total) = accounts.flatten().fold((0, 0), |(n, sum), (_, r)| (n + 1, sum + r.0));
        (total, count * BALANCE)
    }
}

impl Iterator for Workload {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if let Some((sql, after)) = self.setup.next() {
            return Some(Step { kind: Kind::Setup, sql, after });
        }
        if self.steps_left == 0 {
            return None;
        }
        self.steps_left -= 1;
        let (kind, sql) = self.random_step();
        Some(Step { kind, sql, after: self.state.clone() })
    }
}
