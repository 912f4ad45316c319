//! What a statement's run gives its database's Query Store: its measures, its waits by
//! category (when the store keeps them), and, at its plan's first run, what the
//! statement is (its text, the settings it was compiled under, its plan).

use std::sync::Arc;

use tessera_execution::fnv::{fnv1a, START};
use tessera_execution::query_store::memory::text_hash;
use tessera_execution::query_store::{rows::ContextRow, Described, PlanText, QueryStore, Ran, WAIT_CATEGORIES};
use tessera_semantics::cache::{Found, PlanIdentity, Run};
use tessera_semantics::catalog::{DbRef, Table};
use tessera_semantics::plan::{PlanSite, Prepared};
use tessera_syntax::ast::Statement;
use tessera_waits::{WaitType, WAIT_TYPES};

use super::Runner;
use tessera_errors::SqlResult;

/// Where a run's waits are measured from: the thread's waits so far, per type.
pub(super) type WaitMark = [u64; WAIT_TYPES];

impl Runner<'_> {
    /// The Query Store the statement about to run is counted in (None: its database has
    /// none capturing), and where its waits start when the store keeps them.
    pub(super) fn query_store_start(&self) -> Option<(Arc<QueryStore>, Option<WaitMark>)> {
        let store = self.shared.query_store(&self.state.catalog_memo, &self.state.database)?;
        let mark = store.wants_waits().then(tessera_waits::waited_by_type);
        Some((store, mark))
    }

    /// Counts a finished run of `s` (which ran `found`'s plan) in `store`.
    pub(super) fn query_store_record(
        &self,
        (store, mark): (Arc<QueryStore>, Option<WaitMark>),
        s: &Statement,
        found: &Found<Prepared>,
        run: Run,
        outcome: &SqlResult<()>,
    ) {
        let execution_type = match outcome {
            Ok(()) => 0,
            // Cancelled by the client (an attention) or a KILL: Aborted.
            Err(e) if e.number == 3617 => 3,
            Err(_) => 4,
        };
        let waits = mark.map(|before| {
            let now = tessera_waits::waited_by_type();
            let mut ms = [0.0; WAIT_CATEGORIES];
            for (i, kind) in WaitType::ALL.iter().enumerate() {
                ms[usize::from(kind.category().id())] += now[i].saturating_sub(before[i]) as f64 / 1000.0;
            }
            ms
        });
        let ran = Ran {
            execution_type,
            ended_ms: run.ended_ms,
            values: [
                run.elapsed_us as f64,
                run.worker_us as f64,
                run.logical_reads as f64,
                run.physical_reads as f64,
                run.rows as f64,
            ],
            waits,
        };
        let database = || self.shared.database_memo(&self.state.catalog_memo, &self.state.database);
        let recorded = store.record(database, found.stats.id, &ran, || self.describe_statement(s, found));
        if let Err(e) = recorded {
            let line = format!("Query Store of database '{}' could not count a run: {}", store.database, e.message);
            self.shared.write_errorlog(self.state.spid, &line);
        }
    }

    /// What Query Store keeps of a statement in this database: the plan's identity (its
    /// text and hashes, worked out once for every database sharing the plan), its session
    /// settings, the module it is in, and its plan, rendered only when written or read.
    fn describe_statement(&self, s: &Statement, found: &Found<Prepared>) -> Described {
        let vars: Arc<[(String, tessera_semantics::types::SqlType)]> = Arc::from(self.frame.decls.as_slice());
        let identity = found.stats.identity(|| {
            let text = self.batch.text.get(s.span.0..s.span.1).unwrap_or_default().trim();
            // The plan's shape, with no database's names: alike for every tenant.
            let neutral = |_: &DbRef, def: &Arc<Table>| (Arc::from(""), def.clone());
            let site = PlanSite { database: "", table: &neutral };
            let shape = tessera_semantics::plan::statement_plan(&found.plan, &vars, &site).join("\n");
            PlanIdentity {
                text: Arc::from(text),
                text_hash: text_hash(text),
                plan_hash: fnv1a(START, shape.as_bytes()),
            }
        });
        let plan = found.plan.clone();
        let plan_text: PlanText =
            Arc::new(move |at: &PlanSite| tessera_semantics::plan::statement_plan(&plan, &vars, at).join("\n"));
        let object_id = match (&self.procedure, &self.owner) {
            (Some(name), Some(module)) => (self.state.catalog_of(self.shared, &module.db).ok())
                .and_then(|of| of.catalog.module(&module.schema, name).map(|m| i64::from(m.id)))
                .unwrap_or(0),
            _ => 0,
        };
        let default_schema_id = (self.shared.security(&self.state.catalog_memo, &self.state.database).ok())
            .and_then(|security| security.schema(&self.state.default_schema).map(|s| i64::from(s.id)))
            .unwrap_or(1);
        Described {
            identity,
            context: self.context_settings(default_schema_id),
            object_id,
            plan_text,
            batch_handle: self.batch.handle,
            batch_offsets: found.stats.offsets,
            compiled_ms: found.stats.created_ms,
            compile_us: i64::try_from(found.stats.bind_us).unwrap_or(i64::MAX),
        }
    }

    /// The session's plan-affecting settings, with SQL Server's `set_options` bits (as
    /// `sys.dm_exec_plan_attributes` numbers them).
    fn context_settings(&self, default_schema_id: i64) -> ContextRow {
        let o = &self.state.options;
        let bits = [
            (o.ansi_padding, 1),
            (o.concat_null_yields_null, 8),
            (o.ansi_warnings, 16),
            (o.ansi_nulls, 32),
            (o.quoted_identifier, 64),
            (o.ansi_null_dflt_on, 128),
            (o.ansi_null_dflt_off, 256),
            (o.arithabort, 4096),
            (o.numeric_roundabort, 8192),
        ];
        let set_options = bits.iter().filter(|(on, _)| *on).map(|(_, bit)| bit).sum();
        let date_format = match o.dateformat.as_str() {
            "dmy" => 2,
            "ymd" => 3,
            "ydm" => 4,
            "myd" => 5,
            "dym" => 6,
            _ => 1,
        };
        ContextRow { set_options, language_id: 0, date_format, date_first: o.datefirst, default_schema_id }
    }
}
