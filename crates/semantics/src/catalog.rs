//! The SQL catalog of one database: tables (columns, indexes, constraints) and modules
//! (views, procedures, functions).
//!
//! Definitions are stored as JSON rows in the storage tree `sys$objects` (key: object id
//! then chunk number, both big-endian: a long definition is split in chunks; written and
//! read by `tessera_execution::catalog_store`, docs/FORMAT.md) and cached in memory as an immutable [`Catalog`] snapshot; DDL builds a new
//! snapshot, writes the changed row in its own transaction and swaps the snapshot in. Every
//! snapshot has a version.
//!
//! Every object also has a *fingerprint*: a hash of its definition without what differs
//! between databases built from one script (object ids, storage tree names, dates,
//! generated constraint names). A compiled plan records the fingerprint of every name it
//! looked up ([`ObjectDep`]), and any database whose objects under those names have the
//! same fingerprints runs the same plan.
//!
//! Each table owns B+trees in storage, named `#<object id>.<index id>.<version>`: index 0 or 1 holds
//! the rows (0 = heap keyed by a hidden row number, 1 = clustered index), higher ids are
//! nonclustered indexes mapping index key → clustered key.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::Arc;
use tessera_errors::msg;

use serde::{Deserialize, Serialize};

use crate::types::{self, SqlType};

pub mod properties;
pub use properties::{Part, Property};
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{ReferentialAction, TypeArg, TypeName};

/// Storage name of the tree holding catalog rows.
/// Error 911: no database of that name.
pub fn database_not_found(name: &str) -> SqlError {
    msg::DATABASE_NOT_FOUND.with(&[&name])
}

pub const OBJECTS_TREE: &str = "sys$objects";
/// The first object id handed out (SQL Server's user objects have large ids too).
const FIRST_OBJECT_ID: i32 = 100_000;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    #[serde(with = "type_text")]
    pub ty: SqlType,
    pub nullable: bool,
    /// `IDENTITY(seed, increment)`
    pub identity: Option<(i64, i64)>,
    /// `DEFAULT` constraint: its name and expression text.
    pub default: Option<NamedExpr>,
    /// A computed column (`AS expr`): its definition. Its value is computed whenever the
    /// row is written and stored with it, PERSISTED or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed: Option<Computed>,
}

/// A computed column's definition as SQL Server keeps it (`([price]*[qty])`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Computed {
    pub text: String,
    pub persisted: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NamedExpr {
    pub name: String,
    pub text: String,
    /// The column a column-level CHECK constraint was declared on (named in 547 errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Index {
    /// 0 = heap, 1 = clustered, ≥ 2 = nonclustered (as sys.indexes).
    pub id: u32,
    pub name: String,
    /// Storage tree name.
    pub tree: String,
    /// Key columns (column positions) and whether each is descending.
    pub columns: Vec<(usize, bool)>,
    pub unique: bool,
    pub primary_key: bool,
    pub unique_constraint: bool,
    pub include: Vec<usize>,
    /// A filtered index's `WHERE` predicate as stored (`([email] IS NOT NULL)`): only the
    /// rows it holds true for have entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// How it has been used since its database opened (not in the fingerprint).
    #[serde(skip)]
    pub usage: Arc<IndexUsage>,
}

/// How an index has been used since its database opened, as sys.dm_db_index_usage_stats
/// and sys.dm_db_index_operational_stats show it: counted by the execution layer, kept in
/// memory only (a database that closes loses them, as SQL Server's do), and shared by every
/// copy of the definition, so an ALTER of the table keeps them while a new index starts
/// from zero and a dropped one takes them with it. Times are the execution layer's clock
/// readings, 0 for never.
#[derive(Default)]
pub struct IndexUsage {
    /// Runs of statements whose plans sought the index, and when the last one did.
    pub seeks: AtomicU64,
    pub last_seek: AtomicI64,
    /// Rows read by a single-row retrieval: point lookups, and the key lookups of reads
    /// through a nonclustered index.
    pub singleton_lookups: AtomicU64,
    /// Runs of statements whose plans scanned the whole index; of those that looked rows
    /// up in it (a clustered index or heap read through a nonclustered index); of those
    /// that maintained it (INSERT, UPDATE, DELETE, MERGE).
    pub scans: AtomicU64,
    pub last_scan: AtomicI64,
    pub lookups: AtomicU64,
    pub last_lookup: AtomicI64,
    pub updates: AtomicU64,
    pub last_update: AtomicI64,
    /// Range and whole scans started, each time one opens.
    pub range_scans: AtomicU64,
    /// Entries inserted, deleted and updated in place by data changes.
    pub leaf_inserts: AtomicU64,
    pub leaf_deletes: AtomicU64,
    pub leaf_updates: AtomicU64,
}

