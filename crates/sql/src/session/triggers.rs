//! DML triggers: which ones a data change fires, and running each once per kind of change
//! the statement made, after the change and before its DONE, with the rows it changed as
//! `inserted` and `deleted`.
//!
//! An INSTEAD OF trigger (on a table or a view, one per kind of change) runs in place of
//! the statement: the statement's rows are worked out but not stored
//! (`tessera_execution::dml::take_insert` and the others), and the trigger gets them.
//! A statement the trigger runs against its own table or view is not taken again: it
//! changes the table as if there were no INSTEAD OF trigger (a view's is refused, 40539,
//! as tessera changes no view directly), and fires the table's AFTER triggers.
//!
//! A trigger runs one nesting level down, in the statement's transaction (an autocommit
//! statement's counts as one: @@TRANCOUNT is 1 inside), under XACT_ABORT as SQL Server
//! runs triggers: an error in it rolls the transaction back and ends the batch. A
//! transaction a trigger ends (ROLLBACK, COMMIT) ends the batch with 3609. A trigger does
//! not fire itself again through its own changes unless its database has
//! RECURSIVE_TRIGGERS ON; other triggers nest up to 32 levels (217), unless the server's
//! `nested triggers` option is 0 (a trigger's changes then fire no AFTER trigger).

use super::{Runner, Stop};
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::dml::BoundTarget;
use tessera_execution::runtime::{ExecCtx, Transitions, TriggerFrame};
use tessera_semantics::catalog::{Module, Table};
use tessera_semantics::plan::{OutputPlan, Target};
use tessera_syntax::ast::{Statement, StatementKind, TriggerEvents};

/// A trigger a data change fires: its definition, and the table (in its database).
pub(super) struct Firing {
    module: Arc<Module>,
    db: String,
    table: Arc<Table>,
    events: TriggerEvents,
}

/// What a data change's triggers make of it: an INSTEAD OF trigger takes it, or it runs
/// and then fires these AFTER triggers (none, most often).
pub(super) enum Triggered {
    Instead(Firing),
    After(Vec<Firing>),
}

