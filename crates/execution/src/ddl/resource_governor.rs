//! Resource Governor's statements, checked as SQL Server checks them (CONTROL SERVER;
//! errors 10902–10922, 15151) and applied to the stored configuration.

use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::governor::{GovernorOption, GovernorStatement, OptionValue};
use tessera_syntax::ast::{self, Ident, ObjectName, StatementKind};

use crate::runtime::ExecCtx;
use tessera_governance::resource_governor::{
    Classifier, Configuration, Group, Pool, DEFAULT_ID, INTERNAL_ID, MAX_GROUPS, MAX_POOLS,
};

/// Runs one statement. `in_transaction`: the session has a transaction open (574).
pub fn execute(ctx: &mut ExecCtx, statement: &GovernorStatement, in_transaction: bool) -> SqlResult<()> {
    if !ctx.shared.holds_server(ctx.session, "CONTROL SERVER") {
        return Err(msg::RESOURCE_GOVERNOR_DENIED.err());
    }
    if in_transaction {
        let what = match statement {
            GovernorStatement::CreatePool { .. } => "CREATE RESOURCE POOL",
            GovernorStatement::AlterPool { .. } => "ALTER RESOURCE POOL",
            GovernorStatement::DropPool(_) => "DROP RESOURCE POOL",
            GovernorStatement::CreateGroup { .. } => "CREATE WORKLOAD GROUP",
            GovernorStatement::AlterGroup { .. } => "ALTER WORKLOAD GROUP",
            GovernorStatement::DropGroup(_) => "DROP WORKLOAD GROUP",
            _ => "ALTER RESOURCE GOVERNOR",
        };
        return Err(msg::NOT_IN_USER_TRANSACTION.with(&[&what]));
    }
    let rg = &ctx.shared.resource_governor;
    match statement {
        GovernorStatement::CreatePool { name, options } => rg.change(|c| create_pool(c, name, options)),
        GovernorStatement::AlterPool { name, options } => rg.change(|c| alter_pool(c, name, options)),
        GovernorStatement::DropPool(name) => rg.change(|c| drop_pool(c, name)),
        GovernorStatement::CreateGroup { name, options, pool } => {
            rg.change(|c| create_group(c, name, options, pool.as_ref()))
        }
        GovernorStatement::AlterGroup { name, options, pool } => {
            rg.change(|c| alter_group(c, name, options, pool.as_ref()))
        }
        GovernorStatement::DropGroup(name) => rg.change(|c| drop_group(c, name)),
        GovernorStatement::Classifier(function) => {
            let classifier = function.as_ref().map(|f| classifier(ctx, f)).transpose()?;
            ctx.shared.resource_governor.change(|c| {
                c.classifier = classifier;
                Ok(())
            })
        }
        GovernorStatement::Reconfigure => rg.apply(true),
        GovernorStatement::Disable => rg.apply(false),
        GovernorStatement::ResetStatistics => {
            rg.reset_statistics();
            Ok(())
        }
    }
}

fn check_new_name(kind: &str, name: &Ident, exists: bool) -> SqlResult<()> {
    if name.value.starts_with('#') {
        return Err(msg::RG_NAME_STARTS_WITH_HASH.with(&[&kind, &name.value]));
    }
    if exists {
        return Err(msg::RG_OBJECT_ALREADY_EXISTS.with(&[&kind, &name.value]));
    }
    Ok(())
}

fn no_pool(name: &Ident) -> SqlError {
    msg::RESOURCE_POOL_NOT_FOUND.with(&[&name.value])
}

fn no_group(verb: &str, name: &Ident) -> SqlError {
    msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&verb, &"workload group", &name.value])
}

fn greater(a: &str, x: u32, b: &str, y: u32) -> SqlError {
    msg::RG_ATTRIBUTE_ABOVE_LIMIT.with(&[&a, &x, &b, &y])
}

fn less(a: &str, x: u32, b: &str, y: u32) -> SqlError {
    msg::RG_ATTRIBUTE_BELOW_LIMIT.with(&[&a, &x, &b, &y])
}

