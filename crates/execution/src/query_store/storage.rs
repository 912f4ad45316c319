//! Query Store's rows in storage (the layout is in `rows`): reading what a store keeps
//! when it loads, turning what is pending into row changes (which a flush writes, and
//! which the views lay over what storage holds without writing them), and removing rows
//! (cleanup, the procedures that remove queries and plans, CLEAR).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use tessera_database::{Database, Direction, TableId, Transaction};
use tessera_errors::{SqlError, SqlResult};

use super::memory::{Pending, Stored};
use super::options::Options;
use super::rows::{self, key, parts, Counters, IntervalRow, PlanRow, QueryRow, StatsRow, WaitRow};
use tessera_semantics::plan::PlanSite;

/// A row change: the key and its new value (None: the row goes).
pub type Change = (Vec<u8>, Option<Vec<u8>>);

/// Rows by key, as the views read them.
pub type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// Finds a stored row's value by its key.
pub type Lookup<'a> = &'a dyn Fn(&[u8]) -> SqlResult<Option<Vec<u8>>>;

fn damaged(db: &Database, detail: impl std::fmt::Display) -> SqlError {
    SqlError::new(50000, format!("Damaged Query Store row in database '{}': {detail}", db.name())).with_severity(21)
}

pub fn json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("Query Store rows serialize")
}

pub fn decode<T: DeserializeOwned>(db: &Database, bytes: &[u8]) -> SqlResult<T> {
    serde_json::from_slice(bytes).map_err(|e| damaged(db, e))
}

/// The database's Query Store tree, made if `create` and it has none.
pub fn tree(db: &Database, create: bool) -> SqlResult<Option<TableId>> {
    if let Some(t) = db.table(rows::TREE) {
        return Ok(Some(t));
    }
    if !create {
        return Ok(None);
    }
    match db.create_table(rows::TREE) {
        Ok(t) => Ok(Some(t)),
        Err(tessera_database::Error::AlreadyExists { .. }) => Ok(db.table(rows::TREE)),
        Err(e) => Err(e.into()),
    }
}

/// The database's Query Store settings (None: Query Store was never turned on).
pub fn read_options(db: &Arc<Database>) -> SqlResult<Option<Options>> {
    let Some(t) = tree(db, false)? else { return Ok(None) };
    let tx = db.begin();
    let bytes = tx.get(t, &key(rows::OPTIONS, &[]))?;
    tx.commit()?;
    bytes.map(|b| decode(db, &b)).transpose()
}

/// Writes the settings.
pub fn write_options(db: &Arc<Database>, options: &Options) -> SqlResult<()> {
    let t = tree(db, true)?.expect("made");
    let mut tx = db.begin();
    put(&mut tx, t, &key(rows::OPTIONS, &[]), &json(options))?;
    tx.commit()?;
    Ok(())
}

/// Every row of the tree, in key order.
pub fn all_rows(db: &Arc<Database>) -> SqlResult<Rows> {
    let mut out = Rows::new();
    let Some(t) = tree(db, false)? else { return Ok(out) };
    let tx = db.begin();
    for item in tx.scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
        let (k, v) = item?;
        out.insert(k, v);
    }
    tx.commit()?;
    Ok(out)
}

/// What a store needs to find what it keeps: ids by text hash, context, query key and
/// plan key, the counters, the last interval and the bytes stored.
pub fn load(db: &Arc<Database>) -> SqlResult<Stored> {
    let mut stored = Stored::default();
    let Some(t) = tree(db, false)? else { return Ok(stored) };
    let tx = db.begin();
    for item in tx.scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
        let (k, v) = item?;
        stored.bytes += (k.len() + v.len()) as u64;
        let id = || id_value(&v);
        let p = parts(&k);
        match k.first().copied() {
            Some(rows::COUNTERS) => stored.counters = decode(db, &v)?,
            Some(rows::TEXT_BY_HASH) => {
                let hash: [u8; 16] = k.get(1..17).and_then(|h| h.try_into().ok()).ok_or_else(|| damaged(db, "key"))?;
                stored.texts.push((hash, id()));
            }
            Some(rows::CONTEXT) => stored.contexts.push((decode(db, &v)?, p[0] as i64)),
            Some(rows::QUERY_BY_KEY) if p.len() == 3 => {
                stored.queries.push(((p[0] as i64, p[1] as i64, p[2] as i64), id()));
            }
            Some(rows::PLAN_BY_KEY) if p.len() == 2 => stored.plans.push(((p[0] as i64, p[1]), id())),
            Some(rows::INTERVAL) => stored.last_interval = Some((p[0] as i64, decode(db, &v)?)),
            _ => {}
        }
    }
    tx.commit()?;
    Ok(stored)
}

