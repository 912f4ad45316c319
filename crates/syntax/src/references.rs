//! The objects statements name, as written: the tables and views they read or change, the
//! functions and sequences they use and the procedures they execute — for
//! sys.sql_expression_dependencies and sp_depends, which name a procedure's references
//! without binding it (as SQL Server records them when the procedure is created). Names
//! of common table expressions, temporary tables and table variables are left out.

use std::cell::RefCell;

use crate::ast::{
    Assignment, Expr, InsertSource, ObjectName, Query, SelectItem, SetExpr, Statement, StatementKind, TableRef,
};

/// One object named by the statements.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    pub name: ObjectName,
    /// Read (FROM, a subquery, a function call, NEXT VALUE FOR).
    pub read: bool,
    /// The target of an INSERT, UPDATE or DELETE.
    pub written: bool,
    /// Executed (EXEC).
    pub executed: bool,
}

/// The objects `statements` name, each once, in the order first named.
pub fn references(statements: &[Statement]) -> Vec<Reference> {
    let mut walk = Walk { out: Vec::new(), ctes: Vec::new() };
    for s in statements {
        walk.statement(&s.kind);
    }
    walk.out
}

struct Walk {
    out: Vec<Reference>,
    /// The common table expressions in scope (lower-cased).
    ctes: Vec<String>,
}

/// What a statement does to an object it names.
#[derive(Clone, Copy)]
enum Use {
    Read,
    Written,
    Executed,
}

impl Walk {
    fn note(&mut self, name: &ObjectName, how: Use) {
        let own = &name.name().value;
        if own.starts_with('#') || own.starts_with('@') {
            return;
        }
        if name.0.len() == 1 && self.ctes.iter().any(|c| c.eq_ignore_ascii_case(own)) {
            return;
        }
        let found = self.out.iter().position(|r| {
            r.name.0.len() == name.0.len()
                && r.name.0.iter().zip(&name.0).all(|(a, b)| a.value.eq_ignore_ascii_case(&b.value))
        });
        let i = match found {
            Some(i) => i,
            None => {
                self.out.push(Reference { name: name.clone(), read: false, written: false, executed: false });
                self.out.len() - 1
            }
        };
        let r = &mut self.out[i];
        match how {
            Use::Read => r.read = true,
            Use::Written => r.written = true,
            Use::Executed => r.executed = true,
        }
    }

    fn statement(&mut self, kind: &StatementKind) {
        match kind {
            StatementKind::Query(q) => self.query(q),
            StatementKind::Insert(i) => {
                self.note(&i.table, Use::Written);
                match &i.source {
                    InsertSource::Values(rows) => rows.iter().flatten().for_each(|e| self.expr(e)),
                    InsertSource::Query(q) => self.query(q),
                    InsertSource::Execute(k) => self.statement(k),
                    InsertSource::DefaultValues => {}
                }
            }
            StatementKind::Update(u) => {
                let depth = self.with_ctes(&u.with);
                self.target(&u.table, &u.from);
                for a in &u.assignments {
                    match a {
                        Assignment::Column { value, .. } | Assignment::Variable { value, .. } => self.expr(value),
                        _ => {}
                    }
                }
                u.from.iter().for_each(|r| self.table_ref(r));
                u.selection.iter().for_each(|e| self.expr(e));
                self.ctes.truncate(depth);
            }
            StatementKind::Delete(d) => {
                let depth = self.with_ctes(&d.with);
                self.target(&d.table, &d.from);
                d.from.iter().for_each(|r| self.table_ref(r));
                d.selection.iter().for_each(|e| self.expr(e));
                self.ctes.truncate(depth);
            }
            StatementKind::Merge(m) => {
                let depth = self.with_ctes(&m.with);
                self.note(&m.target, Use::Read);
                self.note(&m.target, Use::Written);
                self.table_ref(&m.source);
                self.expr(&m.on);
                for c in &m.clauses {
                    c.condition.iter().for_each(|e| self.expr(e));
                    match &c.action {
                        crate::ast::MergeAction::Update(sets) => {
                            for a in sets {
                                if let Assignment::Column { value, .. } | Assignment::Variable { value, .. } = a {
                                    self.expr(value);
                                }
                            }
                        }
                        crate::ast::MergeAction::Insert { values: Some(values), .. } => {
                            values.iter().for_each(|e| self.expr(e));
                        }
                        _ => {}
                    }
                }
                self.ctes.truncate(depth);
            }
            StatementKind::Execute(e) => self.note(&e.procedure, Use::Executed),
            StatementKind::SetVariable { value, .. } => self.expr(value),
            StatementKind::Return(Some(e)) => self.expr(e),
            StatementKind::If { condition, then, otherwise } => {
                self.expr(condition);
                self.statement(&then.kind);
                if let Some(o) = otherwise {
                    self.statement(&o.kind);
                }
            }
            StatementKind::While { condition, body } => {
                self.expr(condition);
                self.statement(&body.kind);
            }
            StatementKind::Block(b) => b.iter().for_each(|s| self.statement(&s.kind)),
            StatementKind::TryCatch { try_block, catch_block } => {
                try_block.iter().chain(catch_block).for_each(|s| self.statement(&s.kind))
            }
            _ => {}
        }
    }

