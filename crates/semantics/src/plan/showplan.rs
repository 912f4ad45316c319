//! SET SHOWPLAN_TEXT: a bound plan as the rows SQL Server shows — one operator a row,
//! children indented under their parent with `  |--` and `|` bars, operators and their
//! arguments named as SQL Server names them where tessera has the equivalent:
//!
//! ```text
//!   |--Nested Loops(Inner Join, OUTER REFERENCES:([d].[dbo].[o].[cid]))
//!        |--Clustered Index Scan(OBJECT:([d].[dbo].[o].[pk_o]), WHERE:([d].[dbo].[o].[n]>(5)))
//!        |--Clustered Index Seek(OBJECT:([d].[dbo].[c].[pk_c]), SEEK:([d].[dbo].[c].[id]=[d].[dbo].[o].[cid]) ORDERED FORWARD)
//! ```
//!
//! Expressions are printed over column names: every operator's output columns are named
//! as its inputs' are passed up (a table's column as `[db].[schema].[table].[column]`,
//! with `as [alias].[column]` when the query gave the table an alias; a value an operator
//! computes as `[Expr1001]`, numbered in the order the printer meets them).
//!
//! How tessera's operators map to SQL Server's:
//! - a scan or seek of the clustered index is `Clustered Index Scan`/`Seek` (a heap:
//!   `Table Scan`), its residual filter folded in as `WHERE:`; a seek of a nonclustered
//!   index reads each row through the clustered key, shown as SQL Server shows a lookup:
//!   `Nested Loops` over `Index Seek` and `Clustered Index Seek(… LOOKUP …)` (a heap:
//!   `RID Lookup`);
//! - index nested loops (`Plan::Apply`) is `Nested Loops(…, OUTER REFERENCES:(…))`, nested
//!   loops over materialised inputs `Nested Loops(…, WHERE:(…))`;
//! - a hash join builds its hash table on its right input, which SQL Server shows first:
//!   `Hash Match(Inner Join, HASH:(build keys)=(probe keys), RESIDUAL:(…))` with the build
//!   input as the first child, so a LEFT JOIN is a `Right Outer Join` there, as SQL Server
//!   names a join whose probe (second) input is preserved;
//! - grouping is `Hash Match(Aggregate, …)`, a scalar aggregate `Stream Aggregate`,
//!   DISTINCT `Hash Match(Flow Distinct, …)`, UNION ALL `Concatenation`, UNION
//!   `Hash Match(Union)`, EXCEPT/INTERSECT `Hash Match(Right Anti Semi Join / Right Semi
//!   Join, …)`, ROW_NUMBER `Sequence Project` over `Segment` over `Sort`, a recursive CTE
//!   `Index Spool(WITH STACK)` over `Concatenation`, its work table `Table Spool(WITH
//!   STACK)`, a system view `Table-valued function`;
//! - a subquery is evaluated by the operator whose expression holds it: its value is an
//!   `[ExprN]` there, and its plan is a child of that operator, after its inputs;
//! - data changes are `Clustered Index Insert/Update/Delete` (a heap: `Table …`) naming
//!   every index they maintain, over the plan that finds their rows.

use super::{
    AggCall, DeletePlan, Expr, InsertPlan, InsertSource, MergePlan, Plan, Prepared, ScanNode, SortKey, Subquery,
    SubqueryKind, UpdatePlan,
};
use crate::catalog::{DbRef, Table};
use crate::types::{self, SqlType, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tessera_syntax::ast::{BinaryOp, JoinKind, SetOperator, UnaryOp};

/// The plan rows of a compiled statement; `vars` names the variable slots of its frame.
pub fn statement_plan(prepared: &Prepared, vars: &[(String, SqlType)], at: &PlanSite) -> Vec<String> {
    let mut p = Printer::new(vars, at);
    let root = match prepared {
        Prepared::Query(q) => p.plan(&q.plan, &[]).0,
        Prepared::Assign { plan, .. } => p.plan(plan, &[]).0,
        Prepared::Insert(i) => p.insert(i),
        Prepared::Update(u) => p.update(u),
        Prepared::Delete(d) => p.delete(d),
        Prepared::Merge(m) => p.merge(m),
    };
    render(&root)
}

/// The plan rows of `SELECT … INTO target`: the query under a `Table Insert`.
pub fn select_into_plan(plan: &Plan, target: &str, vars: &[(String, SqlType)], at: &PlanSite) -> Vec<String> {
    let mut p = Printer::new(vars, at);
    let (child, _) = p.plan(plan, &[]);
    render(&Node { text: format!("Table Insert(OBJECT:({target}))"), children: vec![child] })
}

/// One operator and its inputs.
struct Node {
    text: String,
    children: Vec<Node>,
}

impl Node {
    fn leaf(text: String) -> Node {
        Node { text, children: Vec::new() }
    }
}

/// The rows of a plan tree: `  |--` before the root; each level five columns further in,
/// with a `|` carried down under an operator while more of its siblings follow.
fn render(root: &Node) -> Vec<String> {
    fn walk(n: &Node, prefix: &str, more: bool, out: &mut Vec<String>) {
        out.push(format!("{prefix}|--{}", n.text));
        let inner = format!("{prefix}{}", if more { "|    " } else { "     " });
        for (i, c) in n.children.iter().enumerate() {
            walk(c, &inner, i + 1 < n.children.len(), out);
        }
    }
    let mut out = Vec::new();
    walk(root, "  ", false, &mut out);
    out
}

fn bracket(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

/// The table a plan's definition names in the database it runs in, and that database's
/// name (see `ExecCtx::table`).
pub type TableAt<'a> = &'a dyn Fn(&DbRef, &Arc<Table>) -> (Arc<str>, Arc<Table>);

/// Where a plan is shown: the database it runs in, and the tables its definitions name
/// there (whose index and constraint names are that database's own).
pub struct PlanSite<'a> {
    pub database: &'a str,
    pub table: TableAt<'a>,
}

struct Printer<'v> {
    vars: &'v [(String, SqlType)],
    at: &'v PlanSite<'v>,
    /// The number of the next `[ExprN]`.
    next: u32,
    /// Rows of enclosing queries (for outer references of subqueries), innermost last.
    outer: Vec<Vec<String>>,
    /// Plans of subqueries met in the expressions of the operator being printed.
    subqueries: Vec<Node>,
    /// Correlation columns referenced under the `Apply` being printed.
    corr_used: Vec<String>,
    /// Column names of recursive CTE work tables, by id.
    work_tables: HashMap<usize, Vec<String>>,
}

