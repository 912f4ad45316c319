//! Resource Governor's statements: resource pools, workload groups and the governor's
//! own configuration (`ALTER RESOURCE GOVERNOR`).

use super::{Ident, ObjectName};

/// An option's value: a number (`MAX_CPU_PERCENT = 20`) or a word (`IMPORTANCE = LOW`,
/// `AFFINITY SCHEDULER = AUTO`; upper-cased); a parenthesized list is kept as its text.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Number(i64),
    Word(String),
}

/// `NAME = value` in a pool's or group's `WITH (…)`; the name upper-cased (two words for
/// `AFFINITY SCHEDULER` and `AFFINITY NUMANODE`).
#[derive(Clone, Debug, PartialEq)]
pub struct GovernorOption {
    pub name: String,
    pub value: OptionValue,
}

#[derive(Clone, Debug, PartialEq)]
pub enum GovernorStatement {
    /// `CREATE RESOURCE POOL p [WITH (…)]`
    CreatePool { name: Ident, options: Vec<GovernorOption> },
    /// `ALTER RESOURCE POOL p [WITH (…)]`
    AlterPool { name: Ident, options: Vec<GovernorOption> },
    /// `DROP RESOURCE POOL p`
    DropPool(Ident),
    /// `CREATE WORKLOAD GROUP g [WITH (…)] [USING pool]`
    CreateGroup { name: Ident, options: Vec<GovernorOption>, pool: Option<Ident> },
    /// `ALTER WORKLOAD GROUP g [WITH (…)] [USING pool]`
    AlterGroup { name: Ident, options: Vec<GovernorOption>, pool: Option<Ident> },
    /// `DROP WORKLOAD GROUP g`
    DropGroup(Ident),
    /// `ALTER RESOURCE GOVERNOR RECONFIGURE`: the stored configuration takes effect (and
    /// the governor is enabled).
    Reconfigure,
    /// `ALTER RESOURCE GOVERNOR DISABLE`
    Disable,
    /// `ALTER RESOURCE GOVERNOR RESET STATISTICS`
    ResetStatistics,
    /// `ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = schema.f | NULL)`
    Classifier(Option<ObjectName>),
}