impl std::fmt::Debug for IndexUsage {
    /// Nothing that changes as the index is used: the optimizer compares expressions (which
    /// may hold plans, and so definitions) by their Debug text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IndexUsage")
    }
}

impl Index {
    pub fn is_clustered(&self) -> bool {
        self.id == 1
    }
    pub fn is_heap(&self) -> bool {
        self.id == 0
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ForeignKey {
    pub name: String,
    pub columns: Vec<usize>,
    pub ref_table: i32,
    pub ref_columns: Vec<usize>,
    pub on_delete: Action,
    pub on_update: Action,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    NoAction,
    Cascade,
    SetNull,
    SetDefault,
}

impl From<ReferentialAction> for Action {
    fn from(a: ReferentialAction) -> Action {
        match a {
            ReferentialAction::NoAction => Action::NoAction,
            ReferentialAction::Cascade => Action::Cascade,
            ReferentialAction::SetNull => Action::SetNull,
            ReferentialAction::SetDefault => Action::SetDefault,
        }
    }
}

/// Counters kept in memory only: recomputed from the data when the table is first used.
#[derive(Debug, Default)]
pub struct TableCounters {
    /// The last identity value handed out; `i64::MIN` = not yet loaded.
    pub identity: AtomicI64,
    /// The last hidden row number (heaps and non-unique clustered indexes); 0 = not loaded.
    pub uniquifier: AtomicU64,
    pub loaded: std::sync::Mutex<bool>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Table {
    pub id: i32,
    pub schema: String,
    pub name: String,
    pub columns: Vec<Column>,
    /// `indexes[0]` holds the rows: the heap (id 0) or the clustered index (id 1).
    pub indexes: Vec<Index>,
    pub checks: Vec<NamedExpr>,
    pub foreign_keys: Vec<ForeignKey>,
    /// Seconds since the Unix epoch (sys.objects.create_date).
    pub created: i64,
    pub modified: i64,
    /// `sp_tableoption 'large value types out of row'`: every non-empty `(max)` value is
    /// stored off the row, whatever its length (off: in the row up to 8,000 bytes).
    #[serde(default)]
    pub large_values_out_of_row: bool,
    /// Its extended properties and its parts' (not in the fingerprint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
    #[serde(skip)]
    pub counters: Arc<TableCounters>,
    /// The stored row's layout, built by the execution layer at first use.
    #[serde(skip)]
    pub layout: LayoutCache,
}

/// What the storage side derives from a table's definition (the layout of its stored
/// rows) and keeps with it, built at first use: opaque here, the execution layer says
/// what it holds and when it is stale. A copy of the definition (the start of every
/// ALTER) starts empty.
#[derive(Default)]
pub struct LayoutCache(std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>);

impl LayoutCache {
    /// What was kept, if it is a `T`.
    pub fn get<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.0.get()?.clone().downcast().ok()
    }

    /// Keeps `value` if nothing was kept yet; what is kept now, if it is a `T`.
    pub fn keep<T: std::any::Any + Send + Sync>(&self, value: Arc<T>) -> Option<Arc<T>> {
        self.0.get_or_init(|| value).clone().downcast().ok()
    }
}

impl Clone for LayoutCache {
    fn clone(&self) -> Self {
        LayoutCache::default()
    }
}

impl std::fmt::Debug for LayoutCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "LayoutCache(built)" } else { "LayoutCache(empty)" })
    }
}

