//! Query Store's rows in storage (the layout is in `rows`): reading what a store keeps
//! when it loads, turning what is pending into row changes (which a flush writes, and
//! which the views lay over what storage holds without writing them), and removing rows
//! (cleanup, the procedures that remove queries and plans, CLEAR).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use tessera_database::{Database, Direction, TableId, Transaction};
use tessera_errors::{SqlError, SqlResult};

use super::memory::{Pending, Stored};
use super::options::Options;
use super::rows::{self, key, parts, Counters, IntervalRow, PlanRow, QueryRow, StatsRow, WaitRow};

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
        let id = || v.get(..8).map_or(0, |b| i64::from_be_bytes(b.try_into().expect("8 bytes")));
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

/// The row changes that write `pending` (and `counters`) over what `get` finds stored.
/// Compiles add to their query's and plan's counts, statistics to the stored row of the
/// same interval, plan and type (keeping its id), and each plan (and its query) last ran
/// when its last run in `pending` ended.
pub fn changes(db: &Database, pending: &Pending, counters: &Counters, get: Lookup) -> SqlResult<Vec<Change>> {
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
    for (id, text) in &pending.plan_texts {
        for (i, chunk) in text_chunks(text).enumerate() {
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

/// The row deletions `removal` makes of `rows`.
pub fn removals(db: &Database, rows: &Rows, removal: &Removal) -> SqlResult<Vec<Change>> {
    let mut gone: Vec<Vec<u8>> = Vec::new();
    if removal.everything {
        gone.extend(
            rows.keys().filter(|k| !matches!(k.first().copied(), Some(rows::OPTIONS) | Some(rows::COUNTERS))).cloned(),
        );
        return Ok(gone.into_iter().map(|k| (k, None)).collect());
    }
    let mut plans: Vec<i64> = removal.plans.clone();
    let mut stats_of: Vec<i64> = removal.stats_of_plans.clone();
    let mut texts_dropped: Vec<i64> = Vec::new();
    for (k, v) in of_kind(rows, rows::QUERY) {
        let id = parts(k)[0] as i64;
        if !removal.queries.contains(&id) {
            continue;
        }
        let q: QueryRow = decode(db, v)?;
        gone.push(k.clone());
        gone.push(key(rows::QUERY_BY_KEY, &[q.text_id as u64, q.context_id as u64, q.object_id as u64]));
        texts_dropped.push(q.text_id);
        for (pk, pv) in of_kind(rows, rows::PLAN) {
            let p: PlanRow = decode(db, pv)?;
            if p.query_id == id {
                plans.push(parts(pk)[0] as i64);
            }
        }
    }
    for (k, v) in of_kind(rows, rows::PLAN) {
        let id = parts(k)[0] as i64;
        if !plans.contains(&id) {
            continue;
        }
        let p: PlanRow = decode(db, v)?;
        gone.push(k.clone());
        gone.push(key(rows::PLAN_BY_KEY, &[p.query_id as u64, p.plan_hash]));
        let lo = key(rows::PLAN_TEXT, &[id as u64]);
        let hi = key(rows::PLAN_TEXT, &[id as u64 + 1]);
        gone.extend(rows.range(lo..hi).map(|(k, _)| k.clone()));
        stats_of.push(id);
    }
    let mut old_intervals: Vec<i64> = Vec::new();
    if let Some(before) = removal.intervals_before_ms {
        for (k, v) in of_kind(rows, rows::INTERVAL) {
            let i: IntervalRow = decode(db, v)?;
            if i.end_ms < before {
                old_intervals.push(parts(k)[0] as i64);
                gone.push(k.clone());
            }
        }
    }
    for kind in [rows::STATS, rows::WAITS] {
        for (k, _) in of_kind(rows, kind) {
            let p = parts(k);
            if stats_of.contains(&(p[1] as i64)) || old_intervals.contains(&(p[0] as i64)) {
                gone.push(k.clone());
            }
        }
    }
    // Texts no query left uses.
    if !texts_dropped.is_empty() {
        let mut used = Vec::new();
        for (k, v) in of_kind(rows, rows::QUERY) {
            if !removal.queries.contains(&(parts(k)[0] as i64)) {
                used.push(decode::<QueryRow>(db, v)?.text_id);
            }
        }
        for text in texts_dropped.into_iter().filter(|t| !used.contains(t)) {
            let lo = key(rows::TEXT, &[text as u64]);
            let hi = key(rows::TEXT, &[text as u64 + 1]);
            gone.extend(rows.range(lo..hi).map(|(k, _)| k.clone()));
            for (k, v) in of_kind(rows, rows::TEXT_BY_HASH) {
                if v.get(..8).map(|b| i64::from_be_bytes(b.try_into().expect("8 bytes"))) == Some(text) {
                    gone.push(k.clone());
                }
            }
        }
    }
    gone.sort();
    gone.dedup();
    Ok(gone.into_iter().map(|k| (k, None)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