impl<'v> Printer<'v> {
    fn new(vars: &'v [(String, SqlType)], at: &'v PlanSite<'v>) -> Printer<'v> {
        Printer {
            vars,
            at,
            next: 1001,
            outer: Vec::new(),
            subqueries: Vec::new(),
            corr_used: Vec::new(),
            work_tables: HashMap::new(),
        }
    }

    fn name(&mut self, prefix: &str) -> String {
        let n = self.next;
        self.next += 1;
        format!("[{prefix}{n}]")
    }

    /// The subqueries the current operator's expressions met since `mark`, as children.
    fn take_subqueries(&mut self, mark: usize) -> Vec<Node> {
        self.subqueries.split_off(mark)
    }

    // ---- operators ----------------------------------------------------------------------

    /// The node of `plan` and the names of its output columns; `corr` names the columns
    /// of the correlation row (an enclosing `Apply`'s outer row).
    fn plan(&mut self, plan: &Plan, corr: &[String]) -> (Node, Vec<String>) {
        match plan {
            Plan::Values(rows) => self.values(rows, corr),
            Plan::Scan(node) => self.scan(node, corr, None),
            Plan::System { view, .. } | Plan::SystemFunction { function: view, .. } => {
                let names = view.columns().iter().map(|c| bracket(&c.name)).collect();
                (Node::leaf(format!("Table-valued function(OBJECT:([sys].[{view:?}]))")), names)
            }
            Plan::TableFunctionCall { call, .. } => {
                let names = call.columns.iter().map(|c| bracket(&c.name)).collect();
                let text = format!("Table-valued function(OBJECT:([{}].[{}]))", call.schema, call.name);
                (Node::leaf(text), names)
            }
            Plan::Filter { input, predicate } => match &**input {
                Plan::Scan(node) => self.scan(node, corr, Some(predicate)),
                _ => {
                    let (child, names) = self.plan(input, corr);
                    let mark = self.subqueries.len();
                    let text = format!("Filter(WHERE:({}))", self.expr(predicate, &names));
                    let mut children = vec![child];
                    children.extend(self.take_subqueries(mark));
                    (Node { text, children }, names)
                }
            },
            Plan::Project { input, exprs } => {
                let (child, input_names) = self.plan(input, corr);
                let mark = self.subqueries.len();
                let mut defines = Vec::new();
                let mut names = Vec::with_capacity(exprs.len());
                for e in exprs {
                    match e {
                        Expr::Column(i) => names.push(column(&input_names, *i)),
                        Expr::Const(v) => names.push(constant(v)),
                        e => {
                            let text = self.expr(e, &input_names);
                            let name = self.name("Expr");
                            defines.push(format!("{name}={text}"));
                            names.push(name);
                        }
                    }
                }
                if defines.is_empty() {
                    return (child, names);
                }
                let mut children = vec![child];
                children.extend(self.take_subqueries(mark));
                (Node { text: format!("Compute Scalar(DEFINE:({}))", defines.join(", ")), children }, names)
            }
            Plan::NestedLoop { left, right, kind, on, .. } => {
                let (l, mut names) = self.plan(left, corr);
                let (r, right_names) = self.plan(right, corr);
                names.extend(right_names);
                let mark = self.subqueries.len();
                let mut text = format!("Nested Loops({}", join_name(*kind));
                if let Some(on) = on {
                    text.push_str(&format!(", WHERE:({})", self.expr(on, &names)));
                }
                text.push(')');
                let mut children = vec![l, r];
                children.extend(self.take_subqueries(mark));
                (Node { text, children }, names)
            }
            Plan::HashJoin { left, right, kind, left_keys, right_keys, residual, .. } => {
                let (l, left_names) = self.plan(left, corr);
                let (r, right_names) = self.plan(right, corr);
                let mark = self.subqueries.len();
                let build: Vec<String> = right_keys.iter().map(|k| self.expr(k, &right_names)).collect();
                let probe: Vec<String> = left_keys.iter().map(|k| self.expr(k, &left_names)).collect();
                let mut names = left_names;
                names.extend(right_names);
                // The build input (tessera's right) is SQL Server's first: the preserved
                // side of an outer join is named from there.
                let kind = match kind {
                    JoinKind::Left => "Right Outer Join",
                    JoinKind::Right => "Left Outer Join",
                    k => join_name(*k),
                };
                let mut text = format!("Hash Match({kind}, HASH:({})=({})", build.join(", "), probe.join(", "));
                if let Some(res) = residual {
                    text.push_str(&format!(", RESIDUAL:({})", self.expr(res, &names)));
                }
                text.push(')');
                let mut children = vec![r, l];
                children.extend(self.take_subqueries(mark));
                (Node { text, children }, names)
            }
            Plan::Apply { left, right, kind, on, .. } => {
                let (l, mut names) = self.plan(left, corr);
                let saved = std::mem::take(&mut self.corr_used);
                let (r, right_names) = self.plan(right, &names);
                let used = std::mem::replace(&mut self.corr_used, saved);
                names.extend(right_names);
                let mark = self.subqueries.len();
                let mut text = format!("Nested Loops({}", join_name(*kind));
                if !used.is_empty() {
                    text.push_str(&format!(", OUTER REFERENCES:({})", used.join(", ")));
                }
                if let Some(on) = on {
                    text.push_str(&format!(", WHERE:({})", self.expr(on, &names)));
                }
                text.push(')');
                let mut children = vec![l, r];
                children.extend(self.take_subqueries(mark));
                (Node { text, children }, names)
            }
            Plan::Aggregate { input, group_by, aggregates } => self.aggregate(input, group_by, aggregates, corr),
            Plan::GroupingSets { input, group_by, aggregates, .. } => {
                let (node, mut names) = self.aggregate(input, group_by, aggregates, corr);
                names.push(self.name("Expr"));
                (node, names)
            }
            // Its input already comes in its order: the sort does nothing (see `cursor.rs`).
            Plan::Sort { input, keys } if input.delivers_order(keys) => self.plan(input, corr),
            Plan::Sort { input, keys } => {
                let (child, names) = self.plan(input, corr);
                let mark = self.subqueries.len();
                let text = format!("Sort(ORDER BY:({}))", self.sort_keys(keys, &names));
                let mut children = vec![child];
                children.extend(self.take_subqueries(mark));
                (Node { text, children }, names)
            }
            Plan::Top { input, count, percent, ties } => {
                let (child, names) = self.plan(input, corr);
                let mark = self.subqueries.len();
                let mut args = Vec::new();
                if !ties.is_empty() {
                    let cols: Vec<String> = ties.iter().map(|t| self.expr(t, &names)).collect();
                    args.push(format!("TIE COLUMNS:({})", cols.join(", ")));
                }
                args.push(format!("TOP EXPRESSION:({})", self.corr_expr(count, corr)));
                if *percent {
                    args.push("PERCENT".to_string());
                }
                let mut children = vec![child];
                children.extend(self.take_subqueries(mark));
                (Node { text: format!("Top({})", args.join(" ")), children }, names)
            }
            Plan::Offset { input, offset, fetch } => {
                let (child, names) = self.plan(input, corr);
                let mark = self.subqueries.len();
                let mut text = format!("Top(OFFSET EXPRESSION:({})", self.corr_expr(offset, corr));
                if let Some(f) = fetch {
                    text.push_str(&format!(",TOP EXPRESSION:({})", self.corr_expr(f, corr)));
                }
                text.push(')');
                let mut children = vec![child];
                children.extend(self.take_subqueries(mark));
                (Node { text, children }, names)
            }
            Plan::Distinct { input } => {
                let (child, names) = self.plan(input, corr);
                let text = format!("Hash Match(Flow Distinct, HASH:({}))", names.join(", "));
                (Node { text, children: vec![child] }, names)
            }
            Plan::SetOp { op, all, left, right } => {
                let (l, left_names) = self.plan(left, corr);
                let (r, right_names) = self.plan(right, corr);
                match op {
                    SetOperator::Union => {
                        let names: Vec<String> = left_names.iter().map(|_| self.name("Union")).collect();
                        let text = if *all { "Concatenation" } else { "Hash Match(Union)" };
                        (Node { text: text.to_string(), children: vec![l, r] }, names)
                    }
                    SetOperator::Except | SetOperator::Intersect => {
                        let join = if *op == SetOperator::Except { "Right Anti Semi Join" } else { "Right Semi Join" };
                        let text = format!(
                            "Hash Match({join}, HASH:({})=({}))",
                            right_names.join(", "),
                            left_names.join(", ")
                        );
                        (Node { text, children: vec![r, l] }, left_names)
                    }
                }
            }
            Plan::RecursiveCte { id, anchor, recursive, .. } => {
                let (a, anchor_names) = self.plan(anchor, corr);
                let names: Vec<String> = anchor_names.iter().map(|_| self.name("Recr")).collect();
                self.work_tables.insert(*id, names.clone());
                let (r, _) = self.plan(recursive, corr);
                let concat = Node { text: "Concatenation".to_string(), children: vec![a, r] };
                (Node { text: "Index Spool(WITH STACK)".to_string(), children: vec![concat] }, names)
            }
            Plan::WorkTable { id } => {
                let names = self.work_tables.get(id).cloned().unwrap_or_default();
                (Node::leaf("Table Spool(WITH STACK)".to_string()), names)
            }
            Plan::Document { input, format } => {
                let (child, _) = self.plan(input, corr);
                let name = self.name("Expr");
                let text = format!("UDX(({name}), NAME:({}))", format.column_name());
                (Node { text, children: vec![child] }, vec![name])
            }
            Plan::Transition { deleted } => {
                let which = if *deleted { "deleted" } else { "inserted" };
                (Node::leaf(format!("Inserted Scan(OBJECT:({which}))")), Vec::new())
            }
            Plan::Window { input, partition, order, calls, presorted } => {
                let (child, mut names) = self.plan(input, corr);
                let mark = self.subqueries.len();
                let mut keys: Vec<String> = partition.iter().map(|p| format!("{} ASC", self.expr(p, &names))).collect();
                if !order.is_empty() {
                    keys.push(self.sort_keys(order, &names));
                }
                let mut input = child;
                // Input already in (partition, order) order is not sorted again.
                if !keys.is_empty() && !presorted {
                    let mut children = vec![input];
                    children.extend(self.take_subqueries(mark));
                    input = Node { text: format!("Sort(ORDER BY:({}))", keys.join(", ")), children };
                }
                let segment = Node { text: "Segment".to_string(), children: vec![input] };
                let mut defines = Vec::with_capacity(calls.len());
                let row = names.clone();
                for call in calls {
                    let args: Vec<String> = call.args.iter().map(|a| self.expr(a, &row)).collect();
                    let name = self.name("Expr");
                    defines.push(format!("{name}={}({})", call.func.name(), args.join(",")));
                    names.push(name);
                }
                let text = format!("Sequence Project(DEFINE:({}))", defines.join(", "));
                (Node { text, children: vec![segment] }, names)
            }
        }
    }

    fn values(&mut self, rows: &[Vec<Expr>], corr: &[String]) -> (Node, Vec<String>) {
        let width = rows.first().map_or(0, Vec::len);
        if width == 0 {
            return (Node::leaf("Constant Scan".to_string()), Vec::new());
        }
        let mark = self.subqueries.len();
        let rows: Vec<String> = rows
            .iter()
            .map(|r| format!("({})", r.iter().map(|e| self.corr_expr(e, corr)).collect::<Vec<_>>().join(",")))
            .collect();
        let names = (0..width).map(|_| self.name("Expr")).collect();
        let children = self.take_subqueries(mark);
        (Node { text: format!("Constant Scan(VALUES:({}))", rows.join(",")), children }, names)
    }

    fn aggregate(
        &mut self,
        input: &Plan,
        group_by: &[Expr],
        aggregates: &[AggCall],
        corr: &[String],
    ) -> (Node, Vec<String>) {
        let (mut child, input_names) = self.plan(input, corr);
        // Grouping values that are not columns are computed below, as SQL Server does.
        let mark = self.subqueries.len();
        let mut defines = Vec::new();
        let mut names = Vec::new();
        for g in group_by {
            match g {
                Expr::Column(i) => names.push(column(&input_names, *i)),
                e => {
                    let text = self.expr(e, &input_names);
                    let name = self.name("Expr");
                    defines.push(format!("{name}={text}"));
                    names.push(name);
                }
            }
        }
        if !defines.is_empty() {
            let mut children = vec![child];
            children.extend(self.take_subqueries(mark));
            child = Node { text: format!("Compute Scalar(DEFINE:({}))", defines.join(", ")), children };
        }
        let mark = self.subqueries.len();
        let mut aggs = Vec::new();
        for a in aggregates {
            let text = self.aggregate_call(a, &input_names);
            let name = self.name("Expr");
            aggs.push(format!("{name}={text}"));
            names.push(name);
        }
        let define = if aggs.is_empty() { String::new() } else { format!("DEFINE:({})", aggs.join(", ")) };
        let text = if group_by.is_empty() {
            format!("Stream Aggregate({define})")
        } else {
            let hash = format!("HASH:({})", names[..group_by.len()].join(", "));
            if define.is_empty() {
                format!("Hash Match(Aggregate, {hash})")
            } else {
                format!("Hash Match(Aggregate, {hash} {define})")
            }
        };
        let mut children = vec![child];
        children.extend(self.take_subqueries(mark));
        (Node { text, children }, names)
    }

    fn aggregate_call(&mut self, a: &AggCall, row: &[String]) -> String {
        let distinct = if a.distinct { "DISTINCT " } else { "" };
        match (&a.arg, a.func) {
            (None, _) => "Count(*)".to_string(),
            (Some(e), f) => {
                format!("{}({distinct}{})", f.name(), self.expr(e, row))
            }
        }
    }

    fn sort_keys(&mut self, keys: &[SortKey], row: &[String]) -> String {
        keys.iter()
            .map(|k| format!("{} {}", self.expr(&k.expr, row), if k.descending { "DESC" } else { "ASC" }))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A table's columns as plans name them: `[db].[schema].[table].[column]`, with
    /// ` as [alias].[column]` for an aliased table.
    fn table_columns(db: &str, table: &crate::catalog::Table, alias: Option<&str>) -> Vec<String> {
        let object = table_object(db, table);
        table
            .columns
            .iter()
            .map(|c| match alias {
                Some(a) => format!("{object}.{} as {}.{}", bracket(&c.name), bracket(a), bracket(&c.name)),
                None => format!("{object}.{}", bracket(&c.name)),
            })
            .collect()
    }

    /// A scan or seek, with its residual predicate `filter` (over the table's row).
    fn scan(&mut self, node: &ScanNode, corr: &[String], filter: Option<&Expr>) -> (Node, Vec<String>) {
        let (db, table) = (self.at.table)(&node.db, &node.table);
        let table = &table;
        let mut names = Self::table_columns(&db, table, node.alias.as_deref());
        let object = table_object(&db, table);
        // An aliased table's objects are shown `… AS [alias]`.
        let alias = node.alias.as_deref().map_or(String::new(), |a| format!(" AS {}", bracket(a)));
        let index = &table.indexes[node.index];
        let mark = self.subqueries.len();
        let seek = self.seek_predicate(node, corr, &names);
        let filter = filter.map(|f| self.expr(f, &names));
        let order = if node.reverse { "ORDERED BACKWARD" } else { "ORDERED FORWARD" };
        let subqueries = self.take_subqueries(mark);
        let key_name = "[Bmk1000]".to_string();
        let node_out = if node.index == 0 {
            let op_object = if index.is_heap() {
                format!("{object}{alias}")
            } else {
                format!("{object}.{}{alias}", bracket(&index.name))
            };
            let op = match (&seek, index.is_heap()) {
                (_, true) => "Table Scan",
                (Some(_), false) => "Clustered Index Seek",
                (None, false) => "Clustered Index Scan",
            };
            let text = match (&seek, &filter) {
                (Some(s), Some(w)) => format!("{op}(OBJECT:({op_object}), SEEK:({s}),  WHERE:({w}) {order})"),
                (Some(s), None) => format!("{op}(OBJECT:({op_object}), SEEK:({s}) {order})"),
                (None, Some(w)) if node.reverse => format!("{op}(OBJECT:({op_object}), WHERE:({w}) {order})"),
                (None, Some(w)) => format!("{op}(OBJECT:({op_object}), WHERE:({w}))"),
                (None, None) if node.reverse => format!("{op}(OBJECT:({op_object}), {order})"),
                (None, None) => format!("{op}(OBJECT:({op_object}))"),
            };
            Node { text, children: subqueries }
        } else {
            // A nonclustered index leads to each row through the row's clustered key.
            let ix_object = format!("{object}.{}{alias}", bracket(&index.name));
            let ix = match &seek {
                Some(s) => format!("Index Seek(OBJECT:({ix_object}), SEEK:({s}) {order})"),
                None if node.reverse => format!("Index Scan(OBJECT:({ix_object}), {order})"),
                None => format!("Index Scan(OBJECT:({ix_object}))"),
            };
            let rows = &table.indexes[0];
            let (refs, lookup_seek, lookup) = if rows.is_heap() {
                (key_name.clone(), format!("{key_name}={key_name}"), format!("RID Lookup(OBJECT:({object}{alias})"))
            } else {
                let keys: Vec<String> = rows.columns.iter().map(|&(c, _)| names[c].clone()).collect();
                let seek = keys.iter().map(|k| format!("{k}={k}")).collect::<Vec<_>>().join(" AND ");
                (
                    keys.join(", "),
                    seek,
                    format!("Clustered Index Seek(OBJECT:({object}.{}{alias})", bracket(&rows.name)),
                )
            };
            let lookup = match &filter {
                Some(w) => format!("{lookup}, SEEK:({lookup_seek}),  WHERE:({w}) LOOKUP ORDERED FORWARD)"),
                None => format!("{lookup}, SEEK:({lookup_seek}) LOOKUP ORDERED FORWARD)"),
            };
            let children = vec![Node { text: ix, children: subqueries }, Node::leaf(lookup)];
            Node { text: format!("Nested Loops(Inner Join, OUTER REFERENCES:({refs}))"), children }
        };
        if node.with_key {
            names.push(key_name);
        }
        (node_out, names)
    }

    /// The SEEK:() predicate of a scan: equalities on the key prefix, then the range on the
    /// next key column (None for a full scan).
    fn seek_predicate(&mut self, node: &ScanNode, corr: &[String], names: &[String]) -> Option<String> {
        let index = &node.table.indexes[node.index];
        let mut parts = Vec::new();
        for (k, e) in node.prefix.iter().enumerate() {
            let col = index.columns[k].0;
            parts.push(format!("{}={}", names[col], self.corr_expr(e, corr)));
        }
        if let Some(&(col, desc)) = index.columns.get(node.prefix.len()) {
            // Bounds are in storage order: a descending column's lower bound is its upper.
            if let Some(b) = &node.lower {
                let op = match (desc, b.inclusive) {
                    (false, true) => ">=",
                    (false, false) => ">",
                    (true, true) => "<=",
                    (true, false) => "<",
                };
                parts.push(format!("{} {op} {}", names[col], self.corr_expr(&b.value, corr)));
            }
            if let Some(b) = &node.upper {
                let op = match (desc, b.inclusive) {
                    (false, true) => "<=",
                    (false, false) => "<",
                    (true, true) => ">=",
                    (true, false) => ">",
                };
                parts.push(format!("{} {op} {}", names[col], self.corr_expr(&b.value, corr)));
            }
        }
        (!parts.is_empty()).then(|| parts.join(" AND "))
    }

    // ---- data changes -------------------------------------------------------------------

    /// `OBJECT:(…)` of every index a data change writes (the heap or clustered index first).
    fn objects(db: &str, table: &crate::catalog::Table, indexes: impl Iterator<Item = usize>) -> String {
        let object = table_object(db, table);
        indexes
            .map(|i| {
                let ix = &table.indexes[i];
                if ix.is_heap() {
                    format!("OBJECT:({object})")
                } else {
                    format!("OBJECT:({object}.{})", bracket(&ix.name))
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn insert(&mut self, p: &InsertPlan) -> Node {
        let (db, table) = (self.at.table)(&p.target.db, &p.target.table);
        let table = &table;
        let cols = Self::table_columns(&db, table, None);
        let op = if table.indexes[0].is_heap() { "Table Insert" } else { "Clustered Index Insert" };
        let objects = Self::objects(&db, table, 0..table.indexes.len());
        let mut children = Vec::new();
        let mark = self.subqueries.len();
        // The value of each column given, by the source's column names.
        let values: Vec<String> = match &p.source {
            InsertSource::Rows(rows) if rows.len() == 1 => rows[0]
                .iter()
                .zip(&p.columns)
                .map(|(e, &c)| match e {
                    Some(e) => self.expr(e, &[]),
                    None => self.default_value(p, c),
                })
                .collect(),
            InsertSource::Rows(rows) => {
                let text: Vec<String> = rows
                    .iter()
                    .map(|r| {
                        let vals: Vec<String> = r
                            .iter()
                            .zip(&p.columns)
                            .map(|(e, &c)| match e {
                                Some(e) => self.expr(e, &[]),
                                None => self.default_value(p, c),
                            })
                            .collect();
                        format!("({})", vals.join(","))
                    })
                    .collect();
                let names: Vec<String> = p.columns.iter().map(|_| self.name("Expr")).collect();
                children.push(Node::leaf(format!("Constant Scan(VALUES:({}))", text.join(","))));
                names
            }
            InsertSource::Query(plan) => {
                let (child, names) = self.plan(plan, &[]);
                children.push(child);
                names
            }
            InsertSource::DefaultValues => Vec::new(),
        };
        children.extend(self.take_subqueries(mark));
        let mut sets: Vec<String> = p.columns.iter().zip(&values).map(|(&c, v)| format!("{} = {v}", cols[c])).collect();
        // Columns not given take their defaults (the identity column its next value).
        for (c, col) in table.columns.iter().enumerate() {
            if p.columns.contains(&c) || col.identity.is_some() {
                continue;
            }
            if p.target.defaults[c].is_some() {
                let v = self.default_value(p, c);
                sets.push(format!("{} = {v}", cols[c]));
            }
        }
        if let Some(top) = &p.top {
            let count = self.expr(top, &[]);
            children = vec![Node { text: format!("Top(TOP EXPRESSION:({count}))"), children }];
        }
        let text = if sets.is_empty() {
            format!("{op}({objects})")
        } else {
            format!("{op}({objects}, SET:({}))", sets.join(","))
        };
        Node { text, children }
    }

    fn default_value(&mut self, p: &InsertPlan, column: usize) -> String {
        match &p.target.defaults[column] {
            Some((e, _)) => self.expr(e, &[]),
            None => "NULL".to_string(),
        }
    }

    fn update(&mut self, p: &UpdatePlan) -> Node {
        let (db, table) = (self.at.table)(&p.target.db, &p.target.table);
        let table = &table;
        let cols = Self::table_columns(&db, table, None);
        let (child, names) = self.plan(&p.source, &[]);
        let changed = p.set.changed();
        let key_changes = table.indexes[0].columns.iter().any(|(c, _)| changed.contains(c));
        let touched = (0..table.indexes.len())
            .filter(|&i| i == 0 || key_changes || table.indexes[i].columns.iter().any(|(c, _)| changed.contains(c)));
        let objects = Self::objects(&db, table, touched);
        let mark = self.subqueries.len();
        let mut defines = Vec::new();
        let mut sets = Vec::new();
        for (col, e, _) in &p.set.sets {
            let value = match e {
                Expr::Column(i) => column(&names, *i),
                Expr::Const(v) => constant(v),
                e => {
                    let text = self.expr(e, &names);
                    let name = self.name("Expr");
                    defines.push(format!("{name}={text}"));
                    name
                }
            };
            sets.push(format!("{} = {value}", cols[*col]));
        }
        for w in &p.set.writes {
            let args: Vec<String> =
                [&w.value.0, &w.offset.0, &w.length.0].iter().map(|e| self.expr(e, &names)).collect();
            sets.push(format!("{} = {}.WRITE({})", cols[w.column], cols[w.column], args.join(",")));
        }
        let mut input = child;
        if !defines.is_empty() {
            let mut children = vec![input];
            children.extend(self.take_subqueries(mark));
            input = Node { text: format!("Compute Scalar(DEFINE:({}))", defines.join(", ")), children };
        }
        let op = if table.indexes[0].is_heap() { "Table Update" } else { "Clustered Index Update" };
        Node { text: format!("{op}({objects}, SET:({}))", sets.join(",")), children: vec![input] }
    }

    /// A MERGE: the join of source and target (and the read of the target's unmatched
    /// rows) under one `Clustered Index Merge` of every index.
    fn merge(&mut self, p: &MergePlan) -> Node {
        let (db, table) = (self.at.table)(&p.target.db, &p.target.table);
        let table = &table;
        let mut children = vec![self.plan(&p.source, &[]).0];
        if let Some(unmatched) = &p.unmatched {
            children.push(self.plan(unmatched, &[]).0);
        }
        let objects = Self::objects(&db, table, 0..table.indexes.len());
        let op = if table.indexes[0].is_heap() { "Table Merge" } else { "Clustered Index Merge" };
        Node { text: format!("{op}({objects})"), children }
    }

    fn delete(&mut self, p: &DeletePlan) -> Node {
        let (db, table) = (self.at.table)(&p.target.db, &p.target.table);
        let table = &table;
        let (child, _) = self.plan(&p.source, &[]);
        let objects = Self::objects(&db, table, 0..table.indexes.len());
        let op = if table.indexes[0].is_heap() { "Table Delete" } else { "Clustered Index Delete" };
        Node { text: format!("{op}({objects})"), children: vec![child] }
    }

    // ---- expressions --------------------------------------------------------------------

    /// An expression computed from the correlation row: its columns are outer references
    /// of the enclosing `Apply`.
    fn corr_expr(&mut self, e: &Expr, corr: &[String]) -> String {
        let mut used = Vec::new();
        row_columns(e, &mut used);
        for i in used {
            let name = column(corr, i);
            if !self.corr_used.contains(&name) {
                self.corr_used.push(name);
            }
        }
        self.expr(e, corr)
    }

    /// An operand of a binary operator, parenthesised unless it binds tighter.
    fn operand(&mut self, e: &Expr, row: &[String], parent: u8, right: bool) -> String {
        let text = self.expr(e, row);
        let own = precedence(e);
        if own < parent || (right && own == parent && own < 9) {
            format!("({text})")
        } else {
            text
        }
    }

    fn expr(&mut self, e: &Expr, row: &[String]) -> String {
        match e {
            Expr::Const(v) => constant(v),
            Expr::Column(i) => column(row, *i),
            Expr::OuterRef { depth, index } => {
                let n = self.outer.len();
                match n.checked_sub(1 + depth).and_then(|d| self.outer.get(d)) {
                    Some(r) => column(r, *index),
                    None => format!("[Outer{index}]"),
                }
            }
            Expr::Var(slot) => match self.vars.get(*slot) {
                Some((name, _)) => bracket(name),
                None => format!("[@{slot}]"),
            },
            Expr::Cast { expr, to, style, try_, implicit, .. } => {
                let inner = self.expr(expr, row);
                let ty = types::type_name(to);
                let style = style.unwrap_or(0);
                if *try_ {
                    format!("TRY_CONVERT({ty},{inner},{style})")
                } else if *implicit {
                    format!("CONVERT_IMPLICIT({ty},{inner},0)")
                } else {
                    format!("CONVERT({ty},{inner},{style})")
                }
            }
            Expr::Unary { op, expr, .. } => {
                let inner = self.operand(expr, row, 9, false);
                match op {
                    UnaryOp::Plus => inner,
                    UnaryOp::Minus => format!("-{inner}"),
                    UnaryOp::BitNot => format!("~{inner}"),
                    UnaryOp::Not => format!("NOT {inner}"),
                }
            }
            Expr::Arith { op, left, right, .. } => {
                let p = precedence(e);
                let l = self.operand(left, row, p, false);
                let r = self.operand(right, row, p, true);
                format!("{l}{}{r}", op.text())
            }
            Expr::Compare { op, left, right } => {
                let l = self.operand(left, row, 5, false);
                let r = self.operand(right, row, 5, true);
                format!("{l}{}{r}", op.text())
            }
            Expr::And(..) => {
                let mut parts = Vec::new();
                flatten(e, true, &mut parts);
                parts.iter().map(|p| self.operand(p, row, 3, false)).collect::<Vec<_>>().join(" AND ")
            }
            Expr::Or(..) => {
                let mut parts = Vec::new();
                flatten(e, false, &mut parts);
                parts.iter().map(|p| self.operand(p, row, 2, false)).collect::<Vec<_>>().join(" OR ")
            }
            Expr::Not(x) => format!("NOT {}", self.operand(x, row, 4, false)),
            Expr::IsNull { expr, negated } => {
                let x = self.operand(expr, row, 5, false);
                format!("{x} IS {}NULL", if *negated { "NOT " } else { "" })
            }
            Expr::Like { expr, pattern, escape, negated } => {
                let x = self.operand(expr, row, 5, false);
                let p = self.operand(pattern, row, 5, true);
                let mut text = format!("{x} like {p}");
                if let Some(esc) = escape {
                    text.push_str(&format!(" ESCAPE {}", self.expr(esc, row)));
                }
                if *negated {
                    format!("NOT {text}")
                } else {
                    text
                }
            }
            Expr::InList { expr, list, negated } => {
                // As SQL Server shows IN: one comparison per value.
                let x = self.operand(expr, row, 5, false);
                let (op, join) = if *negated { ("<>", " AND ") } else { ("=", " OR ") };
                list.iter().map(|v| format!("{x}{op}{}", self.operand(v, row, 5, true))).collect::<Vec<_>>().join(join)
            }
            Expr::Case { branches, otherwise } => {
                let mut text = "CASE".to_string();
                for (cond, then) in branches {
                    let c = self.expr(cond, row);
                    let t = self.expr(then, row);
                    text.push_str(&format!(" WHEN {c} THEN {t}"));
                }
                if let Some(o) = otherwise {
                    text.push_str(&format!(" ELSE {}", self.expr(o, row)));
                }
                text.push_str(" END");
                text
            }
            Expr::Coalesce(args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a, row)).collect();
                format!("coalesce({})", args.join(","))
            }
            Expr::Func { name, args, .. } => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a, row)).collect();
                format!("{}({})", name.to_lowercase(), args.join(","))
            }
            Expr::Session { func, args } => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a, row)).collect();
                format!("{}({})", format!("{func:?}").to_lowercase(), args.join(","))
            }
            Expr::Subquery(sq) => self.subquery(sq, row),
            Expr::UserFunction { call, args } => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a, row)).collect();
                format!("{}.[dbo].{}({})", bracket(call.db.name(self.at.database)), bracket(&call.name), args.join(","))
            }
            Expr::NextValue { db, sequence } => format!(
                "next value for {}.{}.{}",
                bracket(db.name(self.at.database)),
                bracket(&sequence.schema),
                bracket(&sequence.name)
            ),
        }
    }

    /// A subquery: its plan becomes a child of the operator being printed (run with the
    /// current row as its outer row), its value `[ExprN]`.
    fn subquery(&mut self, sq: &Subquery, row: &[String]) -> String {
        let probe = match &sq.kind {
            SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => {
                Some(self.operand(expr, row, 5, false))
            }
            _ => None,
        };
        self.outer.push(row.to_vec());
        let saved = std::mem::take(&mut self.corr_used);
        let (node, _) = self.plan(&sq.plan, &[]);
        self.corr_used = saved;
        self.outer.pop();
        self.subqueries.push(node);
        let name = self.name("Expr");
        match &sq.kind {
            SubqueryKind::Scalar => name,
            SubqueryKind::Exists { negated } => format!("{}EXISTS({name})", if *negated { "NOT " } else { "" }),
            SubqueryKind::In { negated, .. } => {
                format!("{} {}IN ({name})", probe.unwrap_or_default(), if *negated { "NOT " } else { "" })
            }
            SubqueryKind::Quantified { op, all, .. } => {
                format!("{}{}{}({name})", probe.unwrap_or_default(), op.text(), if *all { "ALL" } else { "ANY" })
            }
        }
    }
}

