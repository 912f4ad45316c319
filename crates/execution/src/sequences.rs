//! Sequences: `CREATE`, `ALTER` and `DROP SEQUENCE` (a definition in the catalog, like any
//! object's, changed in the session's transaction) and `NEXT VALUE FOR` (values, which
//! belong to no transaction: a rollback gives none back, as in SQL Server).
//!
//! **No value is handed out twice**, whatever happens to the server. The storage tree
//! `sys$sequences` keeps per sequence (key: its object id, big-endian) the restart count
//! and the last value that may have been handed out (20 bytes: u32 and i128, big-endian;
//! docs/FORMAT.md). A value is handed out only once a write covering it is durable: with
//! `CACHE n` one write covers the next n values (a crash skips the unused rest, as SQL
//! Server's cache does), with `NO CACHE` each value is written. Those writes are storage
//! transactions of their own, committed before the value is returned. In memory
//! (`sequence_positions`) each sequence has its next value and how many values the last write
//! still covers; the first use after a start reads the row.
//!
//! `ALTER SEQUENCE … RESTART` counts restarts in the definition: a row of an older count
//! is ignored and the sequence begins again at the restart value.

use std::sync::Arc;

use tessera_database::Database;
use tessera_errors::{msg, SqlError, SqlResult};
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::{self, Catalog, Object, Sequence};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{ObjectName, SequenceCache, SequenceOptions};

use crate::runtime::ExecCtx;

/// Storage tree of the sequences' positions.
const TREE: &str = "sys$sequences";

/// SQL Server's default cache size.
const DEFAULT_CACHE: u32 = 50;

/// The largest cache a sequence may have (values one write reserves).
const MAX_CACHE: i128 = 1 << 31;

fn key(id: i32) -> [u8; 4] {
    (id as u32).to_be_bytes()
}

fn tree(db: &Database) -> SqlResult<tessera_database::TableId> {
    match db.table(TREE) {
        Some(t) => Ok(t),
        None => match db.create_table(TREE) {
            Ok(t) => Ok(t),
            Err(tessera_database::Error::AlreadyExists { .. }) => {
                db.table(TREE).ok_or_else(|| SqlError::new(50000, "sequence tree vanished"))
            }
            Err(e) => Err(e.into()),
        },
    }
}

/// The stored (restart count, last value that may have been handed out) of sequence `id`.
fn read(db: &Arc<Database>, id: i32) -> SqlResult<Option<(u32, i128)>> {
    let Some(t) = db.table(TREE) else { return Ok(None) };
    let tx = db.begin();
    let row = tx.get(t, &key(id))?;
    tx.commit()?;
    let Some(row) = row else { return Ok(None) };
    let damaged =
        || SqlError::new(50000, format!("Damaged sequence entry {id} in database '{}'", db.name())).with_severity(21);
    let restarts = u32::from_be_bytes(row.get(..4).ok_or_else(damaged)?.try_into().expect("4 bytes"));
    let last = i128::from_be_bytes(row.get(4..20).ok_or_else(damaged)?.try_into().expect("16 bytes"));
    Ok(Some((restarts, last)))
}

/// Makes `last` durably the last value sequence `id` may have handed out, in a storage
/// transaction of its own.
fn write(db: &Arc<Database>, id: i32, restarts: u32, last: i128) -> SqlResult<()> {
    let t = tree(db)?;
    let mut row = [0u8; 20];
    row[..4].copy_from_slice(&restarts.to_be_bytes());
    row[4..].copy_from_slice(&last.to_be_bytes());
    let mut tx = db.begin();
    tx.delete(t, &key(id))?;
    tx.insert(t, &key(id), &row)?;
    tx.commit()?;
    Ok(())
}

/// The value after `v`: the next one in the sequence's direction, wrapping to the other
/// end with CYCLE; None past the end without it.
fn step(s: &Sequence, v: i128) -> Option<i128> {
    match v.checked_add(s.increment) {
        Some(n) if n >= s.min && n <= s.max => Some(n),
        _ if s.cycle => Some(if s.increment > 0 { s.min } else { s.max }),
        _ => None,
    }
}