impl Runner<'_> {
    /// The triggers a data change of `events` on `target` fires, read from the catalog once
    /// per statement: an enabled INSTEAD OF trigger for the change, unless it is running
    /// already (its own change of its table goes through; none on a view is 40539); else
    /// the enabled AFTER triggers for one of `events`, oldest first, and the session starts
    /// capturing the rows the statement changes. A MERGE (`merge`) whose actions INSTEAD
    /// OF triggers take is refused: 40540 for all of them, 5316 for some. A statement
    /// returning OUTPUT rows to the client cannot change a table with enabled triggers
    /// (334). A bulk load fires none (FIRE_TRIGGERS is not kept).
    pub(super) fn triggered(
        &mut self,
        target: &Target,
        events: TriggerEvents,
        output: Option<&OutputPlan>,
        merge: bool,
    ) -> SqlResult<Triggered> {
        if self.state.bulk_rows.is_some() && !target.view {
            return Ok(Triggered::After(Vec::new()));
        }
        let found = self.triggers_on(target)?;
        let (instead, after): (Vec<_>, Vec<_>) = found.triggers.into_iter().partition(|(m, _)| m.instead_of);
        let output_to_client = output.is_some_and(|o| o.into.is_none());
        if merge {
            refuse_merge(&instead, events, &target.table.name)?;
        } else {
            let running = |m: &Module| self.state.triggers.iter().any(|f| f.trigger == m.id);
            match instead.into_iter().find(|(m, on)| fires_on(*on, events) && !running(m)) {
                Some((module, _)) => {
                    if output_to_client {
                        return Err(msg::TRIGGER_OUTPUT_WITHOUT_INTO.with(&[&target.table.name]));
                    }
                    return Ok(Triggered::Instead(Firing { module, db: found.db, table: found.table, events }));
                }
                None if target.view => {
                    return Err(msg::VIEW_CHANGE_NOT_SUPPORTED.with(&[&target.table.name, &event_word(events)]));
                }
                None => {}
            }
        }
        if after.is_empty() {
            return Ok(Triggered::After(Vec::new()));
        }
        if output_to_client {
            return Err(msg::TRIGGER_OUTPUT_WITHOUT_INTO.with(&[&found.table.name]));
        }
        // With `nested triggers` 0 a trigger's changes fire no AFTER trigger.
        let nested = self.shared.config.run_value(tessera_execution::config::NESTED_TRIGGERS) != Some(0);
        if !self.state.triggers.is_empty() && !nested {
            return Ok(Triggered::After(Vec::new()));
        }
        // RECURSIVE_TRIGGERS ON: a trigger fires again through its own changes.
        let recursive = self.shared.database(&found.db)?.options().recursive_triggers;
        let running = self.state.triggers.last().map(|f| f.trigger);
        let mut fires = Vec::new();
        for (module, on) in after {
            if Some(module.id) == running && !recursive {
                continue;
            }
            let on = TriggerEvents {
                insert: on.insert && events.insert,
                update: on.update && events.update,
                delete: on.delete && events.delete,
            };
            if on != TriggerEvents::default() {
                fires.push(Firing { module, db: found.db.clone(), table: found.table.clone(), events: on });
            }
        }
        if !fires.is_empty() {
            self.state.transitions = Some(Transitions::default());
        }
        Ok(Triggered::After(fires))
    }

    /// The enabled triggers on `target`, oldest first, with the changes each fires on.
    fn triggers_on(&mut self, target: &Target) -> SqlResult<OnTarget> {
        let shared = self.shared;
        let ctx = ExecCtx::new(shared, self.state);
        let (db, table) = if target.view {
            (target.db.name(&ctx.session.database).to_string(), target.table.clone())
        } else {
            let at = target.at(&ctx)?;
            (at.db.to_string(), at.table.clone())
        };
        let database = shared.database(&db)?;
        let catalog = ctx.catalog(&database)?;
        let triggers = catalog
            .triggers_on(table.id)
            .filter(|m| !m.disabled)
            .map(|m| (m.clone(), tessera_execution::runtime::trigger_events(&ctx, m).unwrap_or_default()))
            .collect();
        Ok(OnTarget { db, table, triggers })
    }

    /// Runs `fires` after a statement that changed `count` rows, as `transitions` captured
    /// them: each trigger once per kind of change it fires on.
    pub(super) fn fire(
        &mut self,
        s: &Statement,
        fires: Vec<Firing>,
        transitions: Option<Transitions>,
        count: u64,
    ) -> SqlResult<()> {
        let t = transitions.unwrap_or_default();
        for f in &fires {
            let columns = f.table.columns.len();
            if f.events.insert {
                let frame = frame(f, Vec::new(), t.inserted.clone(), vec![true; columns]);
                self.run_trigger(s, &f.module, &f.db, Some(frame), count)?;
            }
            if f.events.update {
                let mut updated = vec![false; columns];
                for &c in &t.updated_columns {
                    updated[c] = true;
                }
                let (deleted, inserted) = t.updated.iter().cloned().unzip();
                self.run_trigger(s, &f.module, &f.db, Some(frame(f, deleted, inserted, updated)), count)?;
            }
            if f.events.delete {
                let frame = frame(f, t.deleted.clone(), Vec::new(), vec![false; columns]);
                self.run_trigger(s, &f.module, &f.db, Some(frame), count)?;
            }
        }
        Ok(())
    }

    /// Runs trigger `module` of database `db` after a statement that changed `count` rows:
    /// a DML trigger with its frame (`inserted`, `deleted`), a DDL trigger with none (its
    /// event is the session's last, for EVENTDATA()).
    pub(super) fn run_trigger(
        &mut self,
        s: &Statement,
        module: &Module,
        db: &str,
        frame: Option<TriggerFrame>,
        count: u64,
    ) -> SqlResult<()> {
        let cached = self.shared.plans.get_or_parse(&module.text, tessera_syntax::parser::parse_batch)?;
        let Some(StatementKind::CreateTrigger(ct)) = cached.batch.statements.first().map(|st| &st.kind) else {
            return Err(tessera_semantics::bind::invalid_object(&module.name));
        };
        // Its statements chain from its owner, as a procedure's.
        let security = self.shared.access(self.state, db)?.0;
        let owner = security.schema_owner(&module.schema).unwrap_or(tessera_security::principals::DBO_ID);
        let context = super::permissions::ModuleContext {
            db: db.to_string(),
            schema: module.schema.clone(),
            owner,
            altered_by: module.altered_by,
        };
        let outer = self.state.nest_level;
        self.enter_module_context(&context, &ct.execute_as)?;
        let framed = frame.is_some();
        if let Some(frame) = frame {
            self.state.triggers.push(frame);
        }
        self.state.rowcount = count as i64;
        let autocommit = self.state.txns.count == 0;
        if autocommit {
            self.state.txns.count = 1;
        }
        let xact_abort = std::mem::replace(&mut self.state.options.xact_abort, true);
        self.invoking_trigger = true;
        let result = self.invoke(s, &cached, &[], &ct.body, Some(&module.name), db, Vec::new(), Some(context));
        self.state.options.xact_abort = xact_abort;
        if framed {
            self.state.triggers.pop();
        }
        super::permissions::end_contexts_below(self.state, outer);
        let ended = self.state.txns.count == 0;
        if autocommit && !ended {
            self.state.txns.count = 0;
        }
        match result {
            Ok(_) if ended => Err(msg::TRANSACTION_ENDED_IN_TRIGGER.err()),
            Ok(_) => Ok(()),
            Err(Stop::Error(e)) => Err(e),
            Err(Stop::Abort) => {
                self.nested_aborted = true;
                Err(SqlError::new(50000, "The batch was aborted in a trigger."))
            }
        }
    }
}