fn table_object(db: &str, table: &crate::catalog::Table) -> String {
    format!("{}.{}.{}", bracket(db), bracket(&table.schema), bracket(crate::catalog::display_name(&table.name)))
}

fn column(row: &[String], i: usize) -> String {
    row.get(i).cloned().unwrap_or_else(|| format!("[Col{i}]"))
}

/// The columns of the current row an expression reads (not inside subqueries).
fn row_columns(e: &Expr, out: &mut Vec<usize>) {
    let mut walk = |x: &Expr| row_columns(x, out);
    match e {
        Expr::Column(i) => out.push(*i),
        Expr::Const(_) | Expr::OuterRef { .. } | Expr::Var(_) | Expr::Subquery(_) | Expr::NextValue { .. } => {}
        Expr::Cast { expr, .. } | Expr::Unary { expr, .. } | Expr::Not(expr) | Expr::IsNull { expr, .. } => walk(expr),
        Expr::Arith { left, right, .. } | Expr::Compare { left, right, .. } | Expr::And(left, right) => {
            walk(left);
            walk(right);
        }
        Expr::Or(a, b) => {
            walk(a);
            walk(b);
        }
        Expr::Like { expr, pattern, escape, .. } => {
            walk(expr);
            walk(pattern);
            if let Some(x) = escape {
                walk(x);
            }
        }
        Expr::InList { expr, list, .. } => {
            walk(expr);
            list.iter().for_each(walk);
        }
        Expr::Case { branches, otherwise } => {
            for (c, t) in branches {
                walk(c);
                walk(t);
            }
            if let Some(o) = otherwise {
                walk(o);
            }
        }
        Expr::Coalesce(args)
        | Expr::Func { args, .. }
        | Expr::Session { args, .. }
        | Expr::UserFunction { args, .. } => args.iter().for_each(walk),
    }
}