/// `NEXT VALUE FOR` the sequence a plan bound as `bound` (a definition by name: the plan
/// may run in another database than it was bound in, or after the sequence was dropped
/// and made again alike), in database `db`: the sequence of that name there now.
pub fn next_value(ctx: &ExecCtx, db: &str, bound: &Sequence) -> SqlResult<Value> {
    let database = ctx.shared.database(db)?;
    let s = match ctx.catalog(&database)?.lookup(&bound.schema, &bound.name) {
        Some(Object::Sequence(s)) => s.clone(),
        _ => return Err(msg::INVALID_OBJECT_NAME.with(&[&bound.name])),
    };
    let (first, _, _) = take(ctx, &database, &s, 1)?;
    as_value(first, &s.ty)
}

/// What `sp_sequence_get_range` hands out: `size` values at once, the ones NEXT VALUE FOR
/// would have given one by one (no other session's value comes between them), with the
/// sequence's definition.
pub struct Range {
    pub first: Value,
    pub last: Value,
    /// How many times the range wrapped past the sequence's end (CYCLE).
    pub cycles: i64,
    pub increment: Value,
    pub min: Value,
    pub max: Value,
}

/// `sp_sequence_get_range @sequence_name, @range_size`, the name in its parts: 11732 when a sequence without
/// CYCLE has fewer than `size` values left (none are taken then); 11733 for a size below
/// one.
pub fn get_range(ctx: &ExecCtx, parts: &[String], size: i64) -> SqlResult<Range> {
    let name = parts.join(".");
    let (db, schema, object) = match parts {
        [n] => (ctx.session.database.clone(), ctx.session.default_schema.clone(), n.clone()),
        [sc, n] => (ctx.session.database.clone(), sc.clone(), n.clone()),
        [d, sc, n] => (d.clone(), sc.clone(), n.clone()),
        _ => return Err(msg::INVALID_OBJECT_NAME.with(&[&name])),
    };
    let database = ctx.shared.database(if db.is_empty() { &ctx.session.database } else { &db })?;
    let catalog = ctx.catalog(&database)?;
    let found = [schema.as_str(), "dbo"].iter().find_map(|sc| match catalog.lookup(sc, &object) {
        Some(Object::Sequence(s)) => Some(s.clone()),
        _ => None,
    });
    let Some(s) = found else { return Err(msg::INVALID_OBJECT_NAME.with(&[&name])) };
    let size = u64::try_from(size)
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| msg::SEQUENCE_RANGE_SIZE_INVALID.with(&[&"@range_size"]))?;
    let (first, last, cycles) = take(ctx, &database, &s, size)?;
    Ok(Range {
        first: as_value(first, &s.ty)?,
        last: as_value(last, &s.ty)?,
        cycles,
        increment: as_value(s.increment, &s.ty)?,
        min: as_value(s.min, &s.ty)?,
        max: as_value(s.max, &s.ty)?,
    })
}