/// An option's whole-number value within `min..=max`.
fn number(option: &GovernorOption, min: u32, max: u32) -> SqlResult<u32> {
    let n = match &option.value {
        OptionValue::Number(n) => *n,
        OptionValue::Word(w) => {
            return Err(msg::SYNTAX_ERROR_NEAR.with(&[&w]));
        }
    };
    let name = option.name.as_str();
    match u32::try_from(n) {
        Ok(n) if n < min => Err(less(name, n, "minimum value", min)),
        Ok(n) if n > max => Err(greater(name, n, "maximum value", max)),
        Ok(n) => Ok(n),
        Err(_) if n < 0 => Err(less(name, 0, "minimum value", min)),
        Err(_) => Err(greater(name, u32::MAX, "maximum value", max)),
    }
}

fn unknown_option(option: &GovernorOption) -> SqlError {
    msg::SYNTAX_ERROR_NEAR.with(&[&option.name])
}

fn set_pool_options(pool: &mut Pool, options: &[GovernorOption]) -> SqlResult<()> {
    for o in options {
        match o.name.as_str() {
            "MIN_CPU_PERCENT" => pool.min_cpu_percent = number(o, 0, 100)?,
            "MAX_CPU_PERCENT" => pool.max_cpu_percent = number(o, 1, 100)?,
            "CAP_CPU_PERCENT" => pool.cap_cpu_percent = number(o, 1, 100)?,
            "MIN_MEMORY_PERCENT" => pool.min_memory_percent = number(o, 0, 100)?,
            "MAX_MEMORY_PERCENT" => pool.max_memory_percent = number(o, 1, 100)?,
            "MIN_IOPS_PER_VOLUME" => pool.min_iops_per_volume = number(o, 0, i32::MAX as u32)?,
            "MAX_IOPS_PER_VOLUME" => pool.max_iops_per_volume = number(o, 0, i32::MAX as u32)?,
            // Pools run on every CPU the server may use (sp_configure 'affinity mask').
            "AFFINITY SCHEDULER" | "AFFINITY NUMANODE" if o.value == OptionValue::Word("AUTO".into()) => {}
            "AFFINITY SCHEDULER" | "AFFINITY NUMANODE" => {
                return Err(msg::DATABASE_OPTION_NOT_SETTABLE
                    .with(&[&format!("Option '{}' other than AUTO cannot be set in", o.name), &"master"]))
            }
            _ => return Err(unknown_option(o)),
        }
    }
    let p = &*pool;
    if p.min_cpu_percent > p.max_cpu_percent {
        return Err(greater("MIN_CPU_PERCENT", p.min_cpu_percent, "MAX_CPU_PERCENT", p.max_cpu_percent));
    }
    if p.min_cpu_percent > p.cap_cpu_percent {
        return Err(greater("MIN_CPU_PERCENT", p.min_cpu_percent, "CAP_CPU_PERCENT", p.cap_cpu_percent));
    }
    if p.min_memory_percent > p.max_memory_percent {
        return Err(greater("MIN_MEMORY_PERCENT", p.min_memory_percent, "MAX_MEMORY_PERCENT", p.max_memory_percent));
    }
    if p.max_iops_per_volume > 0 && p.min_iops_per_volume > p.max_iops_per_volume {
        return Err(greater(
            "MIN_IOPS_PER_VOLUME",
            p.min_iops_per_volume,
            "MAX_IOPS_PER_VOLUME",
            p.max_iops_per_volume,
        ));
    }
    Ok(())
}

/// The pools' minimums may not add up to more than 100 % (10911).
fn check_minimums(c: &Configuration, changed: &Pool) -> SqlResult<()> {
    let sums = [
        ("MIN_CPU_PERCENT", changed.min_cpu_percent, c.pools.iter().map(|p| p.min_cpu_percent).sum::<u32>()),
        ("MIN_MEMORY_PERCENT", changed.min_memory_percent, c.pools.iter().map(|p| p.min_memory_percent).sum()),
    ];
    for (name, value, sum) in sums {
        if sum > 100 {
            return Err(msg::RESOURCE_POOL_MIN_SUM_EXCEEDED.with(&[&name, &value]));
        }
    }
    Ok(())
}

fn create_pool(c: &mut Configuration, name: &Ident, options: &[GovernorOption]) -> SqlResult<()> {
    check_new_name("resource pool", name, c.pool(&name.value).is_some())?;
    if c.pools.len() >= MAX_POOLS {
        return Err(msg::TOO_MANY_RESOURCE_POOLS.with(&[&MAX_POOLS]));
    }
    let mut pool = Pool::new(Configuration::next_id(c.pools.iter().map(|p| p.id)), &name.value);
    set_pool_options(&mut pool, options)?;
    c.pools.push(pool.clone());
    check_minimums(c, &pool)
}