/// The operands of a chain of ANDs (`and`) or ORs.
fn flatten<'e>(e: &'e Expr, and: bool, out: &mut Vec<&'e Expr>) {
    match (e, and) {
        (Expr::And(a, b), true) | (Expr::Or(a, b), false) => {
            flatten(a, and, out);
            flatten(b, and, out);
        }
        _ => out.push(e),
    }
}

/// How tightly an expression binds when printed (higher binds tighter).
fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Or(..) => 2,
        Expr::And(..) => 3,
        Expr::Not(_) => 4,
        Expr::Compare { .. } | Expr::IsNull { .. } | Expr::Like { .. } => 5,
        Expr::InList { list, .. } if list.len() > 1 => 2,
        Expr::InList { .. } => 5,
        Expr::Arith { op, .. } => match op {
            BinaryOp::Multiply | BinaryOp::Divide | BinaryOp::Modulo => 7,
            _ => 6,
        },
        Expr::Unary { op: UnaryOp::Not, .. } => 4,
        _ => 9,
    }
}

fn join_name(kind: JoinKind) -> &'static str {
    match kind {
        JoinKind::Inner | JoinKind::Cross | JoinKind::CrossApply => "Inner Join",
        JoinKind::Left | JoinKind::OuterApply => "Left Outer Join",
        JoinKind::Right => "Right Outer Join",
        JoinKind::Full => "Full Outer Join",
    }
}