/// Hands out the next `count` values of sequence `s` under its position's lock: the
/// first, the last, and how many times they wrapped (CYCLE). Without CYCLE, a sequence
/// with fewer values left hands out none: 11728 for one value, 11732 for a range.
fn take(ctx: &ExecCtx, database: &Arc<Database>, s: &Sequence, count: u64) -> SqlResult<(i128, i128, i64)> {
    debug_assert!(count >= 1, "a range holds a value");
    let position = ctx.shared.sequences.position(database.name(), s);
    let mut p = position.lock();
    if p.loaded != Some(s.restarts) {
        p.next = match read(database, s.id)? {
            Some((restarts, last)) if restarts == s.restarts => step(s, last),
            _ => Some(s.restart_at),
        };
        p.covered = 0;
        p.last = None;
        p.loaded = Some(s.restarts);
    }
    if !s.cycle && count > 1 {
        let left = match p.next {
            None => 0,
            Some(v) if s.increment > 0 => (s.max - v) / s.increment + 1,
            Some(v) => (v - s.min) / -s.increment + 1,
        };
        if left < i128::from(count) {
            return Err(msg::SEQUENCE_RANGE_EXCEEDED.with(&[&s.name]));
        }
    }
    let (mut first, mut cycles) = (None, 0);
    for taken in 0..count {
        let Some(v) = p.next else {
            return Err(msg::SEQUENCE_EXHAUSTED.with(&[&s.name]));
        };
        if first.is_some() && p.last.is_some_and(|last| (v < last) == (s.increment > 0)) {
            cycles += 1;
        }
        first.get_or_insert(v);
        if p.covered == 0 {
            // Values up to the end of the sequence: a cache's worth, or what the range
            // still needs, in one durable write.
            let room = if s.increment > 0 { (s.max - v) / s.increment } else { (v - s.min) / -s.increment } + 1;
            let wanted = i128::from(s.cache.unwrap_or(1)).max(i128::from(count - taken));
            let n = room.clamp(1, wanted);
            write(database, s.id, s.restarts, v + s.increment * (n - 1))?;
            p.covered = n as u64;
        }
        p.covered -= 1;
        p.next = step(s, v);
        p.last = Some(v);
    }
    let last = p.last.expect("a value taken");
    Ok((first.expect("a value taken"), last, cycles))
}

/// `v` as a value of the sequence's type.
fn as_value(v: i128, ty: &SqlType) -> SqlResult<Value> {
    types::cast(&Value::Decimal { value: v, scale: 0 }, &SqlType::Decimal { precision: 38, scale: 0 }, ty, None)
}

/// The smallest and largest value of a sequence's type (11702 for a type a sequence may
/// not have).
fn type_range(ty: &SqlType, name: &str) -> SqlResult<(i128, i128)> {
    Ok(match ty {
        SqlType::TinyInt => (0, 255),
        SqlType::SmallInt => (i16::MIN.into(), i16::MAX.into()),
        SqlType::Int => (i32::MIN.into(), i32::MAX.into()),
        SqlType::BigInt => (i64::MIN.into(), i64::MAX.into()),
        SqlType::Decimal { precision, scale: 0 } => {
            let bound = 10i128.pow(u32::from(*precision)) - 1;
            (-bound, bound)
        }
        _ => return Err(msg::SEQUENCE_TYPE_INVALID.with(&[&name])),
    })
}

/// `s` with `o` applied (a new sequence's defaults first), checked as SQL Server checks it.
fn apply(mut s: Sequence, o: &SequenceOptions, new: bool) -> SqlResult<Sequence> {
    let name = s.name.clone();
    if let Some(ty) = &o.ty {
        s.ty = types::resolve_type(ty, false).map_err(|_| msg::SEQUENCE_TYPE_INVALID.with(&[&name]))?;
    }
    let (low, high) = type_range(&s.ty, &name)?;
    let fits = |v: i128, option: &str| {
        if v < low || v > high {
            Err(msg::SEQUENCE_VALUE_OUT_OF_TYPE.with(&[&option]))
        } else {
            Ok(v)
        }
    };
    if let Some(i) = o.increment {
        s.increment = fits(i, "INCREMENT")?;
    }
    if s.increment == 0 {
        return Err(msg::SEQUENCE_INCREMENT_ZERO.with(&[&name]));
    }
    match o.min {
        Some(Some(m)) => s.min = fits(m, "MINVALUE")?,
        Some(None) => s.min = low,
        None if new => s.min = low,
        None => {}
    }
    match o.max {
        Some(Some(m)) => s.max = fits(m, "MAXVALUE")?,
        Some(None) => s.max = high,
        None if new => s.max = high,
        None => {}
    }
    if s.min >= s.max {
        return Err(msg::SEQUENCE_MIN_NOT_BELOW_MAX.with(&[&name]));
    }
    if s.increment.unsigned_abs() > (s.max - s.min).unsigned_abs() {
        return Err(msg::SEQUENCE_INCREMENT_TOO_LARGE.with(&[&name]));
    }
    if new {
        // SQL Server's default start: the minimum going up, the maximum going down.
        s.start = match o.start {
            Some(v) => fits(v, "START WITH")?,
            None if s.increment > 0 => s.min,
            None => s.max,
        };
        s.restart_at = s.start;
    }
    if let Some(restart) = o.restart {
        s.restarts += 1;
        s.restart_at = match restart {
            Some(v) => fits(v, "RESTART WITH")?,
            None => s.start,
        };
    }
    if s.start < s.min || s.start > s.max || s.restart_at < s.min || s.restart_at > s.max {
        return Err(msg::SEQUENCE_START_OUT_OF_RANGE.with(&[&name]));
    }
    if let Some(c) = o.cycle {
        s.cycle = c;
    }
    match o.cache {
        Some(SequenceCache::None) => s.cache = None,
        Some(SequenceCache::Default) => s.cache = Some(DEFAULT_CACHE),
        Some(SequenceCache::Size(n)) if n <= 0 => return Err(msg::SEQUENCE_CACHE_NOT_POSITIVE.with(&[&name])),
        Some(SequenceCache::Size(n)) => s.cache = Some(n.min(MAX_CACHE) as u32),
        None if new => s.cache = Some(DEFAULT_CACHE),
        None => {}
    }
    Ok(s)
}