/// The row changes that write `pending` (and `counters`) over what `get` finds stored,
/// plans rendered as they read in `site` (the store's database).
/// Compiles add to their query's and plan's counts, statistics to the stored row of the
/// same interval, plan and type (keeping its id), and each plan (and its query) last ran
/// when its last run in `pending` ended.
pub fn changes(
    db: &Database,
    pending: &Pending,
    counters: &Counters,
    get: Lookup,
    site: &PlanSite,
) -> SqlResult<Vec<Change>> {
    let mut out: Vec<Change> = Vec::new();
    for (id, hash, text) in &pending.texts {
        for (i, chunk) in text_chunks(text).enumerate() {
            out.push((rows::chunk_key(rows::TEXT, *id, i as u16), Some(chunk.to_vec())));
        }
        let mut k = vec![rows::TEXT_BY_HASH];
        k.extend_from_slice(hash);
        out.push((k, Some(id.to_be_bytes().to_vec())));
    }
    for (id, row) in &pending.contexts {
        out.push((key(rows::CONTEXT, &[*id as u64]), Some(json(row))));
    }
    for (id, render) in &pending.plan_texts {
        let text = render(site);
        for (i, chunk) in text_chunks(&text).enumerate() {
            out.push((rows::chunk_key(rows::PLAN_TEXT, *id, i as u16), Some(chunk.to_vec())));
        }
    }
    // When each plan last ran, from the statistics.
    let mut last_run: BTreeMap<i64, i64> = BTreeMap::new();
    for ((_, plan, _), s) in &pending.stats {
        let e = last_run.entry(*plan).or_insert(0);
        *e = (*e).max(s.last_ms);
    }
    let mut plans: BTreeMap<i64, PlanRow> = BTreeMap::new();
    for plan in pending.plans.keys().chain(last_run.keys()) {
        if plans.contains_key(plan) {
            continue;
        }
        let row = match pending.plans.get(plan).and_then(|t| t.new.clone()) {
            Some(row) => row,
            None => match get(&key(rows::PLAN, &[*plan as u64]))? {
                Some(v) => decode(db, &v)?,
                // Removed since it ran: its statistics go too.
                None => continue,
            },
        };
        plans.insert(*plan, row);
    }
    let mut query_last_run: BTreeMap<i64, i64> = BTreeMap::new();
    for (id, row) in &mut plans {
        if let Some(t) = pending.plans.get(id) {
            row.count_compiles += t.compiles;
            row.compile_us_total += t.compile_us;
            row.last_compile_ms = row.last_compile_ms.max(t.last_compile_ms);
            row.last_compile_us = t.last_compile_us;
            if t.new.is_some() {
                out.push((
                    key(rows::PLAN_BY_KEY, &[row.query_id as u64, row.plan_hash]),
                    Some(id.to_be_bytes().to_vec()),
                ));
            }
        }
        if let Some(at) = last_run.get(id) {
            row.last_execution_ms = row.last_execution_ms.max(*at);
            let q = query_last_run.entry(row.query_id).or_insert(0);
            *q = (*q).max(*at);
        }
        out.push((key(rows::PLAN, &[*id as u64]), Some(json(row))));
    }
    for query in pending.queries.keys().chain(query_last_run.keys()) {
        if out.iter().any(|(k, _)| k == &key(rows::QUERY, &[*query as u64])) {
            continue;
        }
        let mut row: QueryRow = match pending.queries.get(query).and_then(|t| t.new.clone()) {
            Some(row) => row,
            None => match get(&key(rows::QUERY, &[*query as u64]))? {
                Some(v) => decode(db, &v)?,
                None => continue,
            },
        };
        if let Some(t) = pending.queries.get(query) {
            row.count_compiles += t.compiles;
            row.compile_us_total += t.compile_us;
            row.last_compile_ms = row.last_compile_ms.max(t.last_compile_ms);
            row.last_compile_us = t.last_compile_us;
            if t.new.is_some() {
                let k = key(rows::QUERY_BY_KEY, &[row.text_id as u64, row.context_id as u64, row.object_id as u64]);
                out.push((k, Some(query.to_be_bytes().to_vec())));
            }
        }
        if let Some(at) = query_last_run.get(query) {
            row.last_execution_ms = row.last_execution_ms.max(*at);
        }
        out.push((key(rows::QUERY, &[*query as u64]), Some(json(&row))));
    }
    for (id, row) in &pending.intervals {
        out.push((key(rows::INTERVAL, &[*id as u64]), Some(json(row))));
    }
    let mut stats: Vec<_> = pending.stats.iter().filter(|((_, plan, _), _)| plans.contains_key(plan)).collect();
    stats.sort_by_key(|(k, _)| **k);
    for ((interval, plan, kind), later) in stats {
        let k = key(rows::STATS, &[*interval as u64, *plan as u64, u64::from(*kind)]);
        let row = match get(&k)? {
            Some(v) => {
                let mut row: StatsRow = decode(db, &v)?;
                row.merge(later);
                row
            }
            None => later.clone(),
        };
        out.push((k, Some(json(&row))));
    }
    let mut waits: Vec<_> = pending.waits.iter().filter(|((_, plan, _, _), _)| plans.contains_key(plan)).collect();
    waits.sort_by_key(|(k, _)| **k);
    for ((interval, plan, kind, category), later) in waits {
        let k = key(rows::WAITS, &[*interval as u64, *plan as u64, u64::from(*kind), u64::from(*category)]);
        let row = match get(&k)? {
            Some(v) => {
                let mut row: WaitRow = decode(db, &v)?;
                row.merge(later);
                row
            }
            None => later.clone(),
        };
        out.push((k, Some(json(&row))));
    }
    out.push((key(rows::COUNTERS, &[]), Some(json(counters))));
    Ok(out)
}