/// A constant as SQL Server prints it in plans: numbers in parentheses, strings quoted.
fn constant(v: &Value) -> String {
    let quoted = |t: SqlType| format!("'{}'", types::display_text(v, &t));
    match v {
        Value::Null => "NULL".to_string(),
        Value::Bit(b) => format!("({})", u8::from(*b)),
        Value::Int(i) => format!("({i})"),
        Value::Float(_) => format!("({})", types::display_text(v, &SqlType::Float).trim()),
        Value::Decimal { scale, .. } => {
            format!("({})", types::display_text(v, &SqlType::Decimal { precision: 38, scale: *scale }).trim())
        }
        Value::Str(s) => format!("'{}'", s.replace('\'', "''")),
        Value::Binary(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
            format!("0x{hex}")
        }
        Value::Date(_) => quoted(SqlType::Date),
        Value::Time(_) => quoted(SqlType::Time { scale: 7 }),
        Value::DateTime { .. } => quoted(SqlType::DateTime2 { scale: 7 }),
        Value::DateTimeOffset { .. } => quoted(SqlType::DateTimeOffset { scale: 7 }),
        Value::Guid(_) => quoted(SqlType::UniqueIdentifier),
        Value::Large(l) => quoted(l.kind().max_type()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_indented_with_bars_under_operators_whose_siblings_follow() {
        let leaf = |t: &str| Node::leaf(t.to_string());
        let tree = Node {
            text: "Root".into(),
            children: vec![
                Node { text: "A".into(), children: vec![leaf("A1"), leaf("A2")] },
                Node { text: "B".into(), children: vec![leaf("B1")] },
            ],
        };
        assert_eq!(
            render(&tree),
            ["  |--Root", "       |--A", "       |    |--A1", "       |    |--A2", "       |--B", "            |--B1",]
        );
    }

    #[test]
    fn constants_and_operators_print_as_sql_server_does() {
        let table = |db: &DbRef, def: &Arc<Table>| (Arc::from(db.name("d")), def.clone());
        let at = PlanSite { database: "d", table: &table };
        let mut p = Printer::new(&[], &at);
        let row = vec!["[a]".to_string(), "[b]".to_string()];
        let c = |i| Box::new(Expr::Column(i));
        let k = |n| Box::new(Expr::Const(Value::Int(n)));
        let sum = Expr::Arith { op: BinaryOp::Add, left: c(0), right: k(1), ty: SqlType::Int };
        let product = Expr::Arith { op: BinaryOp::Multiply, left: Box::new(sum), right: c(1), ty: SqlType::Int };
        assert_eq!(p.expr(&product, &row), "([a]+(1))*[b]");
        let or = Expr::Or(
            Box::new(Expr::Compare { op: BinaryOp::Eq, left: c(0), right: k(1) }),
            Box::new(Expr::Compare { op: BinaryOp::Gt, left: c(1), right: k(-2) }),
        );
        let and = Expr::And(Box::new(or), Box::new(Expr::IsNull { expr: c(1), negated: true }));
        assert_eq!(p.expr(&and, &row), "([a]=(1) OR [b]>(-2)) AND [b] IS NOT NULL");
        assert_eq!(constant(&Value::str("it's")), "'it''s'");
        assert_eq!(constant(&Value::Decimal { value: 150, scale: 2 }), "(1.50)");
        let in_list = Expr::InList { expr: c(0), list: vec![*k(1), *k(2)], negated: false };
        assert_eq!(p.expr(&in_list, &row), "[a]=(1) OR [a]=(2)");
    }
}
