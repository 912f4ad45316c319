//! The stored Resource Governor configuration: one JSON row of the tree
//! `sys$resource_governor` in master (absent: the defaults, governor disabled).

use std::ops::Bound;
use std::sync::Arc;

use tessera_database::{Database, Direction};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};

use super::Configuration;

const TREE: &str = "sys$resource_governor";
const KEY: &[u8] = b"configuration";

/// SQL Server's 10920, for a row that does not read back.
fn damaged(_: serde_json::Error) -> SqlError {
    msg::RG_CONFIG_READ_FAILED.err()
}

pub(super) fn load(master: &Arc<Database>) -> SqlResult<Configuration> {
    let Some(tree) = master.table(TREE) else { return Ok(Configuration::default()) };
    let tx = master.begin();
    let mut config = Configuration::default();
    for item in tx.scan(tree, Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
        let (_, v) = item?;
        config = serde_json::from_slice(&v).map_err(damaged)?;
    }
    tx.commit()?;
    Ok(config)
}

pub(super) fn save(master: &Arc<Database>, config: &Configuration) -> SqlResult<()> {
    let tree = match master.table(TREE) {
        Some(t) => t,
        None => master.create_table(TREE)?,
    };
    let value = serde_json::to_vec(config).map_err(|e| SqlError::new(50000, e.to_string()))?;
    let mut tx = master.begin();
    if !tx.update(tree, KEY, &value)? {
        tx.insert(tree, KEY, &value)?;
    }
    tx.commit()?;
    Ok(())
}