impl Table {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The columns (and directions) whose order a scan of index `index` delivers its rows
    /// in: the index's key columns, then, for a non-unique nonclustered index (whose
    /// entries end with the row's clustered key), the clustered key's columns it lacks.
    pub fn key_order(&self, index: usize) -> std::borrow::Cow<'_, [(usize, bool)]> {
        let ix = &self.indexes[index];
        let rows = &self.indexes[0];
        if index == 0 || ix.unique || rows.is_heap() {
            return std::borrow::Cow::Borrowed(&ix.columns);
        }
        let mut columns = ix.columns.clone();
        for &(c, descending) in &rows.columns {
            if !columns.iter().any(|&(k, _)| k == c) {
                columns.push((c, descending));
            }
        }
        std::borrow::Cow::Owned(columns)
    }

    pub fn rows_index(&self) -> &Index {
        &self.indexes[0]
    }

    /// Whether the row key carries a hidden row number after the key columns.
    pub fn has_uniquifier(&self) -> bool {
        !self.indexes[0].unique
    }

    pub fn identity_column(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.identity.is_some())
    }

    pub fn primary_key(&self) -> Option<&Index> {
        self.indexes.iter().find(|i| i.primary_key)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModuleKind {
    View,
    Procedure,
    ScalarFunction,
    TableFunction,
    /// A DML trigger: its table is the module's `parent`.
    Trigger,
    /// A multi-statement table-valued function (`RETURNS @t TABLE (…) AS BEGIN … END`).
    MultiStatementFunction,
    /// A synonym: another name for the object its `CREATE SYNONYM … FOR` names.
    Synonym,
    /// A table type (`CREATE TYPE … AS TABLE`): the columns of the table variables and
    /// table-valued parameters declared of it.
    TableType,
}

impl ModuleKind {
    /// sys.objects.type
    pub fn type_code(self) -> &'static str {
        match self {
            ModuleKind::View => "V",
            ModuleKind::Procedure => "P",
            ModuleKind::ScalarFunction => "FN",
            ModuleKind::TableFunction => "IF",
            ModuleKind::Trigger => "TR",
            ModuleKind::MultiStatementFunction => "TF",
            ModuleKind::Synonym => "SN",
            ModuleKind::TableType => "TT",
        }
    }

    /// sys.objects.type_desc
    pub fn type_desc(self) -> &'static str {
        match self {
            ModuleKind::View => "VIEW",
            ModuleKind::Procedure => "SQL_STORED_PROCEDURE",
            ModuleKind::ScalarFunction => "SQL_SCALAR_FUNCTION",
            ModuleKind::TableFunction => "SQL_INLINE_TABLE_VALUED_FUNCTION",
            ModuleKind::Trigger => "SQL_TRIGGER",
            ModuleKind::MultiStatementFunction => "SQL_TABLE_VALUED_FUNCTION",
            ModuleKind::Synonym => "SYNONYM",
            ModuleKind::TableType => "TYPE_TABLE",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Module {
    pub id: i32,
    pub schema: String,
    pub name: String,
    pub kind: ModuleKind,
    /// The CREATE statement as written.
    pub text: String,
    pub created: i64,
    pub modified: i64,
    /// The database user who created or last altered it (`EXECUTE AS SELF` runs as
    /// this user); `None` in definitions from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub altered_by: Option<i32>,
    /// Its extended properties and its parameters' (an ALTER keeps them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
    /// A trigger's table (its object id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<i32>,
    /// A trigger turned off by DISABLE TRIGGER.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// A trigger that runs instead of the data change that fires it (INSTEAD OF), on a
    /// table or a view; else one that runs after it (AFTER / FOR), on a table.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub instead_of: bool,
}

/// A sequence (`CREATE SEQUENCE`): its definition. The values it has handed out are kept
/// apart, in storage and in the server's memory (`tessera_execution::sequences`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sequence {
    pub id: i32,
    pub schema: String,
    pub name: String,
    /// An integer type, or decimal/numeric with scale 0.
    #[serde(with = "type_text")]
    pub ty: SqlType,
    pub start: i128,
    pub increment: i128,
    pub min: i128,
    pub max: i128,
    pub cycle: bool,
    /// `CACHE n`: how many values one write to storage reserves (None: `NO CACHE`).
    pub cache: Option<u32>,
    /// How many times `ALTER SEQUENCE … RESTART` restarted it, and the value the last
    /// restart set (the start value before any).
    pub restarts: u32,
    pub restart_at: i128,
    pub created: i64,
    pub modified: i64,
    /// Its extended properties (not in the fingerprint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Object {
    Table(Arc<Table>),
    Module(Arc<Module>),
    Sequence(Arc<Sequence>),
}

impl Object {
    pub fn id(&self) -> i32 {
        match self {
            Object::Table(t) => t.id,
            Object::Module(m) => m.id,
            Object::Sequence(s) => s.id,
        }
    }
    pub fn schema(&self) -> &str {
        match self {
            Object::Table(t) => &t.schema,
            Object::Module(m) => &m.schema,
            Object::Sequence(s) => &s.schema,
        }
    }
    pub fn name(&self) -> &str {
        match self {
            Object::Table(t) => &t.name,
            Object::Module(m) => &m.name,
            Object::Sequence(s) => &s.name,
        }
    }
}

impl Table {
    /// The definition's fingerprint (see the module documentation).
    fn fingerprint(&self) -> u64 {
        let mut t = self.clone();
        t.id = 0;
        t.created = 0;
        t.modified = 0;
        t.properties.clear();
        for c in &mut t.columns {
            if let Some(d) = &mut c.default {
                d.name.clear();
            }
        }
        for ix in &mut t.indexes {
            ix.tree.clear();
            if ix.primary_key || ix.unique_constraint {
                ix.name.clear();
            }
        }
        for c in &mut t.checks {
            c.name.clear();
        }
        for fk in &mut t.foreign_keys {
            fk.name.clear();
            fk.ref_table = 0;
        }
        let json = serde_json::to_vec(&t).expect("a table serialises");
        hash_bytes(&json)
    }
}

impl Module {
    fn fingerprint(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.kind.type_code().hash(&mut h);
        self.text.hash(&mut h);
        h.finish()
    }
}

impl Sequence {
    /// Its options and type (a plan's NEXT VALUE FOR carries them), not its id or dates.
    fn fingerprint(&self) -> u64 {
        let s = Sequence { id: 0, created: 0, modified: 0, properties: Vec::new(), ..self.clone() };
        hash_bytes(&serde_json::to_vec(&s).expect("a sequence serialises"))
    }
}

impl Object {
    pub fn fingerprint(&self) -> u64 {
        match self {
            Object::Table(t) => t.fingerprint(),
            Object::Module(m) => m.fingerprint(),
            Object::Sequence(s) => s.fingerprint(),
        }
    }
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Whether two definitions of a table store and index their rows alike: the columns'
/// types and the indexes' keys, positions a plan bakes in.
fn same_layout(a: &Table, b: &Table) -> bool {
    a.columns.len() == b.columns.len()
        && a.columns.iter().zip(&b.columns).all(|(x, y)| x.ty == y.ty && x.nullable == y.nullable)
        && a.indexes.len() == b.indexes.len()
        && a.indexes
            .iter()
            .zip(&b.indexes)
            .all(|(x, y)| x.id == y.id && x.columns == y.columns && x.unique == y.unique && x.include == y.include)
}

/// The database a compiled plan's reference points into: the one the plan runs in (a
/// name without a database part), or one the statement names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbRef {
    Current,
    Named(String),
}

impl DbRef {
    /// The database meant when the plan runs with `current` as its database.
    pub fn name<'a>(&'a self, current: &'a str) -> &'a str {
        match self {
            DbRef::Current => current,
            DbRef::Named(n) => n,
        }
    }
}

/// A name a plan looked up while it was bound, and what it found.
#[derive(Clone, Debug)]
pub struct ObjectDep {
    pub db: DbRef,
    /// Lower-cased `schema.name`.
    pub key: String,
    /// The fingerprint of the object found under the name; `None` when there was none.
    pub fingerprint: Option<u64>,
    /// The plan reads or changes this table, and holds a schema-stability lock on it
    /// while it runs.
    pub locked: bool,
    /// What the statement does to the object (the permissions it needs on it).
    pub access: Access,
    /// The view or function (its database and lower-cased `schema.name`) whose definition
    /// names the object; `None` when the statement names it itself. An object reached
    /// through a module with the same owner needs no permission of its own (ownership
    /// chaining).
    pub via: Option<(DbRef, String)>,
    /// The table's columns (by position) the statement reads (SELECT) or sets (UPDATE),
    /// for column permissions; a column read only through a view is not listed.
    pub columns: Vec<(u16, Access)>,
}

/// What a statement does to an object, as the permissions it needs on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access(u8);

impl Access {
    pub const NONE: Access = Access(0);
    pub const SELECT: Access = Access(1);
    pub const INSERT: Access = Access(2);
    pub const UPDATE: Access = Access(4);
    pub const DELETE: Access = Access(8);
    pub const EXECUTE: Access = Access(16);
    /// Each access with its permission's name.
    const NAMES: [(Access, &'static str); 5] = [
        (Access::SELECT, "SELECT"),
        (Access::INSERT, "INSERT"),
        (Access::UPDATE, "UPDATE"),
        (Access::DELETE, "DELETE"),
        (Access::EXECUTE, "EXECUTE"),
    ];

    pub fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }

    pub fn without(self, other: Access) -> Access {
        Access(self.0 & !other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether this access includes the one named `permission`.
    pub fn includes(self, permission: &str) -> bool {
        Access::NAMES.iter().any(|(a, n)| *n == permission && self.0 & a.0 != 0)
    }

    /// The names of the permissions this access needs (`SELECT`, `INSERT`, …).
    pub fn permissions(self) -> impl Iterator<Item = &'static str> {
        Access::NAMES.into_iter().filter(move |(a, _)| self.0 & a.0 != 0).map(|(_, n)| n)
    }
}

impl ObjectDep {
    /// Whether `catalog` (of the database the dependency points into) still has the
    /// object the plan was bound against under the name.
    pub fn holds_in(&self, catalog: &Catalog) -> bool {
        catalog.fingerprint_of(&self.key) == self.fingerprint
    }
}

/// An immutable snapshot of one database's catalog.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub version: u64,
    objects: foldhash::HashMap<i32, Object>,
    /// Object id → fingerprint of its definition.
    fingerprints: foldhash::HashMap<i32, u64>,
    /// Lower-cased `schema.name` → object id. Constraint names share the namespace.
    names: foldhash::HashMap<String, i32>,
    /// A table's object id → its triggers' ids, oldest first.
    triggers: foldhash::HashMap<i32, Vec<i32>>,
    next_id: i32,
}

/// The key `ObjectDep` and the name index use: lower-cased `schema.name`.
pub fn name_key(schema: &str, name: &str) -> String {
    format!("{}.{}", schema.to_lowercase(), name.to_lowercase())
}

impl Catalog {
    pub fn from_objects(version: u64, objects: Vec<Object>) -> Catalog {
        let mut c = Catalog { version, next_id: FIRST_OBJECT_ID, ..Default::default() };
        for o in objects {
            c.insert(o);
        }
        c
    }

    /// About how much memory the snapshot takes: each object's definition with its
    /// names and text, and the maps that index it.
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        const INDEXED: usize = 3 * 48; // an entry in each of the three maps
        let object = |o: &Object| match o {
            Object::Table(t) => {
                size_of::<Table>()
                    + t.schema.len()
                    + t.name.len()
                    + t.columns.iter().map(|c| size_of::<Column>() + c.name.len()).sum::<usize>()
                    + t.indexes.iter().map(|i| size_of::<Index>() + i.name.len()).sum::<usize>()
                    + (t.checks.len() + t.foreign_keys.len()) * 256
            }
            Object::Module(m) => size_of::<Module>() + m.schema.len() + m.name.len() + m.text.len(),
            Object::Sequence(s) => size_of::<Sequence>() + s.schema.len() + s.name.len(),
        };
        size_of::<Catalog>() + self.objects.values().map(|o| object(o) + INDEXED + o.name().len()).sum::<usize>()
    }

    fn insert(&mut self, o: Object) {
        // A definition read back from storage may hold any id, i32::MAX included.
        self.next_id = self.next_id.max(o.id().saturating_add(1));
        if let Object::Module(m) = &o {
            if let Some(table) = m.parent {
                let ids = self.triggers.entry(table).or_default();
                if !ids.contains(&m.id) {
                    ids.push(m.id);
                    ids.sort_unstable();
                }
            }
        }
        self.names.insert(name_key(o.schema(), o.name()), o.id());
        self.fingerprints.insert(o.id(), o.fingerprint());
        self.objects.insert(o.id(), o);
    }

    /// A fresh object id: past every id in use, so never one of them. Ids are never
    /// reused; once the last int has been given out, a new object fails (40541) rather
    /// than take an id that is, or was, another object's.
    pub fn allocate_id(&mut self) -> SqlResult<i32> {
        let id = self.next_id;
        if id == i32::MAX || self.objects.contains_key(&id) {
            return Err(msg::OBJECT_IDS_EXHAUSTED.with(&[&i32::MAX]));
        }
        self.next_id = id + 1;
        Ok(id)
    }

    /// A copy with one object added or replaced and the version bumped.
    pub fn with(&self, o: Object, version: u64) -> Catalog {
        let mut c = self.clone();
        if let Some(old) = c.objects.get(&o.id()).cloned() {
            c.names.remove(&name_key(old.schema(), old.name()));
            if let Object::Module(m) = &old {
                if let Some(table) = m.parent {
                    c.forget_trigger(table, m.id);
                }
            }
        }
        c.insert(o);
        c.version = version;
        c
    }

    /// A copy without the object `id` and the version bumped. Its name goes too unless
    /// it names another object now (one created under the name of one dropped).
    pub fn without(&self, id: i32, version: u64) -> Catalog {
        let mut c = self.clone();
        if let Some(old) = c.objects.remove(&id) {
            if let Object::Module(m) = &old {
                if let Some(table) = m.parent {
                    c.forget_trigger(table, id);
                }
            }
            let key = name_key(old.schema(), old.name());
            if c.names.get(&key) == Some(&id) {
                c.names.remove(&key);
            }
            c.fingerprints.remove(&id);
        }
        c.version = version;
        c
    }

    fn forget_trigger(&mut self, table: i32, id: i32) {
        if let Some(ids) = self.triggers.get_mut(&table) {
            ids.retain(|&t| t != id);
            if ids.is_empty() {
                self.triggers.remove(&table);
            }
        }
    }

    /// The triggers on the table `table` (its object id), oldest first.
    pub fn triggers_on(&self, table: i32) -> impl Iterator<Item = &Arc<Module>> {
        let ids = self.triggers.get(&table).map(Vec::as_slice).unwrap_or_default();
        ids.iter().filter_map(|id| match self.objects.get(id) {
            Some(Object::Module(m)) => Some(m),
            _ => None,
        })
    }

    pub fn lookup(&self, schema: &str, name: &str) -> Option<&Object> {
        self.names.get(&name_key(schema, name)).and_then(|id| self.objects.get(id))
    }

    /// The object under a lower-cased `schema.name` key.
    pub fn lookup_key(&self, key: &str) -> Option<&Object> {
        self.names.get(key).and_then(|id| self.objects.get(id))
    }

    /// The fingerprint of the object under a lower-cased `schema.name` key.
    pub fn fingerprint_of(&self, key: &str) -> Option<u64> {
        self.names.get(key).and_then(|id| self.fingerprints.get(id)).copied()
    }

    /// This database's table named as `def` is: `def` is the definition a plan was bound
    /// against (in another database, or an older snapshot of this one), and the plan was
    /// checked against this catalog's fingerprints under schema-stability locks, so the
    /// table found has the same definition.
    pub fn same_table(&self, def: &Table) -> Option<&Arc<Table>> {
        if let Some(Object::Table(t)) = self.objects.get(&def.id) {
            if std::ptr::eq(&**t, def) {
                return Some(t);
            }
        }
        match self.lookup(&def.schema, &def.name) {
            Some(Object::Table(t)) => {
                debug_assert_eq!(
                    self.fingerprints.get(&t.id),
                    Some(&def.fingerprint()),
                    "a plan runs on its definition"
                );
                // Never run a plan on rows laid out otherwise than it was bound for.
                same_layout(t, def).then_some(t)
            }
            _ => None,
        }
    }

    pub fn table(&self, schema: &str, name: &str) -> Option<&Arc<Table>> {
        match self.lookup(schema, name) {
            Some(Object::Table(t)) => Some(t),
            _ => None,
        }
    }

    /// The table type a module of schema `schema` names `name` (`t` or `schema.t`; a
    /// one-part name is looked for in `schema`, then dbo).
    pub fn table_type(&self, name: &str, schema: &str) -> Option<&Arc<Module>> {
        let found = match name.split('.').collect::<Vec<_>>().as_slice() {
            [s, n] => self.module(s, n),
            [n] => self.module(schema, n).or_else(|| self.module("dbo", n)),
            _ => None,
        };
        found.filter(|m| m.kind == ModuleKind::TableType)
    }

    pub fn module(&self, schema: &str, name: &str) -> Option<&Arc<Module>> {
        match self.lookup(schema, name) {
            Some(Object::Module(m)) => Some(m),
            _ => None,
        }
    }

    pub fn by_id(&self, id: i32) -> Option<&Object> {
        self.objects.get(&id)
    }

    pub fn table_by_id(&self, id: i32) -> Option<&Arc<Table>> {
        match self.objects.get(&id) {
            Some(Object::Table(t)) => Some(t),
            _ => None,
        }
    }

    /// Every object, ordered by id.
    pub fn objects(&self) -> Vec<&Object> {
        let mut v: Vec<_> = self.objects.values().collect();
        v.sort_by_key(|o| o.id());
        v
    }

    /// Whether a constraint or index name is taken anywhere in the schema (SQL Server
    /// keeps constraint names unique per schema).
    pub fn constraint_exists(&self, schema: &str, name: &str) -> bool {
        self.objects.values().any(|o| match o {
            Object::Table(t) if t.schema.eq_ignore_ascii_case(schema) => {
                t.indexes.iter().any(|i| (i.primary_key || i.unique_constraint) && i.name.eq_ignore_ascii_case(name))
                    || t.checks.iter().any(|c| c.name.eq_ignore_ascii_case(name))
                    || t.foreign_keys.iter().any(|f| f.name.eq_ignore_ascii_case(name))
                    || t.columns.iter().any(|c| c.default.as_ref().is_some_and(|d| d.name.eq_ignore_ascii_case(name)))
            }
            Object::Table(_) | Object::Module(_) | Object::Sequence(_) => false,
        })
    }

    /// Tables with a foreign key referencing `table_id`.
    pub fn referencing(&self, table_id: i32) -> Vec<(Arc<Table>, usize)> {
        let mut out = Vec::new();
        for o in self.objects.values() {
            if let Object::Table(t) = o {
                for (i, fk) in t.foreign_keys.iter().enumerate() {
                    if fk.ref_table == table_id {
                        out.push((t.clone(), i));
                    }
                }
            }
        }
        out.sort_by_key(|(t, i)| (t.id, *i));
        out
    }
}