/// The sequence `name` names in the current database, with its database.
pub fn find(ctx: &ExecCtx, name: &ObjectName) -> SqlResult<Option<(Arc<Database>, Arc<Sequence>)>> {
    let (db, schema, obj) = Binder::new(ctx.shared, &*ctx.session, &[]).qualify(name)?;
    if !ctx.shared.engine.exists(&db) {
        return Ok(None);
    }
    let database = ctx.shared.database(&db)?;
    let found = match ctx.catalog(&database)?.lookup(&schema, &obj) {
        Some(Object::Sequence(s)) if !ctx.dropped(database.name(), s.id) => Some(s.clone()),
        _ => None,
    };
    Ok(found.map(|s| (database, s)))
}

/// Makes `after` the definition in place of `before` (None: a new or dropped sequence), in
/// the session's transaction: locked to its end, undone by its rollback.
fn save(
    ctx: &mut ExecCtx,
    database: &Arc<Database>,
    before: Option<Arc<Sequence>>,
    after: Option<Sequence>,
) -> SqlResult<()> {
    let shared = ctx.shared;
    shared.alter_catalog(database, |catalog: &Catalog, version| {
        let before = before.map(Object::Sequence);
        match after {
            Some(s) => {
                let object = Object::Sequence(Arc::new(s));
                ctx.redefine_in_transaction(database, before, Some(object.clone()))?;
                Ok((catalog.with(object, version), ()))
            }
            // Gone for this session at once, for the others when the transaction commits.
            None => {
                ctx.redefine_in_transaction(database, before, None)?;
                Ok((catalog.clone(), ()))
            }
        }
    })
}

/// `CREATE SEQUENCE name …` in the current database.
pub fn create(ctx: &mut ExecCtx, name: &ObjectName, options: &SequenceOptions) -> SqlResult<()> {
    let (db, schema, obj) = Binder::new(ctx.shared, &*ctx.session, &[]).qualify_new(name)?;
    if !db.eq_ignore_ascii_case(&ctx.session.database) {
        return Err(msg::DATABASE_PREFIX_NOT_ALLOWED.with(&[&"SEQUENCE"]));
    }
    if obj.starts_with('#') {
        return Err(msg::SEQUENCE_TYPE_INVALID.with(&[&obj]));
    }
    let database = ctx.shared.database(&db)?;
    if ctx.shared.security(&ctx.session.catalog_memo, &db)?.schema(&schema).is_none() {
        return Err(msg::SCHEMA_NOT_FOUND.with(&[&schema]));
    }
    let catalog = ctx.catalog(&database)?;
    if catalog.lookup(&schema, &obj).is_some_and(|o| !ctx.dropped(database.name(), o.id())) {
        return Err(msg::OBJECT_ALREADY_EXISTS.with(&[&"an object", &obj]));
    }
    let now = catalog::now_epoch();
    let draft = Sequence {
        id: 0,
        schema,
        name: obj,
        ty: SqlType::BigInt,
        start: 0,
        increment: 1,
        min: 0,
        max: 0,
        cycle: false,
        cache: None,
        restarts: 0,
        restart_at: 0,
        created: now,
        modified: now,
        properties: Vec::new(),
    };
    let mut s = apply(draft, options, true)?;
    let shared = ctx.shared;
    shared.alter_catalog(&database, |catalog: &Catalog, version| {
        let mut c = catalog.clone();
        s.id = c.allocate_id()?;
        let object = Object::Sequence(Arc::new(s));
        ctx.redefine_in_transaction(&database, None, Some(object.clone()))?;
        Ok((c.with(object, version), ()))
    })
}

