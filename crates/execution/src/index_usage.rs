//! How indexes are used, kept in the server's memory for sys.dm_db_index_usage_stats,
//! sys.dm_db_index_operational_stats and the missing-index views: what a run of a
//! statement adds to an index's counters (`IndexUsage`, on its definition in the catalog:
//! relaxed atomic adds, no lock), and the instance's missing-index suggestions
//! ([`MissingIndexes`], kept in `Shared`: apart, so `runtime` imports no code that uses it).
//!
//! Nothing here is persisted. An index's counters go with its database's catalog when the
//! database closes, and a suggestion goes when its table's definition changes (a new
//! index, a column added or dropped: SQL Server drops a table's suggestions then too) or
//! its database closes; at most [`MAX_GROUPS`] suggestions are kept, as SQL Server keeps.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use tessera_semantics::catalog::{Catalog, Table};
use tessera_semantics::plan::WantedIndex;

/// The most missing-index groups the instance keeps (SQL Server's limit): past it, new
/// suggestions are not recorded until old ones go.
pub const MAX_GROUPS: usize = 600;

/// Now, as the counters keep times: milliseconds of the coarse monotonic clock, which
/// costs a few nanoseconds to read where the wall clock costs tens in a virtual machine
/// (never 0, which stands for never).
pub fn now() -> i64 {
    i64::try_from(tessera_io::clock::coarse_monotonic().as_millis()).unwrap_or(i64::MAX).max(1)
}

/// A time the counters kept ([`now`]), as milliseconds since the Unix epoch: the wall
/// clock now less how long ago it was (to the kernel tick, a few milliseconds).
pub fn epoch_ms(kept: i64) -> i64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    wall - (now() - kept)
}

/// One more run of a statement that used an index so (`count`), the last at `now`.
pub fn used(count: &AtomicU64, last: &AtomicI64, now: i64) {
    count.fetch_add(1, Relaxed);
    last.store(now, Relaxed);
}

/// `n` more of what `counter` counts.
pub fn add(counter: &AtomicU64, n: u64) {
    if n > 0 {
        counter.fetch_add(n, Relaxed);
    }
}

/// One missing index and its group (SQL Server's groups hold one index each): where it is
/// missing, its columns as the views show them, and how often plans wanted it.
pub struct MissingGroup {
    pub group_handle: i32,
    pub index_handle: i32,
    /// The database, as its name is spelt, and the table's object id there.
    pub database: Arc<str>,
    pub object_id: i32,
    /// The table's definition the suggestion was made for: while it is the current one.
    table: Weak<Table>,
    wanted: (Vec<usize>, Vec<usize>, Vec<usize>),
    /// `[a], [b]` (None: no such columns) and `[db].[schema].[table]`.
    pub equality: Option<String>,
    pub inequality: Option<String>,
    pub included: Option<String>,
    pub statement: String,
    /// The percentage of a run's cost the index would save (see `WantedIndex`).
    pub impact: f64,
    /// Compiled plans that wanted it and ran (those still cached are known by the
    /// suggestion they hold); runs of those plans and the last one's time.
    pub compiles: AtomicU64,
    plans: Mutex<Vec<Weak<WantedIndex>>>,
    pub seeks: AtomicU64,
    pub last_seek: AtomicI64,
}

impl MissingGroup {
    /// Whether the suggestion is for `table`, a table's definition in its database.
    pub fn is_for(&self, table: &Arc<Table>) -> bool {
        std::ptr::eq(self.table.as_ptr(), Arc::as_ptr(table))
    }

    /// Whether the suggestion is for its table as `catalog` (its database's, when loaded)
    /// defines it now.
    pub fn is_current(&self, catalog: Option<Arc<Catalog>>) -> bool {
        catalog.and_then(|c| c.table_by_id(self.object_id).cloned()).is_some_and(|t| self.is_for(&t))
    }

    fn wants(&self, w: &WantedIndex) -> bool {
        self.wanted.0 == w.equality && self.wanted.1 == w.inequality && self.wanted.2 == w.included
    }
}

/// The instance's missing-index groups, newest last.
#[derive(Default)]
pub struct MissingIndexes {
    groups: RwLock<Vec<Arc<MissingGroup>>>,
    /// The last handle given out (a group's, then its index's).
    handles: AtomicI32,
}

impl MissingIndexes {
    /// One run at `now`, in database `db`, of a plan whose scan of `table` (its definition
    /// there) wanted the index `wanted`. A suggestion seen for the first time is recorded
    /// unless [`MAX_GROUPS`] are kept, after those `current` finds stale are dropped. The
    /// groups are looked up under a read lock: only plans that scan a whole table ask.
    pub fn ran(
        &self,
        db: &Arc<str>,
        table: &Arc<Table>,
        wanted: &Arc<WantedIndex>,
        now: i64,
        current: impl Fn(&MissingGroup) -> bool,
    ) {
        let find = |groups: &[Arc<MissingGroup>]| groups.iter().find(|g| g.is_for(table) && g.wants(wanted)).cloned();
        let found = find(&self.groups.read());
        let group = match found {
            Some(g) => g,
            None => {
                let mut groups = self.groups.write();
                match find(&groups) {
                    Some(g) => g,
                    None => {
                        if groups.len() >= MAX_GROUPS {
                            groups.retain(|g| current(g));
                            if groups.len() >= MAX_GROUPS {
                                return;
                            }
                        }
                        let group = Arc::new(self.group(db, table, wanted));
                        groups.push(group.clone());
                        group
                    }
                }
            }
        };
        {
            let mut plans = group.plans.lock();
            if !plans.iter().any(|p| std::ptr::eq(p.as_ptr(), Arc::as_ptr(wanted))) {
                plans.retain(|p| p.strong_count() > 0);
                plans.push(Arc::downgrade(wanted));
                group.compiles.fetch_add(1, Relaxed);
            }
        }
        used(&group.seeks, &group.last_seek, now);
    }