    /// An UPDATE's or DELETE's target: the table named, or the FROM table whose alias it is.
    fn target(&mut self, table: &ObjectName, from: &[TableRef]) {
        fn aliased<'r>(refs: &'r [TableRef], alias: &str) -> Option<&'r ObjectName> {
            refs.iter().find_map(|r| match r {
                TableRef::Named { name, alias: Some(a), .. } if a.value.eq_ignore_ascii_case(alias) => Some(name),
                TableRef::Join { left, right, .. } => {
                    aliased(std::slice::from_ref(left), alias).or_else(|| aliased(std::slice::from_ref(right), alias))
                }
                _ => None,
            })
        }
        let name = if table.0.len() == 1 { aliased(from, &table.name().value).unwrap_or(table) } else { table };
        self.note(&name.clone(), Use::Written);
    }

    /// Brings a WITH clause's names into scope (their queries walked); returns how many
    /// names were in scope before.
    fn with_ctes(&mut self, with: &[crate::ast::Cte]) -> usize {
        let depth = self.ctes.len();
        for cte in with {
            self.ctes.push(cte.name.value.clone());
            self.query(&cte.query);
        }
        depth
    }

    fn query(&mut self, q: &Query) {
        let depth = self.with_ctes(&q.with);
        self.set_expr(&q.body);
        q.order_by.iter().for_each(|o| self.expr(&o.expr));
        self.ctes.truncate(depth);
    }

    fn set_expr(&mut self, body: &SetExpr) {
        match body {
            SetExpr::Select(s) => {
                s.from.iter().for_each(|r| self.table_ref(r));
                for item in &s.items {
                    match item {
                        SelectItem::Expr { expr, .. } => self.expr(expr),
                        SelectItem::Assign { value, .. } => self.expr(value),
                        SelectItem::Wildcard | SelectItem::QualifiedWildcard(_) => {}
                    }
                }
                s.selection.iter().chain(&s.group_by).chain(&s.having).for_each(|e| self.expr(e));
            }
            SetExpr::Values(rows) => rows.iter().flatten().for_each(|e| self.expr(e)),
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left);
                self.set_expr(right);
            }
            SetExpr::Query(q) => self.query(q),
        }
    }

    fn table_ref(&mut self, r: &TableRef) {
        match r {
            TableRef::Named { name, .. } => self.note(name, Use::Read),
            TableRef::Derived { query, .. } => self.query(query),
            TableRef::Pivot { source, .. } | TableRef::Unpivot { source, .. } => self.table_ref(source),
            TableRef::Function { name, args, .. } => {
                self.note(name, Use::Read);
                args.iter().for_each(|e| self.expr(e));
            }
            TableRef::Join { left, right, on, .. } => {
                self.table_ref(left);
                self.table_ref(right);
                on.iter().for_each(|e| self.expr(e));
            }
        }
    }

    /// The subqueries, user-defined functions (named with their schema) and sequences an
    /// expression names.
    fn expr(&mut self, e: &Expr) {
        let queries: RefCell<Vec<Query>> = RefCell::new(Vec::new());
        let names: RefCell<Vec<ObjectName>> = RefCell::new(Vec::new());
        e.any(&|x| {
            match x {
                Expr::Subquery(q) | Expr::Exists(q) => queries.borrow_mut().push((**q).clone()),
                Expr::InSubquery { query, .. } | Expr::Quantified { query, .. } => {
                    queries.borrow_mut().push((**query).clone())
                }
                Expr::Function { name, .. } if name.0.len() > 1 => names.borrow_mut().push(name.clone()),
                Expr::NextValueFor(name) => names.borrow_mut().push(name.clone()),
                _ => {}
            }
            false
        });
        for name in names.into_inner() {
            self.note(&name, Use::Read);
        }
        for q in queries.into_inner() {
            self.query(&q);
        }
    }
}