fn text_chunks(text: &str) -> impl Iterator<Item = &[u8]> {
    let bytes = text.as_bytes();
    // An empty text still has its one (empty) chunk.
    let n = bytes.len().div_ceil(rows::CHUNK).max(1);
    (0..n).map(move |i| &bytes[(i * rows::CHUNK).min(bytes.len())..((i + 1) * rows::CHUNK).min(bytes.len())])
}

/// Writes `value` at `key` (None: deletes it); returns the change in bytes stored.
pub fn put(tx: &mut Transaction, t: TableId, key: &[u8], value: &[u8]) -> SqlResult<i64> {
    let old = tx.get(t, key)?;
    match &old {
        Some(_) => {
            tx.update(t, key, value)?;
        }
        None => tx.insert(t, key, value)?,
    }
    let before = old.map_or(0, |o| (o.len() + key.len()) as i64);
    Ok((key.len() + value.len()) as i64 - before)
}

/// Applies `changes` in `tx`; returns the change in bytes stored.
pub fn write(tx: &mut Transaction, t: TableId, changes: &[Change]) -> SqlResult<i64> {
    let mut delta = 0;
    for (k, v) in changes {
        delta += match v {
            Some(v) => put(tx, t, k, v)?,
            None => remove(tx, t, k)?,
        };
    }
    Ok(delta)
}

fn remove(tx: &mut Transaction, t: TableId, key: &[u8]) -> SqlResult<i64> {
    match tx.get(t, key)? {
        Some(old) => {
            tx.delete(t, key)?;
            Ok(-((old.len() + key.len()) as i64))
        }
        None => Ok(0),
    }
}

/// `changes` laid over `rows` (what the views read).
pub fn overlay(rows: &mut Rows, changes: Vec<Change>) {
    for (k, v) in changes {
        match v {
            Some(v) => {
                rows.insert(k, v);
            }
            None => {
                rows.remove(&k);
            }
        }
    }
}

/// The rows of kind `kind` in `rows`.
pub fn of_kind(rows: &Rows, kind: u8) -> impl Iterator<Item = (&Vec<u8>, &Vec<u8>)> {
    rows.range(vec![kind]..vec![kind + 1])
}