/// `ALTER SEQUENCE name …`.
pub fn alter(ctx: &mut ExecCtx, name: &ObjectName, options: &SequenceOptions) -> SqlResult<()> {
    let shown = name.name().value.clone();
    let (database, before) = find(ctx, name)?.ok_or_else(|| msg::INVALID_OBJECT_NAME.with(&[&shown]))?;
    let mut after = apply((*before).clone(), options, false)?;
    after.modified = catalog::now_epoch();
    save(ctx, &database, Some(before), Some(after))
}

/// `DROP SEQUENCE [IF EXISTS] name`: its position goes with it.
pub fn drop(ctx: &mut ExecCtx, name: &ObjectName, if_exists: bool) -> SqlResult<()> {
    let Some((database, before)) = find(ctx, name)? else {
        if if_exists {
            return Ok(());
        }
        return Err(msg::DROP_OBJECT_NOT_FOUND.with(&[&"sequence", &name.name().value]));
    };
    if let Some(t) = database.table(TREE) {
        ctx.transaction(database.name())?.delete(t, &key(before.id))?;
    }
    ctx.shared.sequences.forget(database.name(), &before);
    save(ctx, &database, Some(before), None)
}

/// Changes the extended properties of the sequence `before` of `database`
/// (sp_addextendedproperty and its kin; the caller checked what it may do).
pub fn change_properties(
    ctx: &mut ExecCtx,
    database: &Arc<Database>,
    before: Arc<Sequence>,
    change: impl FnOnce(&mut Vec<catalog::Property>) -> SqlResult<()>,
) -> SqlResult<()> {
    let mut after = (*before).clone();
    change(&mut after.properties)?;
    save(ctx, database, Some(before), Some(after))
}

/// sp_rename of the sequence `before` of `database` to `new` (the caller found it with
/// [`find`] and checked the name is free).
pub fn rename(ctx: &mut ExecCtx, database: &Arc<Database>, before: Arc<Sequence>, new: &str) -> SqlResult<()> {
    let renamed = Sequence { name: new.to_string(), modified: catalog::now_epoch(), ..(*before).clone() };
    save(ctx, database, Some(before), Some(renamed))
}

/// What sys.sequences shows of a sequence's position: the current value (the last handed
/// out, or the start value before any), whether it is exhausted, and the last value
/// handed out. After a restart of the server, until the sequence is used, the last value
/// is what storage says may have been handed out (the end of the cache), as SQL Server's.
pub fn shown_position(ctx: &ExecCtx, db: &str, s: &Sequence) -> SqlResult<(Value, bool, Option<Value>)> {
    let database = ctx.shared.database(db)?;
    let position = ctx.shared.sequences.position(database.name(), s);
    let p = position.lock();
    let loaded = p.loaded == Some(s.restarts);
    let last = match p.last.filter(|_| loaded) {
        Some(v) => Some(v),
        None => read(&database, s.id)?.filter(|(restarts, _)| *restarts == s.restarts).map(|(_, last)| last),
    };
    let exhausted = loaded && p.next.is_none();
    let current = as_value(last.unwrap_or(s.restart_at), &s.ty)?;
    Ok((current, exhausted, last.map(|v| as_value(v, &s.ty)).transpose()?))
}
