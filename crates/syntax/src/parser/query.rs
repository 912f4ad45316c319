//! Queries: CTEs, set operations, SELECT, FROM clauses with joins, ORDER BY/OFFSET/FETCH.

use super::{is_ident_token, Parser, Result};
use crate::ast::{
    Cte, Expr, ForClause, Ident, InsertSource, JoinHint, JoinKind, Literal, ObjectName, Query, QueryHints, Select,
    SelectItem, SetExpr, SetOperator, StatementKind, TableRef, Top, XmlMode,
};
use crate::lexer::{Punct, TokenKind};
use tessera_errors::msg;

/// Table hints accepted without `WITH` (`FROM t (NOLOCK)`).
const TABLE_HINTS: &[&str] = &[
    "NOLOCK",
    "READUNCOMMITTED",
    "READCOMMITTED",
    "READCOMMITTEDLOCK",
    "REPEATABLEREAD",
    "SERIALIZABLE",
    "HOLDLOCK",
    "SNAPSHOT",
    "UPDLOCK",
    "XLOCK",
    "ROWLOCK",
    "PAGLOCK",
    "TABLOCK",
    "TABLOCKX",
    "NOWAIT",
    "READPAST",
    "NOEXPAND",
    "FORCESEEK",
    "FORCESCAN",
    "KEEPIDENTITY",
    "KEEPDEFAULTS",
    "IGNORE_CONSTRAINTS",
    "IGNORE_TRIGGERS",
    "INDEX",
];

/// Grouping sets, each as positions in a GROUP BY list (see `Select::grouping_sets`).
type GroupingSets = Vec<Vec<usize>>;