/// Whether a statement names a `#temp` table, whose columns may only be known once an
/// earlier statement of the batch created it (so its compile errors wait for run time).
pub fn mentions_temp_table(s: &Statement) -> bool {
    fn named(n: &crate::ast::ObjectName) -> bool {
        n.name().value.starts_with('#') || n.name().value.starts_with('@')
    }
    fn in_refs(refs: &[crate::ast::TableRef]) -> bool {
        refs.iter().any(|r| match r {
            crate::ast::TableRef::Named { name, .. } => named(name),
            crate::ast::TableRef::Join { left, right, .. } => {
                in_refs(std::slice::from_ref(left)) || in_refs(std::slice::from_ref(right))
            }
            crate::ast::TableRef::Derived { query, .. } => in_query(query),
            crate::ast::TableRef::Pivot { source, .. } | crate::ast::TableRef::Unpivot { source, .. } => {
                in_refs(std::slice::from_ref(source))
            }
            crate::ast::TableRef::Function { .. } => false,
        })
    }
    fn in_set(body: &crate::ast::SetExpr) -> bool {
        match body {
            crate::ast::SetExpr::Select(s) => in_refs(&s.from),
            crate::ast::SetExpr::Query(q) => in_query(q),
            crate::ast::SetExpr::SetOperation { left, right, .. } => in_set(left) || in_set(right),
            crate::ast::SetExpr::Values(_) => false,
        }
    }
    fn in_query(q: &crate::ast::Query) -> bool {
        in_set(&q.body) || q.with.iter().any(|c| in_query(&c.query))
    }
    match &s.kind {
        StatementKind::Query(q) => in_query(q),
        StatementKind::Insert(i) => {
            named(&i.table) || matches!(&i.source, crate::ast::InsertSource::Query(q) if in_query(q))
        }
        StatementKind::Update(u) => named(&u.table) || in_refs(&u.from),
        StatementKind::Delete(d) => named(&d.table) || in_refs(&d.from),
        StatementKind::Merge(m) => named(&m.target) || in_refs(std::slice::from_ref(&m.source)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::references;
    use crate::parser::parse_batch;

    fn named(sql: &str) -> Vec<(String, bool, bool, bool)> {
        let batch = parse_batch(sql).expect("parses");
        references(&batch.statements)
            .into_iter()
            .map(|r| {
                let name = r.name.0.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".");
                (name, r.read, r.written, r.executed)
            })
            .collect()
    }

    #[test]
    fn statements_name_what_they_read_change_and_run() {
        let found = named(
            "WITH recent AS (SELECT id FROM dbo.orders) \
             SELECT r.id, dbo.total(r.id) FROM recent r JOIN customers c ON c.id = r.id \
             WHERE EXISTS (SELECT 1 FROM audit WHERE audit.id = r.id); \
             INSERT INTO log (n) SELECT NEXT VALUE FOR seq FROM #temp; \
             UPDATE x SET n = 1 FROM items x WHERE x.id IN (SELECT id FROM @ids); \
             IF 1 = 1 EXEC dbo.cleanup ELSE DELETE FROM customers",
        );
        assert_eq!(
            found,
            [
                ("dbo.orders".to_string(), true, false, false),
                ("customers".to_string(), true, true, false),
                ("dbo.total".to_string(), true, false, false),
                ("audit".to_string(), true, false, false),
                ("log".to_string(), false, true, false),
                ("seq".to_string(), true, false, false),
                ("items".to_string(), true, true, false),
                ("dbo.cleanup".to_string(), false, false, true),
            ]
        );
    }
}