/// A text kept in chunks (kind TEXT or PLAN_TEXT) in `rows`.
pub fn text(rows: &Rows, kind: u8, id: i64) -> String {
    let lo = key(kind, &[id as u64]);
    let hi = key(kind, &[id as u64 + 1]);
    let bytes: Vec<u8> = rows.range(lo..hi).flat_map(|(_, v)| v.iter().copied()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What removing rows takes out: these queries (with their plans and statistics, and
/// their texts when no other query uses them), these plans (with their statistics),
/// and the statistics of these plans.
#[derive(Default)]
pub struct Removal {
    pub queries: Vec<i64>,
    pub plans: Vec<i64>,
    pub stats_of_plans: Vec<i64>,
    /// Intervals that end before this (Unix epoch ms) go, with their statistics.
    pub intervals_before_ms: Option<i64>,
    /// Every row but the settings and the counters (`QUERY_STORE CLEAR`).
    pub everything: bool,
}

/// Removes what `removal` names from a database whose store is not loaded.
pub fn remove_stored(db: &Arc<Database>, removal: &Removal) -> SqlResult<()> {
    let Some(t) = tree(db, false)? else { return Ok(()) };
    let changes = removals(db, &all_rows(db)?, removal)?;
    let mut tx = db.begin();
    write(&mut tx, t, &changes)?;
    tx.commit()?;
    Ok(())
}

/// The id a by-hash or by-key row leads to.
fn id_value(v: &[u8]) -> i64 {
    v.get(..8).map_or(0, |b| i64::from_be_bytes(b.try_into().expect("8 bytes")))
}

/// Which query each plan belongs to, and which text each query has, read once.
struct Owners {
    plan_query: HashMap<i64, i64>,
    query_text: HashMap<i64, i64>,
}

impl Owners {
    fn of(db: &Database, rows: &Rows) -> SqlResult<Owners> {
        let mut owners = Owners { plan_query: HashMap::new(), query_text: HashMap::new() };
        for (k, v) in of_kind(rows, rows::PLAN) {
            owners.plan_query.insert(parts(k)[0] as i64, decode::<PlanRow>(db, v)?.query_id);
        }
        for (k, v) in of_kind(rows, rows::QUERY) {
            owners.query_text.insert(parts(k)[0] as i64, decode::<QueryRow>(db, v)?.text_id);
        }
        Ok(owners)
    }
}

/// The bytes each query holds in `rows`: its rows, its plans' (with their texts and
/// statistics), and its text's when it is the text's only query: what removing it frees.
pub fn bytes_by_query(db: &Database, rows: &Rows) -> SqlResult<HashMap<i64, u64>> {
    let owners = Owners::of(db, rows)?;
    let mut users: HashMap<i64, Vec<i64>> = HashMap::new();
    for (q, t) in &owners.query_text {
        users.entry(*t).or_default().push(*q);
    }
    let mut out: HashMap<i64, u64> = HashMap::new();
    for (k, v) in rows {
        let size = (k.len() + v.len()) as u64;
        let p = parts(k);
        let query = match k.first().copied() {
            Some(rows::QUERY) => Some(p[0] as i64),
            Some(rows::QUERY_BY_KEY) => Some(id_value(v)),
            Some(rows::PLAN | rows::PLAN_TEXT) => owners.plan_query.get(&(p[0] as i64)).copied(),
            Some(rows::STATS | rows::WAITS) => {
                p.get(1).and_then(|plan| owners.plan_query.get(&(*plan as i64)).copied())
            }
            Some(rows::TEXT) => users.get(&(p[0] as i64)).filter(|u| u.len() == 1).map(|u| u[0]),
            Some(rows::PLAN_BY_KEY) => owners.plan_query.get(&id_value(v)).copied(),
            Some(rows::TEXT_BY_HASH) => users.get(&id_value(v)).filter(|u| u.len() == 1).map(|u| u[0]),
            _ => None,
        };
        if let Some(q) = query {
            *out.entry(q).or_default() += size;
        }
    }
    Ok(out)
}

/// The row deletions `removal` makes of `rows` (each kind read once).
pub fn removals(db: &Database, rows: &Rows, removal: &Removal) -> SqlResult<Vec<Change>> {
    if removal.everything {
        let gone = rows.keys().filter(|k| !matches!(k.first().copied(), Some(rows::OPTIONS) | Some(rows::COUNTERS)));
        return Ok(gone.map(|k| (k.clone(), None)).collect());
    }
    let owners = Owners::of(db, rows)?;
    let queries: HashSet<i64> = removal.queries.iter().copied().collect();
    let mut plans: HashSet<i64> = removal.plans.iter().copied().collect();
    plans.extend(owners.plan_query.iter().filter(|(_, q)| queries.contains(q)).map(|(p, _)| *p));
    let mut stats_of: HashSet<i64> = removal.stats_of_plans.iter().copied().collect();
    stats_of.extend(&plans);
    // Texts no query left uses.
    let kept_texts: HashSet<i64> =
        owners.query_text.iter().filter(|(q, _)| !queries.contains(q)).map(|(_, t)| *t).collect();
    let texts: HashSet<i64> = (owners.query_text.iter())
        .filter(|(q, t)| queries.contains(q) && !kept_texts.contains(t))
        .map(|(_, t)| *t)
        .collect();
    let mut old_intervals: HashSet<i64> = HashSet::new();
    if let Some(before) = removal.intervals_before_ms {
        for (k, v) in of_kind(rows, rows::INTERVAL) {
            if decode::<IntervalRow>(db, v)?.end_ms < before {
                old_intervals.insert(parts(k)[0] as i64);
            }
        }
    }
    let mut gone: Vec<Vec<u8>> = Vec::new();
    for (k, v) in rows {
        let p = parts(k);
        let first = |i: usize| p.get(i).map_or(0, |x| *x as i64);
        let goes = match k.first().copied() {
            Some(rows::QUERY) => queries.contains(&first(0)),
            // The by-key rows hold the id they lead to.
            Some(rows::QUERY_BY_KEY) => queries.contains(&id_value(v)),
            Some(rows::PLAN | rows::PLAN_TEXT) => plans.contains(&first(0)),
            Some(rows::PLAN_BY_KEY) => plans.contains(&id_value(v)),
            Some(rows::INTERVAL) => old_intervals.contains(&first(0)),
            Some(rows::STATS | rows::WAITS) => stats_of.contains(&first(1)) || old_intervals.contains(&first(0)),
            Some(rows::TEXT) => texts.contains(&first(0)),
            Some(rows::TEXT_BY_HASH) => texts.contains(&id_value(v)),
            _ => false,
        };
        if goes {
            gone.push(k.clone());
        }
    }
    Ok(gone.into_iter().map(|k| (k, None)).collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Plans read in database `r`.
    pub(crate) fn test_site() -> PlanSite<'static> {
        PlanSite { database: "r", table: &|_, def| (std::sync::Arc::from("r"), def.clone()) }
    }

    /// The rows of a store that counted one run of each (text, plan hash).
    fn stored(db: &Database, runs: &[(&str, u64)]) -> Rows {
        use super::super::memory::{tests::described, Loaded, Ran, Stored};
        use super::super::{Capture, Options};
        let options = Options { capture: Capture::All, ..Options::default() };
        let mut l = Loaded::new(Stored::default());
        for (i, (text, plan_hash)) in runs.iter().enumerate() {
            let ran = Ran { execution_type: 0, ended_ms: 1000, values: [1.0; rows::MEASURES], waits: None };
            l.record(&options, i as u64, &ran, || described(text, *plan_hash));
        }
        let mut map = Rows::new();
        overlay(&mut map, changes(db, &l.pending, &l.counters, &|_| Ok(None), &test_site()).unwrap());
        map
    }

    #[test]
    fn removing_a_query_takes_its_plans_statistics_and_text_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let engine = tessera_database::Engine::open(tessera_database::EngineConfig::new(dir.path())).unwrap();
        engine.create_database("r", tessera_database::DatabaseOptions::default()).unwrap();
        let db = engine.database("r").unwrap();
        let map = stored(&db, &[("select 1", 1), ("select 1", 2), ("select 2", 3)]);
        assert_eq!(of_kind(&map, rows::QUERY).count(), 2);
        assert_eq!(of_kind(&map, rows::PLAN).count(), 3);
        let bytes = bytes_by_query(&db, &map).unwrap();
        assert!(bytes[&1] > bytes[&2], "query 1 has two plans: {bytes:?}");
        let gone = removals(&db, &map, &Removal { queries: vec![1], ..Removal::default() }).unwrap();
        let mut left = map.clone();
        overlay(&mut left, gone);
        assert_eq!(of_kind(&left, rows::QUERY).count(), 1);
        assert_eq!(of_kind(&left, rows::PLAN).count() + of_kind(&left, rows::PLAN_BY_KEY).count(), 2);
        assert_eq!(of_kind(&left, rows::STATS).count(), 1);
        assert_eq!(text(&left, rows::TEXT, 1), "", "its text went");
        assert_eq!(text(&left, rows::TEXT, 2), "select 2");
        assert_eq!(of_kind(&left, rows::TEXT_BY_HASH).count() + of_kind(&left, rows::QUERY_BY_KEY).count(), 2);
        let freed: u64 =
            map.iter().filter(|(k, _)| !left.contains_key(*k)).map(|(k, v)| (k.len() + v.len()) as u64).sum();
        assert_eq!(freed, bytes[&1], "what the removal frees is what the query held");
    }

    #[test]
    fn long_texts_are_cut_in_chunks_and_read_whole() {
        let text = "é".repeat(rows::CHUNK);
        let mut map = BTreeMap::new();
        for (i, c) in text_chunks(&text).enumerate() {
            map.insert(rows::chunk_key(rows::TEXT, 4, i as u16), c.to_vec());
        }
        assert_eq!(map.len(), 2);
        assert_eq!(super::text(&map, rows::TEXT, 4), text);
        assert_eq!(text_chunks("").count(), 1);
    }
}