fn alter_pool(c: &mut Configuration, name: &Ident, options: &[GovernorOption]) -> SqlResult<()> {
    let Some(at) = c.pools.iter().position(|p| p.name.eq_ignore_ascii_case(&name.value)) else {
        return Err(no_pool(name));
    };
    if c.pools[at].id == INTERNAL_ID {
        return Err(msg::ALTER_PREDEFINED_NOT_ALLOWED.with(&[&"internal", &"resource pool"]));
    }
    set_pool_options(&mut c.pools[at], options)?;
    let pool = c.pools[at].clone();
    check_minimums(c, &pool)
}

fn drop_pool(c: &mut Configuration, name: &Ident) -> SqlResult<()> {
    let Some(pool) = c.pool(&name.value).cloned() else { return Err(no_pool(name)) };
    if pool.id <= DEFAULT_ID {
        return Err(msg::DROP_PREDEFINED_NOT_ALLOWED.with(&[&"resource pool"]));
    }
    if let Some(g) = c.groups.iter().find(|g| g.pool_id == pool.id) {
        return Err(msg::RESOURCE_POOL_HAS_GROUPS.with(&[&pool.name, &g.name]));
    }
    c.pools.retain(|p| p.id != pool.id);
    Ok(())
}

fn set_group_options(group: &mut Group, options: &[GovernorOption]) -> SqlResult<()> {
    for o in options {
        match o.name.as_str() {
            "IMPORTANCE" => match &o.value {
                OptionValue::Word(w) if ["LOW", "MEDIUM", "HIGH"].contains(&w.as_str()) => group.importance = w.clone(),
                OptionValue::Word(w) => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&w])),
                OptionValue::Number(n) => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&n])),
            },
            "REQUEST_MAX_MEMORY_GRANT_PERCENT" => group.request_max_memory_grant_percent = number(o, 0, 100)?,
            "REQUEST_MAX_CPU_TIME_SEC" => group.request_max_cpu_time_sec = number(o, 0, i32::MAX as u32)?,
            "REQUEST_MEMORY_GRANT_TIMEOUT_SEC" => {
                group.request_memory_grant_timeout_sec = number(o, 0, i32::MAX as u32)?
            }
            "MAX_DOP" => group.max_dop = number(o, 0, 64)?,
            "GROUP_MAX_REQUESTS" => group.group_max_requests = number(o, 0, i32::MAX as u32)?,
            _ => return Err(unknown_option(o)),
        }
    }
    Ok(())
}

/// The pool a group is put in (`USING p`), refusing `internal` (10914).
fn group_pool(c: &Configuration, verb: &str, group: &str, pool: &Ident) -> SqlResult<i32> {
    let p = c.pool(&pool.value).ok_or_else(|| no_pool(pool))?;
    if p.id == INTERNAL_ID {
        return Err(msg::WORKLOAD_GROUP_OP_NOT_ALLOWED.with(&[&verb, &group, &"internal"]));
    }
    Ok(p.id)
}

fn create_group(
    c: &mut Configuration,
    name: &Ident,
    options: &[GovernorOption],
    pool: Option<&Ident>,
) -> SqlResult<()> {
    check_new_name("workload group", name, c.group(&name.value).is_some())?;
    if c.groups.len() >= MAX_GROUPS {
        return Err(SqlError::new(50000, format!("The server holds at most {MAX_GROUPS} workload groups.")));
    }
    let pool_id = match pool {
        Some(p) => group_pool(c, "create", &name.value, p)?,
        None => DEFAULT_ID,
    };
    let mut group = Group::new(Configuration::next_id(c.groups.iter().map(|g| g.id)), &name.value, pool_id);
    set_group_options(&mut group, options)?;
    c.groups.push(group);
    Ok(())
}