/// Triggers on a table or view (in its database), with their events.
struct OnTarget {
    db: String,
    table: Arc<Table>,
    triggers: Vec<(Arc<Module>, TriggerEvents)>,
}

/// A MERGE into a target whose `instead` triggers take some of its actions (`events`):
/// 5316 as in SQL Server, or 40540 when they take all of them.
fn refuse_merge(instead: &[(Arc<Module>, TriggerEvents)], events: TriggerEvents, target: &str) -> SqlResult<()> {
    let none = TriggerEvents::default();
    let kinds = [
        TriggerEvents { insert: true, ..none },
        TriggerEvents { update: true, ..none },
        TriggerEvents { delete: true, ..none },
    ];
    // Per action of the MERGE: whether an INSTEAD OF trigger takes it.
    let taken: Vec<bool> = kinds
        .into_iter()
        .filter(|kind| fires_on(*kind, events))
        .map(|kind| instead.iter().any(|(_, on)| fires_on(*on, kind)))
        .collect();
    if !taken.is_empty() && taken.iter().all(|t| *t) {
        return Err(msg::MERGE_INSTEAD_OF_NOT_SUPPORTED.with(&[&target]));
    }
    if taken.iter().any(|t| *t) {
        return Err(msg::MERGE_INSTEAD_OF_PARTIAL.with(&[&target]));
    }
    Ok(())
}

/// Whether a trigger on `on` fires for any of `events`.
fn fires_on(on: TriggerEvents, events: TriggerEvents) -> bool {
    (on.insert && events.insert) || (on.update && events.update) || (on.delete && events.delete)
}

fn event_word(event: TriggerEvents) -> &'static str {
    match (event.insert, event.update) {
        (true, _) => "INSERT",
        (_, true) => "UPDATE",
        _ => "DELETE",
    }
}

fn frame(
    f: &Firing,
    deleted: Vec<Vec<tessera_semantics::types::Value>>,
    inserted: Vec<Vec<tessera_semantics::types::Value>>,
    updated: Vec<bool>,
) -> TriggerFrame {
    TriggerFrame { trigger: f.module.id, db: f.db.clone(), table: f.table.clone(), deleted, inserted, updated }
}