impl Parser<'_> {
    /// A full query: `[WITH ctes] body [ORDER BY …] [OFFSET … [FETCH …]] [OPTION (…)]`.
    pub(super) fn query(&mut self) -> Result<Query> {
        self.nested(|p| {
            let with = if p.eat_word("WITH") { p.comma_list(Parser::cte)? } else { vec![] };
            let body = p.set_expr()?;
            let mut query = Query {
                with,
                body,
                order_by: vec![],
                offset: None,
                fetch: None,
                hints: QueryHints::default(),
                for_clause: None,
            };
            p.order_by_clause(&mut query)?;
            if p.peek().is_word("FOR") && (p.peek_nth(1).is_word("JSON") || p.peek_nth(1).is_word("XML")) {
                p.pos += 1;
                query.for_clause = Some(p.for_clause()?);
            }
            if p.eat_word("OPTION") {
                query.hints = p.query_hints()?;
            }
            Ok(query)
        })
    }

    /// `(hint, …)` after OPTION: MAXRECURSION and the join hints; the others are accepted
    /// and ignored. Several different join hints leave the choice among them to the
    /// optimizer, as no hint does here.
    pub(super) fn query_hints(&mut self) -> Result<QueryHints> {
        self.expect_punct(Punct::LParen)?;
        let mut hints = QueryHints::default();
        let mut joins = Vec::new();
        loop {
            let join = [("LOOP", JoinHint::Loop), ("HASH", JoinHint::Hash), ("MERGE", JoinHint::Merge)]
                .into_iter()
                .find(|(word, _)| self.peek().is_word(word) && self.peek_nth(1).is_word("JOIN"));
            if let Some((_, hint)) = join {
                self.advance();
                self.advance();
                if !joins.contains(&hint) {
                    joins.push(hint);
                }
            } else if self.eat_word("MAXRECURSION") {
                let token = self.advance();
                let line = token.line;
                let value = match token.kind {
                    TokenKind::Integer => token.text.parse::<u64>().ok(),
                    _ => None,
                };
                match value {
                    Some(v) if v <= 32767 => hints.max_recursion = Some(v as u16),
                    Some(v) => return Err(msg::MAXRECURSION_TOO_LARGE.with(&[&v]).at_line(line)),
                    None => return Err(self.error_here()),
                }
            } else {
                // Any other hint: its words and parenthesised arguments up to `,` or `)`.
                let mut depth = 0usize;
                loop {
                    match self.peek().kind {
                        TokenKind::Punct(Punct::Comma | Punct::RParen) if depth == 0 => break,
                        TokenKind::Punct(Punct::LParen) => depth += 1,
                        TokenKind::Punct(Punct::RParen) => depth -= 1,
                        TokenKind::Eof => return Err(self.error_here()),
                        _ => {}
                    }
                    self.advance();
                }
            }
            if !self.eat_punct(Punct::Comma) {
                self.expect_punct(Punct::RParen)?;
                hints.join = match joins[..] {
                    [only] => Some(only),
                    _ => None,
                };
                return Ok(hints);
            }
        }
    }

    /// A statement that starts with `WITH ctes`: a query, or INSERT, UPDATE, DELETE or MERGE
    /// whose source can read the CTEs.
    pub(super) fn with_statement(&mut self) -> Result<StatementKind> {
        let start = self.pos;
        self.expect_word("WITH")?;
        let with = self.comma_list(Parser::cte)?;
        if self.peek().is_word("INSERT") {
            let mut insert = self.insert()?;
            if let InsertSource::Query(q) = &mut insert.source {
                q.with = with;
            }
            return Ok(StatementKind::Insert(Box::new(insert)));
        }
        if self.peek().is_word("UPDATE") {
            let mut update = self.update()?;
            update.with = with;
            return Ok(StatementKind::Update(Box::new(update)));
        }
        if self.peek().is_word("DELETE") {
            let mut delete = self.delete()?;
            delete.with = with;
            return Ok(StatementKind::Delete(Box::new(delete)));
        }
        if self.peek().is_word("MERGE") {
            let mut merge = self.merge()?;
            merge.with = with;
            return Ok(StatementKind::Merge(Box::new(merge)));
        }
        self.pos = start;
        Ok(StatementKind::Query(Box::new(self.query()?)))
    }

    /// `name [(columns)] AS (query)`
    fn cte(&mut self) -> Result<Cte> {
        let name = self.ident()?;
        let columns = if self.peek().is_punct(Punct::LParen) { self.ident_list()? } else { vec![] };
        self.expect_word("AS")?;
        self.expect_punct(Punct::LParen)?;
        let query = Box::new(self.query()?);
        self.expect_punct(Punct::RParen)?;
        Ok(Cte { name, columns, query })
    }

    /// After FOR: `JSON PATH | AUTO [, option]…` or `XML RAW | AUTO | PATH [('name')] [, option]…`.
    fn for_clause(&mut self) -> Result<ForClause> {
        let name_arg = |p: &mut Self| -> Result<Option<String>> {
            if !p.eat_punct(Punct::LParen) {
                return Ok(None);
            }
            let TokenKind::String { value, .. } = p.peek().kind.clone() else { return Err(p.error_here()) };
            p.pos += 1;
            p.expect_punct(Punct::RParen)?;
            Ok(Some(value))
        };
        if self.eat_word("JSON") {
            let auto = if self.eat_word("AUTO") {
                true
            } else {
                self.expect_word("PATH")?;
                false
            };
            let (mut root, mut include_null_values, mut without_array_wrapper) = (None, false, false);
            while self.eat_punct(Punct::Comma) {
                if self.eat_word("ROOT") {
                    root = Some(name_arg(self)?.unwrap_or_else(|| "root".to_string()));
                } else if self.eat_word("INCLUDE_NULL_VALUES") {
                    include_null_values = true;
                } else {
                    self.expect_word("WITHOUT_ARRAY_WRAPPER")?;
                    without_array_wrapper = true;
                }
            }
            return Ok(ForClause::Json { auto, root, include_null_values, without_array_wrapper });
        }
        self.expect_word("XML")?;
        let mode = if self.eat_word("RAW") {
            XmlMode::Raw(name_arg(self)?)
        } else if self.eat_word("AUTO") {
            XmlMode::Auto
        } else {
            self.expect_word("PATH")?;
            XmlMode::Path(name_arg(self)?)
        };
        let (mut root, mut typed, mut elements) = (None, false, false);
        while self.eat_punct(Punct::Comma) {
            if self.eat_word("ROOT") {
                root = Some(name_arg(self)?.unwrap_or_else(|| "root".to_string()));
            } else if self.eat_word("TYPE") {
                typed = true;
            } else {
                self.expect_word("ELEMENTS")?;
                elements = true;
            }
        }
        Ok(ForClause::Xml { mode, root, typed, elements })
    }

    fn order_by_clause(&mut self, query: &mut Query) -> Result<()> {
        if !self.eat_words(&["ORDER", "BY"]) {
            return Ok(());
        }
        query.order_by = self.comma_list(Parser::order_item)?;
        if self.eat_word("OFFSET") {
            query.offset = Some(self.expr()?);
            self.expect_rows()?;
            if self.eat_word("FETCH") {
                if !self.eat_word("NEXT") {
                    self.expect_word("FIRST")?;
                }
                query.fetch = Some(self.expr()?);
                self.expect_rows()?;
                self.expect_word("ONLY")?;
            }
        }
        Ok(())
    }

    fn expect_rows(&mut self) -> Result<()> {
        if self.eat_word("ROWS") || self.eat_word("ROW") {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    /// `term { UNION [ALL] | EXCEPT term }`, where INTERSECT binds tighter.
    fn set_expr(&mut self) -> Result<SetExpr> {
        let mut left = self.intersect_term()?;
        for length in 1.. {
            self.check_chain(length)?;
            let op = if self.eat_word("UNION") {
                SetOperator::Union
            } else if self.eat_word("EXCEPT") {
                SetOperator::Except
            } else {
                return Ok(left);
            };
            let all = op == SetOperator::Union && self.eat_word("ALL");
            let right = self.intersect_term()?;
            left = SetExpr::SetOperation { op, all, left: Box::new(left), right: Box::new(right) };
        }
        Ok(left)
    }

    fn intersect_term(&mut self) -> Result<SetExpr> {
        let mut left = self.set_primary()?;
        let mut length = 0;
        while self.eat_word("INTERSECT") {
            length += 1;
            self.check_chain(length)?;
            let right = self.set_primary()?;
            left = SetExpr::SetOperation {
                op: SetOperator::Intersect,
                all: false,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
        Ok(left)
    }

    /// `SELECT …`, `(query)` or (in derived tables) `VALUES (…), (…)`.
    fn set_primary(&mut self) -> Result<SetExpr> {
        if self.eat_punct(Punct::LParen) {
            let query = self.query()?;
            self.expect_punct(Punct::RParen)?;
            return Ok(SetExpr::Query(Box::new(query)));
        }
        if self.peek().is_word("VALUES") {
            return Ok(SetExpr::Values(self.values_rows()?));
        }
        self.expect_word("SELECT")?;
        Ok(SetExpr::Select(Box::new(self.select_rest()?)))
    }

    /// `VALUES (…), (…)`; `DEFAULT` is allowed in the rows.
    pub(super) fn values_rows(&mut self) -> Result<Vec<Vec<Expr>>> {
        self.expect_word("VALUES")?;
        self.comma_list(|p| p.parenthesized_list(Parser::expr_or_default))
    }

    /// A SELECT after the `SELECT` keyword.
    fn select_rest(&mut self) -> Result<Select> {
        let distinct = self.eat_word("DISTINCT");
        if !distinct {
            self.eat_word("ALL");
        }
        let top = self.top_clause()?;
        let items = self.comma_list(Parser::select_item)?;
        let into = if self.eat_word("INTO") { Some(self.object_name()?) } else { None };
        let from = if self.eat_word("FROM") { self.table_sources()? } else { vec![] };
        let selection = self.where_clause()?;
        let (group_by, grouping_sets) =
            if self.eat_words(&["GROUP", "BY"]) { self.group_by_list()? } else { (vec![], None) };
        let having = if self.eat_word("HAVING") { Some(self.expr()?) } else { None };
        Ok(Select { distinct, top, items, into, from, selection, group_by, grouping_sets, having })
    }

    /// A GROUP BY list: its distinct expressions, and the grouping sets when it has ROLLUP,
    /// CUBE, GROUPING SETS or WITH ROLLUP / CUBE — the product of its elements' sets (a
    /// plain expression is one set of itself; ROLLUP(a, b) is (a, b), (a), (); CUBE every
    /// subset; GROUPING SETS its sets, each an element).
    fn group_by_list(&mut self) -> Result<(Vec<Expr>, Option<GroupingSets>)> {
        let mut exprs: Vec<Expr> = Vec::new();
        let position = |e: Expr, exprs: &mut Vec<Expr>| match exprs.iter().position(|x| *x == e) {
            Some(i) => i,
            None => {
                exprs.push(e);
                exprs.len() - 1
            }
        };
        let mut elements: Vec<Vec<Vec<usize>>> = Vec::new();
        let mut sets_used = false;
        loop {
            let element = if self.peek_is_any_word(&["ROLLUP", "CUBE"]) && self.peek_nth(1).is_punct(Punct::LParen) {
                sets_used = true;
                let rollup = self.advance().is_word("ROLLUP");
                let items = self.parenthesized_list(Parser::grouping_item)?;
                let items: Vec<Vec<usize>> =
                    items.into_iter().map(|g| g.into_iter().map(|e| position(e, &mut exprs)).collect()).collect();
                if rollup {
                    (0..=items.len()).rev().map(|n| items[..n].concat()).collect()
                } else {
                    let mut sets = Vec::new();
                    for mask in (0..1u32 << items.len()).rev() {
                        let set = (0..items.len()).filter(|i| mask & (1 << (items.len() - 1 - i)) != 0);
                        sets.push(set.flat_map(|i| items[i].clone()).collect());
                    }
                    sets
                }
            } else if self.peek().is_word("GROUPING") && self.peek_nth(1).is_word("SETS") {
                sets_used = true;
                self.pos += 2;
                let sets = self.parenthesized_list(Parser::grouping_item)?;
                sets.into_iter().map(|g| g.into_iter().map(|e| position(e, &mut exprs)).collect()).collect()
            } else {
                vec![vec![position(self.expr()?, &mut exprs)]]
            };
            elements.push(element);
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        if self.peek().is_word("WITH") && (self.peek_nth(1).is_word("ROLLUP") || self.peek_nth(1).is_word("CUBE")) {
            self.pos += 1;
            let rollup = self.advance().is_word("ROLLUP");
            let all: Vec<usize> = (0..exprs.len()).collect();
            elements = vec![if rollup {
                (0..=all.len()).rev().map(|n| all[..n].to_vec()).collect()
            } else {
                (0..1u32 << all.len())
                    .rev()
                    .map(|m| all.iter().copied().filter(|i| m & (1 << (all.len() - 1 - i)) != 0).collect())
                    .collect()
            }];
            sets_used = true;
        }
        if !sets_used {
            return Ok((exprs, None));
        }
        // The product: every combination of one set from each element.
        let mut sets: Vec<Vec<usize>> = vec![vec![]];
        for element in elements {
            let mut next = Vec::new();
            for s in &sets {
                for e in &element {
                    let mut combined = s.clone();
                    combined.extend(e.iter().filter(|i| !s.contains(i)));
                    next.push(combined);
                }
            }
            sets = next;
        }
        Ok((exprs, Some(sets)))
    }

    /// One item of ROLLUP, CUBE or GROUPING SETS: an expression, or a parenthesised list of
    /// them (`()` is the empty set).
    fn grouping_item(&mut self) -> Result<Vec<Expr>> {
        if self.peek().is_punct(Punct::LParen) && self.peek_nth(1).is_punct(Punct::RParen) {
            self.pos += 2;
            return Ok(vec![]);
        }
        if self.peek().is_punct(Punct::LParen) && !self.peek_nth(1).is_word("SELECT") {
            // `(a, b)` is a composite; `(a)` and `(a + 1)` read as one expression anyway.
            let start = self.pos;
            self.pos += 1;
            let list = self.comma_list(Parser::expr);
            if let Ok(list) = list {
                if self.eat_punct(Punct::RParen) {
                    return Ok(list);
                }
            }
            self.pos = start;
        }
        Ok(vec![self.expr()?])
    }

    pub(super) fn where_clause(&mut self) -> Result<Option<Expr>> {
        if self.eat_word("WHERE") {
            Ok(Some(self.expr()?))
        } else {
            Ok(None)
        }
    }

    /// `TOP n | TOP (expr) [PERCENT] [WITH TIES]`, if present.
    pub(super) fn top_clause(&mut self) -> Result<Option<Top>> {
        if !self.eat_word("TOP") {
            return Ok(None);
        }
        let count = if self.eat_punct(Punct::LParen) {
            let count = self.expr()?;
            self.expect_punct(Punct::RParen)?;
            count
        } else {
            self.top_constant()?
        };
        let percent = self.eat_word("PERCENT");
        let with_ties = self.eat_words(&["WITH", "TIES"]);
        Ok(Some(Top { count, percent, with_ties }))
    }

    /// The count of `TOP n` without parentheses: a number or a variable.
    fn top_constant(&mut self) -> Result<Expr> {
        let token = self.peek();
        match token.kind {
            TokenKind::Integer | TokenKind::Decimal | TokenKind::Float | TokenKind::Variable => self.expr_operand(),
            _ => Err(self.error_here()),
        }
    }

    /// A single literal or variable (no operators).
    fn expr_operand(&mut self) -> Result<Expr> {
        let token = self.advance();
        Ok(match token.kind {
            TokenKind::Integer => Expr::Literal(Literal::Integer(token.text.to_string())),
            TokenKind::Decimal => Expr::Literal(Literal::Decimal(token.text.to_string())),
            TokenKind::Float => Expr::Literal(Literal::Float(token.text.to_string())),
            _ => Expr::Variable(token.text.to_string()),
        })
    }

    /// A select-list item (also used for OUTPUT lists).
    pub(super) fn select_item(&mut self) -> Result<SelectItem> {
        if self.eat_punct(Punct::Star) {
            return Ok(SelectItem::Wildcard);
        }
        if let Some(item) = self.assignment_item()? {
            return Ok(item);
        }
        if let Some(name) = self.qualified_wildcard()? {
            return Ok(SelectItem::QualifiedWildcard(name));
        }
        // `alias = expr`
        let token = self.peek();
        let alias_like = is_ident_token(token) || matches!(token.kind, TokenKind::String { .. });
        if alias_like && self.peek_nth(1).is_punct(Punct::Eq) {
            let alias = self.alias_name()?;
            self.pos += 1;
            let expr = self.expr()?;
            return Ok(SelectItem::Expr { expr, alias: Some(alias) });
        }
        let expr = self.expr()?;
        let alias = self.optional_alias(true)?;
        Ok(SelectItem::Expr { expr, alias })
    }

    /// `@v = expr` or `@v += expr` in a select list.
    fn assignment_item(&mut self) -> Result<Option<SelectItem>> {
        if self.peek().kind != TokenKind::Variable {
            return Ok(None);
        }
        let op = match &self.peek_nth(1).kind {
            TokenKind::Punct(Punct::Eq) => None,
            TokenKind::Punct(p) => match super::expr::compound_operator(*p) {
                Some(op) => Some(op),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let variable = self.advance().text.to_string();
        self.pos += 1;
        let value = self.expr()?;
        Ok(Some(SelectItem::Assign { variable, op, value }))
    }

    /// `t.*`, `dbo.t.*`: the name before `.*`, if the next tokens are one.
    fn qualified_wildcard(&mut self) -> Result<Option<ObjectName>> {
        let mut n = 0;
        while is_ident_token(self.peek_nth(n)) && self.peek_nth(n + 1).is_punct(Punct::Dot) {
            n += 2;
            if self.peek_nth(n).is_punct(Punct::Star) {
                let name = self.object_name_before_star()?;
                return Ok(Some(name));
            }
        }
        Ok(None)
    }

    fn object_name_before_star(&mut self) -> Result<ObjectName> {
        let mut parts = vec![];
        loop {
            parts.push(self.ident()?);
            self.expect_punct(Punct::Dot)?;
            if self.eat_punct(Punct::Star) {
                return Ok(ObjectName(parts));
            }
        }
    }

    /// An alias: an identifier or a string literal (`expr 'alias'`).
    fn alias_name(&mut self) -> Result<Ident> {
        if let TokenKind::String { value, .. } = &self.peek().kind {
            let ident = Ident { value: value.clone(), quoted: true };
            self.pos += 1;
            return Ok(ident);
        }
        self.ident()
    }

    /// `[AS] alias`; string aliases only where `strings` is set (select lists).
    fn optional_alias(&mut self, strings: bool) -> Result<Option<Ident>> {
        if self.eat_word("AS") {
            return if strings { self.alias_name().map(Some) } else { self.ident().map(Some) };
        }
        let token = self.peek();
        let is_alias = (is_ident_token(token) && !super::keywords::is_statement_word(token.text))
            || (strings && matches!(token.kind, TokenKind::String { .. }));
        if is_alias {
            return self.alias_name().map(Some);
        }
        Ok(None)
    }

    // ---- FROM -------------------------------------------------------------------------

    /// `table_ref, table_ref …` after FROM.
    pub(super) fn table_sources(&mut self) -> Result<Vec<TableRef>> {
        self.comma_list(Parser::table_ref)
    }

    /// A table source with any joins that follow it.
    pub(super) fn table_ref(&mut self) -> Result<TableRef> {
        let mut left = self.table_primary()?;
        while self.peek_is_any_word(&["PIVOT", "UNPIVOT"]) {
            left = self.pivot(left)?;
        }
        self.joins(left)
    }

    /// `PIVOT (aggregate(value) FOR column IN ([v1], …)) [AS] alias` or `UNPIVOT (value FOR
    /// name IN ([c1], …)) [AS] alias` after a table source.
    fn pivot(&mut self, source: TableRef) -> Result<TableRef> {
        let pivot = self.advance().is_word("PIVOT");
        self.expect_punct(Punct::LParen)?;
        // PIVOT's aggregate call, or UNPIVOT's value column (an expression that is a name).
        let head = self.expr()?;
        self.expect_word("FOR")?;
        let column = self.ident()?;
        self.expect_word("IN")?;
        let list = self.parenthesized_list(Parser::ident)?;
        self.expect_punct(Punct::RParen)?;
        self.eat_word("AS");
        let alias = self.ident()?;
        let source = Box::new(source);
        if pivot {
            return Ok(TableRef::Pivot { source, aggregate: Box::new(head), column, values: list, alias });
        }
        let Expr::Column(value) = head else { return Err(self.error_here()) };
        let value = value.name().clone();
        Ok(TableRef::Unpivot { source, value, name: column, columns: list, alias })
    }

    fn joins(&mut self, mut left: TableRef) -> Result<TableRef> {
        let mut length = 0;
        while let Some((kind, hint)) = self.join_kind() {
            length += 1;
            self.check_chain(length)?;
            let mut right = self.table_primary()?;
            let needs_on = !matches!(kind, JoinKind::Cross | JoinKind::CrossApply | JoinKind::OuterApply);
            if needs_on && !self.peek().is_word("ON") && self.peek_join_start() {
                right = self.nested(|p| p.joins(right))?;
            }
            let on = if needs_on {
                self.expect_word("ON")?;
                Some(self.expr()?)
            } else {
                None
            };
            left = TableRef::Join { left: Box::new(left), right: Box::new(right), kind, on, hint };
        }
        Ok(left)
    }

    fn peek_join_start(&self) -> bool {
        self.peek_is_any_word(&["JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "OUTER"])
    }

    /// Consumes a join operator, if one comes next: `[kind] [hint] JOIN` (a hint needs the
    /// kind written before it: `INNER LOOP JOIN`, `LEFT OUTER HASH JOIN`), `CROSS JOIN`,
    /// `CROSS APPLY` or `OUTER APPLY`.
    fn join_kind(&mut self) -> Option<(JoinKind, Option<JoinHint>)> {
        let fixed: [(&[&str], JoinKind); 3] = [
            (&["CROSS", "JOIN"], JoinKind::Cross),
            (&["CROSS", "APPLY"], JoinKind::CrossApply),
            (&["OUTER", "APPLY"], JoinKind::OuterApply),
        ];
        if let Some((_, kind)) = fixed.into_iter().find(|(words, _)| self.eat_words(words)) {
            return Some((kind, None));
        }
        let start = self.pos;
        let kinds: [(&[&str], JoinKind); 7] = [
            (&["INNER"], JoinKind::Inner),
            (&["LEFT", "OUTER"], JoinKind::Left),
            (&["LEFT"], JoinKind::Left),
            (&["RIGHT", "OUTER"], JoinKind::Right),
            (&["RIGHT"], JoinKind::Right),
            (&["FULL", "OUTER"], JoinKind::Full),
            (&["FULL"], JoinKind::Full),
        ];
        let kind = kinds.into_iter().find(|(words, _)| self.eat_words(words)).map(|(_, kind)| kind);
        let hints = [
            ("LOOP", JoinHint::Loop),
            ("HASH", JoinHint::Hash),
            ("MERGE", JoinHint::Merge),
            ("REMOTE", JoinHint::Remote),
        ];
        let hint = kind.and_then(|_| hints.into_iter().find(|(word, _)| self.eat_word(word)).map(|(_, hint)| hint));
        if self.eat_word("JOIN") {
            return Some((kind.unwrap_or(JoinKind::Inner), hint));
        }
        self.pos = start;
        None
    }

    /// A table, `@table_variable`, table-valued function, derived table or parenthesised join.
    fn table_primary(&mut self) -> Result<TableRef> {
        if self.peek().is_punct(Punct::LParen) {
            return self.nested(Parser::parenthesized_table);
        }
        let name = self.table_or_variable()?;
        if self.peek().is_punct(Punct::LParen) && !self.peek_bare_hints() {
            self.expect_punct(Punct::LParen)?;
            let args =
                if self.peek().is_punct(Punct::RParen) { vec![] } else { self.comma_list(Parser::expr_or_default)? };
            self.expect_punct(Punct::RParen)?;
            if name.0.len() == 1 && name.name().is("OPENJSON") && self.peek().is_word("WITH") {
                return self.openjson_with(args);
            }
            let alias = self.optional_alias(false)?;
            return Ok(TableRef::Function { name, args, alias });
        }
        let mut hints = self.table_hints()?;
        let alias = self.optional_alias(false)?;
        hints.extend(self.table_hints()?);
        Ok(TableRef::Named { name, alias, hints })
    }

    /// After `OPENJSON(args)`: `WITH (column type ['path'] [AS JSON], …) [[AS] alias]`,
    /// read as the derived table `(SELECT CAST(JSON_VALUE([value], path) AS type) AS column,
    /// … FROM [openjson with](args)) AS alias`: the internal function gives each element of
    /// the array (or the object) the path finds, and each column is read from it at its
    /// path (`$.column` unless given; `AS JSON` reads an object or array, as JSON_QUERY).
    fn openjson_with(&mut self, args: Vec<Expr>) -> Result<TableRef> {
        self.expect_word("WITH")?;
        let items = self.parenthesized_list(|p| {
            let column = p.ident()?;
            let ty = p.type_name()?;
            let path = match &p.peek().kind {
                TokenKind::String { value, .. } => {
                    let v = value.clone();
                    p.pos += 1;
                    v
                }
                _ => format!("$.\"{}\"", column.value),
            };
            let as_json = p.eat_words(&["AS", "JSON"]);
            let value = Expr::Column(ObjectName(vec![Ident::new("value")]));
            let path = Expr::Literal(Literal::String { value: path, unicode: true });
            let call = |name: &str| Expr::Function {
                name: ObjectName(vec![Ident::new(name)]),
                args: vec![value.clone(), path.clone()],
                distinct: false,
                star: false,
                over: None,
                within_group: vec![],
            };
            let expr = if as_json {
                call("JSON_QUERY")
            } else {
                Expr::Cast { expr: Box::new(call("JSON_VALUE")), ty, try_: false }
            };
            Ok(SelectItem::Expr { expr, alias: Some(column) })
        })?;
        let alias = self.optional_alias(false)?.unwrap_or_else(|| Ident::new("openjson"));
        let elements = ObjectName(vec![Ident { value: "openjson with".into(), quoted: true }]);
        let from = vec![TableRef::Function { name: elements, args, alias: Some(Ident::new("$openjson")) }];
        let select = Select {
            distinct: false,
            top: None,
            items,
            into: None,
            from,
            selection: None,
            group_by: vec![],
            grouping_sets: None,
            having: None,
        };
        let query = Query {
            with: vec![],
            body: SetExpr::Select(Box::new(select)),
            order_by: vec![],
            offset: None,
            fetch: None,
            hints: QueryHints::default(),
            for_clause: None,
        };
        Ok(TableRef::Derived { query: Box::new(query), alias, columns: vec![] })
    }

    /// `(query) [AS] alias [(columns)]`, `(VALUES …) alias (columns)` or `(a JOIN b ON …)`.
    fn parenthesized_table(&mut self) -> Result<TableRef> {
        let mut n = 1;
        while self.peek_nth(n).is_punct(Punct::LParen) {
            n += 1;
        }
        let inner = self.peek_nth(n);
        let is_query = inner.is_word("SELECT") || inner.is_word("WITH") || inner.is_word("VALUES");
        self.expect_punct(Punct::LParen)?;
        if !is_query {
            let table = self.table_ref()?;
            self.expect_punct(Punct::RParen)?;
            return Ok(table);
        }
        let query = Box::new(self.query()?);
        self.expect_punct(Punct::RParen)?;
        self.eat_word("AS");
        let alias = self.ident()?;
        let columns = if self.peek().is_punct(Punct::LParen) { self.ident_list()? } else { vec![] };
        Ok(TableRef::Derived { query, alias, columns })
    }

    /// Whether `( hint, … )` follows, each a known table hint (so `t (NOLOCK)` is not a
    /// function call).
    fn peek_bare_hints(&self) -> bool {
        if !self.peek().is_punct(Punct::LParen) {
            return false;
        }
        let mut n = 1;
        loop {
            let token = self.peek_nth(n);
            if token.kind != TokenKind::Word || !TABLE_HINTS.iter().any(|h| token.is_word(h)) {
                return false;
            }
            match self.peek_nth(n + 1).kind {
                TokenKind::Punct(Punct::Comma) => n += 2,
                TokenKind::Punct(Punct::RParen) => return true,
                TokenKind::Punct(Punct::LParen) => return token.is_word("INDEX"),
                _ => return false,
            }
        }
    }

    /// `WITH (hint, …)` or bare `(hint, …)`; hints upper-cased, `INDEX(ix)` kept whole.
    pub(super) fn table_hints(&mut self) -> Result<Vec<String>> {
        let with = self.peek().is_word("WITH") && self.peek_nth(1).is_punct(Punct::LParen);
        if !with && !self.peek_bare_hints() {
            return Ok(vec![]);
        }
        if with {
            self.pos += 1;
        }
        self.parenthesized_list(Parser::table_hint)
    }

    fn table_hint(&mut self) -> Result<String> {
        let hint = self.upper_word()?;
        if hint == "INDEX" {
            let indexes = if self.eat_punct(Punct::Eq) {
                vec![self.index_hint_target()?]
            } else {
                self.parenthesized_list(Parser::index_hint_target)?
            };
            return Ok(format!("INDEX({})", indexes.join(", ")));
        }
        Ok(hint)
    }

    /// An index named in an `INDEX(…)` hint: a name or an index id.
    fn index_hint_target(&mut self) -> Result<String> {
        if self.peek().kind == TokenKind::Integer {
            return Ok(self.advance().text.to_string());
        }
        Ok(self.any_word()?.value)
    }
}