    fn group(&self, db: &Arc<str>, table: &Arc<Table>, wanted: &WantedIndex) -> MissingGroup {
        let columns = |positions: &[usize]| {
            let names: Vec<String> = positions.iter().map(|&c| quote(&table.columns[c].name)).collect();
            (!names.is_empty()).then(|| names.join(", "))
        };
        let group_handle = self.handles.fetch_add(2, Relaxed) + 1;
        MissingGroup {
            group_handle,
            index_handle: group_handle + 1,
            database: db.clone(),
            object_id: table.id,
            table: Arc::downgrade(table),
            wanted: (wanted.equality.clone(), wanted.inequality.clone(), wanted.included.clone()),
            equality: columns(&wanted.equality),
            inequality: columns(&wanted.inequality),
            included: columns(&wanted.included),
            statement: format!("{}.{}.{}", quote(db), quote(&table.schema), quote(&table.name)),
            impact: wanted.impact,
            compiles: AtomicU64::new(0),
            plans: Mutex::new(Vec::new()),
            seeks: AtomicU64::new(0),
            last_seek: AtomicI64::new(0),
        }
    }

    /// The groups `current` finds current, oldest first; the others are dropped.
    pub fn current(&self, current: impl Fn(&MissingGroup) -> bool) -> Vec<Arc<MissingGroup>> {
        let mut groups = self.groups.write();
        groups.retain(|g| current(g));
        groups.clone()
    }
}

/// A name in brackets, as QUOTENAME writes it.
fn quote(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

#[cfg(test)]
mod tests {
    use super::{MissingIndexes, MAX_GROUPS};
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::Arc;
    use tessera_semantics::catalog::{Column, Table};
    use tessera_semantics::plan::WantedIndex;
    use tessera_semantics::types::SqlType;

    fn table(id: i32) -> Arc<Table> {
        let column = |name: &str| Column {
            name: name.into(),
            ty: SqlType::Int,
            nullable: true,
            identity: None,
            default: None,
            computed: None,
        };
        Arc::new(Table {
            id,
            schema: "dbo".into(),
            name: format!("t{id}"),
            columns: vec![column("a"), column("b]")],
            indexes: Vec::new(),
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            created: 0,
            modified: 0,
            large_values_out_of_row: false,
            properties: Vec::new(),
            counters: Default::default(),
            layout: Default::default(),
        })
    }

    fn wanted() -> Arc<WantedIndex> {
        Arc::new(WantedIndex { equality: vec![1], inequality: Vec::new(), included: vec![0], impact: 90.0 })
    }

    #[test]
    fn a_compiled_plan_counts_one_compile_and_each_run_a_seek() {
        let store = MissingIndexes::default();
        let (db, t, plan) = (Arc::from("Sales"), table(7), wanted());
        store.ran(&db, &t, &plan, 5, |_| true);
        store.ran(&db, &t, &plan, 9, |_| true);
        store.ran(&db, &t, &wanted(), 12, |_| true);
        let groups = store.current(|_| true);
        let [g] = &groups[..] else { panic!("one group: {}", groups.len()) };
        assert_eq!((g.compiles.load(Relaxed), g.seeks.load(Relaxed), g.last_seek.load(Relaxed)), (2, 3, 12));
        assert_eq!((g.equality.as_deref(), g.inequality.as_deref()), (Some("[b]]]"), None));
        assert_eq!((g.included.as_deref(), g.statement.as_str()), (Some("[a]"), "[Sales].[dbo].[t7]"));
        assert_eq!(g.index_handle, g.group_handle + 1);
    }

    #[test]
    fn at_most_600_groups_are_kept_until_stale_ones_go() {
        let store = MissingIndexes::default();
        let db: Arc<str> = Arc::from("d");
        let tables: Vec<_> = (0..=MAX_GROUPS as i32).map(table).collect();
        for t in &tables[..MAX_GROUPS] {
            store.ran(&db, t, &wanted(), 1, |_| true);
        }
        let last = &tables[MAX_GROUPS];
        store.ran(&db, last, &wanted(), 1, |_| true);
        assert_eq!(store.current(|_| true).len(), MAX_GROUPS, "full: not recorded");
        // Once the others' tables change, theirs go and the new one is recorded.
        store.ran(&db, last, &wanted(), 1, |g| g.object_id == 0);
        let kept: Vec<i32> = store.current(|_| true).iter().map(|g| g.object_id).collect();
        assert_eq!(kept, [0, MAX_GROUPS as i32]);
    }
}