fn alter_group(c: &mut Configuration, name: &Ident, options: &[GovernorOption], pool: Option<&Ident>) -> SqlResult<()> {
    if options.is_empty() && pool.is_none() {
        return Err(msg::ALTER_WORKLOAD_GROUP_NO_CLAUSE.err());
    }
    let Some(at) = c.groups.iter().position(|g| g.name.eq_ignore_ascii_case(&name.value)) else {
        return Err(no_group("alter", name));
    };
    let id = c.groups[at].id;
    if id == INTERNAL_ID {
        return Err(msg::ALTER_PREDEFINED_NOT_ALLOWED.with(&[&"internal", &"workload group"]));
    }
    if let Some(p) = pool {
        let pool_id = group_pool(c, "move", &name.value, p)?;
        if id == DEFAULT_ID && pool_id != DEFAULT_ID {
            return Err(msg::WORKLOAD_GROUP_CANNOT_MOVE.with(&[
                &"default",
                &"workload group",
                &"default",
                &"resource pool",
            ]));
        }
        c.groups[at].pool_id = pool_id;
    }
    set_group_options(&mut c.groups[at], options)
}

fn drop_group(c: &mut Configuration, name: &Ident) -> SqlResult<()> {
    let Some(group) = c.group(&name.value).cloned() else { return Err(no_group("drop", name)) };
    if group.id <= DEFAULT_ID {
        return Err(msg::DROP_PREDEFINED_NOT_ALLOWED.with(&[&"workload group"]));
    }
    c.groups.retain(|g| g.id != group.id);
    Ok(())
}

/// `CLASSIFIER_FUNCTION = [schema.]f`: a scalar function in master without parameters,
/// schema-bound, returning sysname (10903, 10904, 10907).
fn classifier(ctx: &ExecCtx, function: &ObjectName) -> SqlResult<Classifier> {
    let parts: Vec<&str> = function.0.iter().map(|i| i.value.as_str()).collect();
    let (database, schema, name) = match parts.as_slice() {
        [name] => ("master", "dbo", *name),
        [schema, name] => ("master", *schema, *name),
        [database, schema, name] => (*database, if schema.is_empty() { "dbo" } else { *schema }, *name),
        _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&parts.join(".")])),
    };
    let shown = format!("{schema}.{name}");
    let missing = || msg::CLASSIFIER_FUNCTION_NOT_FOUND.with(&[&shown]);
    if !database.eq_ignore_ascii_case("master") {
        return Err(missing());
    }
    let master = ctx.shared.catalog_named("master")?;
    let security = ctx.shared.security(&ctx.session.catalog_memo, "master")?;
    if security.schema(schema).is_none() {
        return Err(msg::CLASSIFIER_SCHEMA_NOT_FOUND.with(&[&schema]));
    }
    let module = master
        .catalog
        .module(schema, name)
        .filter(|m| m.kind == tessera_semantics::catalog::ModuleKind::ScalarFunction);
    let module = module.ok_or_else(missing)?;
    let invalid = || msg::INVALID_CLASSIFIER_FUNCTION.with(&[&module.schema, &module.name]);
    let batch = tessera_syntax::parser::parse_batch(&module.text).map_err(|_| invalid())?;
    let valid = batch.statements.iter().any(|s| match &s.kind {
        StatementKind::CreateFunction(f) => match &f.returns {
            ast::FunctionReturns::Scalar { ty, schema_bound, .. } => {
                let sysname = ty.name.eq_ignore_ascii_case("sysname")
                    || (ty.name.eq_ignore_ascii_case("nvarchar") && ty.args == [ast::TypeArg::Number(128)]);
                sysname && *schema_bound && f.params.is_empty()
            }
            _ => false,
        },
        _ => false,
    });
    if !valid {
        return Err(invalid());
    }
    Ok(Classifier { schema: module.schema.clone(), name: module.name.clone() })
}

/// DROP or ALTER of the classifier function is refused (10921).
pub fn check_not_classifier(ctx: &ExecCtx, verb: &str, database: &str, schema: &str, name: &str) -> SqlResult<()> {
    let stored = ctx.shared.resource_governor.stored();
    match stored.classifier {
        Some(c)
            if database.eq_ignore_ascii_case("master")
                && c.schema.eq_ignore_ascii_case(schema)
                && c.name.eq_ignore_ascii_case(name) =>
        {
            Err(msg::CLASSIFIER_FUNCTION_IN_USE.with(&[&verb, &format!("{schema}.{name}")]))
        }
        _ => Ok(()),
    }
}