/// Serialises a [`SqlType`] as its SQL spelling (`varchar(10)`).
mod type_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &SqlType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&types::type_name(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SqlType, D::Error> {
        let text = String::deserialize(d)?;
        parse_type_text(&text).map_err(|e| serde::de::Error::custom(&e.message))
    }
}

/// Parses a type spelled as [`types::type_name`] prints it.
pub fn parse_type_text(text: &str) -> SqlResult<SqlType> {
    let (name, args) = match text.find('(') {
        Some(p) => (&text[..p], text[p + 1..].trim_end_matches(')')),
        None => (text, ""),
    };
    let mut parsed = Vec::new();
    for a in args.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if a.eq_ignore_ascii_case("max") {
            parsed.push(TypeArg::Max);
        } else {
            let n = a.parse().map_err(|_| msg::TYPE_NOT_FOUND.with(&[&"", &text]))?;
            parsed.push(TypeArg::Number(n));
        }
    }
    types::resolve_type(&TypeName { name: name.trim().to_uppercase(), args: parsed }, false)
}

/// The name a user wrote for a session's temp table or table variable (stored in tempdb
/// as `#t`, then `_` up to 116 characters and 12 hex digits, and `#@t` likewise; a
/// `##global` table is stored as written).
pub fn display_name(stored: &str) -> &str {
    if !stored.starts_with('#') || stored.starts_with("##") || stored.len() < 13 {
        return stored;
    }
    let (head, suffix) = stored.split_at(stored.len() - 12);
    if !suffix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return stored;
    }
    // (Underscores a name ends with cannot be told from the padding, as in SQL Server.)
    let user = head.trim_end_matches('_');
    user.strip_prefix('#').filter(|u| u.starts_with('@')).unwrap_or(user)
}

pub fn now_epoch() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_table_names_display_as_written() {
        let stored = |user: &str, n: u32| format!("{user}{}{n:012X}", "_".repeat(116 - user.len()));
        assert_eq!(display_name(&stored("#t", 1)), "#t");
        assert_eq!(display_name(&stored("#@t", 2)), "@t");
        assert_eq!(display_name(&stored("#my_table", 3)), "#my_table");
        assert_eq!(display_name("##global"), "##global");
        assert_eq!(display_name("orders"), "orders");
    }

    /// Found by fuzz/fuzz_targets/storage_decoder.rs: a stored definition with the largest
    /// id made loading the catalog overflow (a panic where overflow checks are on).
    #[test]
    fn a_stored_definition_with_the_largest_id_loads() {
        let json = br#"{"Module":{"id":2147483647,"schema":"dbo","name":"v","kind":"View","text":"","created":0,"modified":0}}"#;
        let object: Object = serde_json::from_slice(json).unwrap();
        let catalog = Catalog::from_objects(1, vec![object]);
        assert_eq!(catalog.by_id(i32::MAX).map(Object::name), Some("v"));
        // No id is left to give out, and none is given twice.
        let mut c = catalog.clone();
        assert_eq!(c.allocate_id().unwrap_err().number, 40541);
        let json = br#"{"Module":{"id":2147483645,"schema":"dbo","name":"w","kind":"View","text":"","created":0,"modified":0}}"#;
        let mut c = Catalog::from_objects(1, vec![serde_json::from_slice(json).unwrap()]);
        assert_eq!(c.allocate_id().unwrap(), i32::MAX - 1);
        assert_eq!(c.allocate_id().unwrap_err().number, 40541, "i32::MAX itself is never given out");
    }

    #[test]
    fn a_layout_cache_keeps_one_value_and_a_copy_starts_empty() {
        let cache = LayoutCache::default();
        assert!(cache.get::<Vec<SqlType>>().is_none());
        let first = cache.keep(Arc::new(vec![SqlType::Int])).unwrap();
        let second = cache.keep(Arc::new(vec![SqlType::BigInt])).unwrap();
        assert!(Arc::ptr_eq(&first, &second), "the first kept stays");
        assert!(Arc::ptr_eq(&first, &cache.get::<Vec<SqlType>>().unwrap()));
        assert!(cache.get::<String>().is_none(), "another type is not there");
        assert!(cache.clone().get::<Vec<SqlType>>().is_none(), "a copy of a definition starts empty");
    }
}
