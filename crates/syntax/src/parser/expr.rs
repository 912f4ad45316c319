//! Expressions: precedence climbing over T-SQL's operator levels.
//!
//! From loosest to tightest: `OR`; `AND`; `NOT`; comparisons with `IS`, `BETWEEN`, `IN`,
//! `LIKE` and quantified comparisons (which do not chain); `+ - & ^ |`; `* / %`; unary
//! `+ - ~`; `COLLATE`.

use super::keywords::is_expression_keyword;
use super::{is_ident_token, is_reserved, Parser, Result, MAX_EXPR_DEPTH};
use crate::ast::{
    BinaryOp, Expr, FrameBound, Ident, Literal, ObjectName, OrderItem, TypeArg, TypeName, UnaryOp, Window, WindowFrame,
};
use crate::lexer::{Punct, Token, TokenKind};

/// The internal function a `(subquery).value(path, type)` call is parsed as.
pub const XML_VALUE: &str = "$XML_VALUE";

const PREC_OR: u8 = 1;
const PREC_AND: u8 = 2;
const PREC_NOT: u8 = 3;
const PREC_COMPARISON: u8 = 4;
const PREC_ADDITIVE: u8 = 5;
const PREC_MULTIPLICATIVE: u8 = 6;

/// Functions whose first argument is a date part (`DATEADD(day, 1, d)`).
const DATE_PART_FUNCTIONS: &[&str] = &["DATEADD", "DATEDIFF", "DATEDIFF_BIG", "DATEPART", "DATENAME", "DATETRUNC"];

/// Niladic functions written without parentheses.
const NILADIC_FUNCTIONS: &[&str] = &["CURRENT_TIMESTAMP", "CURRENT_USER", "SESSION_USER", "SYSTEM_USER", "USER"];

/// The binary operator a punctuation token denotes, with its precedence.
fn binary_operator(p: Punct) -> Option<(BinaryOp, u8)> {
    let op = match p {
        Punct::Star => (BinaryOp::Multiply, PREC_MULTIPLICATIVE),
        Punct::Slash => (BinaryOp::Divide, PREC_MULTIPLICATIVE),
        Punct::Percent => (BinaryOp::Modulo, PREC_MULTIPLICATIVE),
        Punct::Plus => (BinaryOp::Add, PREC_ADDITIVE),
        Punct::Minus => (BinaryOp::Subtract, PREC_ADDITIVE),
        Punct::Amp => (BinaryOp::BitAnd, PREC_ADDITIVE),
        Punct::Pipe => (BinaryOp::BitOr, PREC_ADDITIVE),
        Punct::Caret => (BinaryOp::BitXor, PREC_ADDITIVE),
        _ => return comparison_operator(p).map(|op| (op, PREC_COMPARISON)),
    };
    Some(op)
}

fn comparison_operator(p: Punct) -> Option<BinaryOp> {
    let op = match p {
        Punct::Eq => BinaryOp::Eq,
        Punct::LtGt | Punct::BangEq => BinaryOp::NotEq,
        Punct::Lt => BinaryOp::Lt,
        Punct::LtEq => BinaryOp::LtEq,
        Punct::Gt => BinaryOp::Gt,
        Punct::GtEq => BinaryOp::GtEq,
        Punct::BangLt => BinaryOp::NotLt,
        Punct::BangGt => BinaryOp::NotGt,
        _ => return None,
    };
    Some(op)
}

/// The operator of a compound assignment (`+=` → Add).
pub(super) fn compound_operator(p: Punct) -> Option<BinaryOp> {
    let op = match p {
        Punct::PlusEq => BinaryOp::Add,
        Punct::MinusEq => BinaryOp::Subtract,
        Punct::StarEq => BinaryOp::Multiply,
        Punct::SlashEq => BinaryOp::Divide,
        Punct::PercentEq => BinaryOp::Modulo,
        Punct::AmpEq => BinaryOp::BitAnd,
        Punct::PipeEq => BinaryOp::BitOr,
        Punct::CaretEq => BinaryOp::BitXor,
        _ => return None,
    };
    Some(op)
}

/// Whether `token` can start an expression (used where an expression is optional, as
/// after `RETURN`).
pub(super) fn starts_expression(token: &Token) -> bool {
    match &token.kind {
        TokenKind::Word => {
            !super::keywords::is_statement_word(token.text)
                && (!is_reserved(token.text) || is_expression_keyword(token.text))
        }
        TokenKind::Punct(p) => matches!(p, Punct::LParen | Punct::Minus | Punct::Plus | Punct::Tilde),
        TokenKind::Eof | TokenKind::Unknown => false,
        _ => true,
    }
}

fn boxed(expr: Expr) -> Box<Expr> {
    Box::new(expr)
}

impl Parser<'_> {
    /// An expression.
    pub(super) fn expr(&mut self) -> Result<Expr> {
        let expr = self.nested(|p| p.binary_expr(PREC_OR))?;
        if self.depth + tree_depth(&expr, MAX_EXPR_DEPTH) > MAX_EXPR_DEPTH {
            return Err(self.too_deep());
        }
        Ok(expr)
    }

    /// An expression, or `DEFAULT` (in VALUES lists, EXEC arguments and SET clauses).
    pub(super) fn expr_or_default(&mut self) -> Result<Expr> {
        if self.eat_word("DEFAULT") {
            return Ok(Expr::Default);
        }
        self.expr()
    }

    /// An expression whose operators all bind tighter than comparisons (the operands of
    /// `BETWEEN`, for instance).
    fn additive_expr(&mut self) -> Result<Expr> {
        self.nested(|p| p.binary_expr(PREC_ADDITIVE))
    }

    /// Precedence climbing: operators binding at least as tightly as `min`.
    fn binary_expr(&mut self, min: u8) -> Result<Expr> {
        let mut left = if min <= PREC_NOT && self.eat_word("NOT") {
            let operand = self.nested(|p| p.binary_expr(PREC_NOT))?;
            Expr::Unary { op: UnaryOp::Not, expr: boxed(operand) }
        } else {
            self.unary_expr()?
        };
        let mut after_predicate = false;
        // A left-deep chain (`1 + 1 + …`) is refused as it grows: built whole and refused
        // after, its drop alone would recurse once per operator, past any thread's stack.
        let mut chained = 0usize;
        loop {
            chained += 1;
            if self.depth + chained > MAX_EXPR_DEPTH {
                return Err(self.too_deep());
            }
            if min <= PREC_COMPARISON && !after_predicate {
                if let Some(predicate) = self.predicate_suffix(&left)? {
                    left = predicate;
                    after_predicate = true;
                    continue;
                }
            }
            // `a << b` and `a >> b` (two tokens written together): LEFT_SHIFT and RIGHT_SHIFT.
            if let Some(shift) = self.shift_operator() {
                if PREC_ADDITIVE < min {
                    break;
                }
                self.pos += 2;
                let right = self.nested(|p| p.binary_expr(PREC_ADDITIVE + 1))?;
                let name = ObjectName(vec![Ident::new(shift)]);
                left = Expr::Function {
                    name,
                    args: vec![left, right],
                    distinct: false,
                    star: false,
                    over: None,
                    within_group: vec![],
                };
                after_predicate = false;
                continue;
            }
            let (op, prec) = match &self.peek().kind {
                TokenKind::Word if self.peek().is_word("AND") => (BinaryOp::And, PREC_AND),
                TokenKind::Word if self.peek().is_word("OR") => (BinaryOp::Or, PREC_OR),
                TokenKind::Punct(p) => match binary_operator(*p) {
                    Some(op) => op,
                    None => break,
                },
                _ => break,
            };
            if prec < min || (prec == PREC_COMPARISON && after_predicate) {
                break;
            }
            self.pos += 1;
            if prec == PREC_COMPARISON {
                left = self.comparison_rest(op, left)?;
                after_predicate = true;
                continue;
            }
            let right = self.nested(|p| p.binary_expr(prec + 1))?;
            left = Expr::Binary { op, left: boxed(left), right: boxed(right) };
            after_predicate = false;
        }
        Ok(left)
    }

    /// The function `<<` or `>>` at the next two tokens stands for, if they are one of them.
    fn shift_operator(&self) -> Option<&'static str> {
        let (first, second) = (self.peek(), self.peek_nth(1));
        if first.start + 1 != second.start {
            return None;
        }
        match (&first.kind, &second.kind) {
            (TokenKind::Punct(Punct::Lt), TokenKind::Punct(Punct::Lt)) => Some("LEFT_SHIFT"),
            (TokenKind::Punct(Punct::Gt), TokenKind::Punct(Punct::Gt)) => Some("RIGHT_SHIFT"),
            _ => None,
        }
    }

    /// The right side of a comparison: an operand or `ANY|SOME|ALL (subquery)`.
    fn comparison_rest(&mut self, op: BinaryOp, left: Expr) -> Result<Expr> {
        let quantifier = ["ANY", "SOME", "ALL"].iter().find(|q| self.peek().is_word(q)).copied();
        if let Some(quantifier) = quantifier {
            self.pos += 1;
            self.expect_punct(Punct::LParen)?;
            let query = self.query()?;
            self.expect_punct(Punct::RParen)?;
            return Ok(Expr::Quantified { op, all: quantifier == "ALL", left: boxed(left), query: Box::new(query) });
        }
        let right = self.nested(|p| p.binary_expr(PREC_ADDITIVE))?;
        Ok(Expr::Binary { op, left: boxed(left), right: boxed(right) })
    }

    /// `IS [NOT] NULL`, `[NOT] BETWEEN`, `[NOT] IN`, `[NOT] LIKE` after `left`, if present.
    fn predicate_suffix(&mut self, left: &Expr) -> Result<Option<Expr>> {
        if self.eat_word("IS") {
            let negated = self.eat_word("NOT");
            self.expect_word("NULL")?;
            return Ok(Some(Expr::IsNull { expr: boxed(left.clone()), negated }));
        }
        let negated = self.peek().is_word("NOT") && self.peek_nth(1).kind == TokenKind::Word;
        let keyword = self.peek_nth(usize::from(negated));
        let predicate = ["BETWEEN", "IN", "LIKE"].into_iter().find(|k| keyword.is_word(k));
        let Some(predicate) = predicate else { return Ok(None) };
        self.pos += 1 + usize::from(negated);
        let expr = boxed(left.clone());
        let result = match predicate {
            "BETWEEN" => {
                let low = boxed(self.additive_expr()?);
                self.expect_word("AND")?;
                let high = boxed(self.additive_expr()?);
                Expr::Between { expr, negated, low, high }
            }
            "IN" => self.in_rest(expr, negated)?,
            _ => {
                let pattern = boxed(self.additive_expr()?);
                let escape = if self.eat_word("ESCAPE") { Some(boxed(self.additive_expr()?)) } else { None };
                Expr::Like { expr, negated, pattern, escape }
            }
        };
        Ok(Some(result))
    }

    /// `IN (list)` or `IN (subquery)` after the `IN`.
    fn in_rest(&mut self, expr: Box<Expr>, negated: bool) -> Result<Expr> {
        self.expect_punct(Punct::LParen)?;
        if self.peek_starts_query() {
            let query = Box::new(self.query()?);
            self.expect_punct(Punct::RParen)?;
            return Ok(Expr::InSubquery { expr, negated, query });
        }
        let list = self.comma_list(Parser::expr)?;
        self.expect_punct(Punct::RParen)?;
        Ok(Expr::InList { expr, negated, list })
    }

    /// Unary `+ - ~` (binding tighter than any binary operator), then a primary.
    fn unary_expr(&mut self) -> Result<Expr> {
        let op = match self.peek().kind {
            TokenKind::Punct(Punct::Minus) => UnaryOp::Minus,
            TokenKind::Punct(Punct::Plus) => UnaryOp::Plus,
            TokenKind::Punct(Punct::Tilde) => UnaryOp::BitNot,
            _ => return self.postfix_expr(),
        };
        self.pos += 1;
        let operand = self.nested(Parser::unary_expr)?;
        Ok(Expr::Unary { op, expr: boxed(operand) })
    }

    /// A primary with optional `COLLATE name` and `AT TIME ZONE zone` (the internal
    /// function `$AT_TIME_ZONE(value, zone)`).
    fn postfix_expr(&mut self) -> Result<Expr> {
        let mut expr = self.primary()?;
        loop {
            if self.eat_word("COLLATE") {
                let collation = self.any_word()?.value;
                expr = Expr::Collate { expr: boxed(expr), collation };
            } else if self.eat_words(&["AT", "TIME", "ZONE"]) {
                let zone = self.primary()?;
                expr = Expr::Function {
                    name: ObjectName(vec![Ident::new("$AT_TIME_ZONE")]),
                    args: vec![expr, zone],
                    distinct: false,
                    star: false,
                    over: None,
                    within_group: vec![],
                };
            } else {
                return Ok(expr);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr> {
        let token = self.peek().clone();
        let literal = match token.kind {
            TokenKind::Integer => Literal::Integer(token.text.to_string()),
            TokenKind::Decimal => Literal::Decimal(token.text.to_string()),
            TokenKind::Float => Literal::Float(token.text.to_string()),
            TokenKind::Money(amount) => Literal::Money(amount),
            TokenKind::String { value, unicode } => Literal::String { value, unicode },
            TokenKind::Binary(bytes) => Literal::Binary(bytes),
            TokenKind::Variable => {
                self.pos += 1;
                return self.xml_value_method(Expr::Variable(token.text.to_string()));
            }
            TokenKind::GlobalVariable => {
                self.pos += 1;
                return Ok(Expr::GlobalVariable(token.text.to_uppercase()));
            }
            TokenKind::Punct(Punct::LParen) => return self.parenthesized_expr(),
            TokenKind::Word => return self.word_expr(),
            TokenKind::QuotedIdent(_) => return self.name_expr(),
            _ => return Err(self.error_here()),
        };
        self.pos += 1;
        Ok(Expr::Literal(literal))
    }

    /// `(expr)` or `(subquery)`.
    fn parenthesized_expr(&mut self) -> Result<Expr> {
        self.expect_punct(Punct::LParen)?;
        let expr = if self.peek_is_any_word(&["SELECT", "WITH"]) {
            Expr::Subquery(Box::new(self.query()?))
        } else {
            Expr::Nested(boxed(self.expr()?))
        };
        self.expect_punct(Punct::RParen)?;
        if matches!(expr, Expr::Subquery(_)) {
            return self.xml_value_method(expr);
        }
        Ok(expr)
    }

    /// `document.value(path, type)` after a subquery (`(SELECT … FOR XML …, TYPE)`) or a
    /// variable: the xml value() method, kept as the internal function
    /// `$XML_VALUE(document, path, type)`; else the document alone.
    fn xml_value_method(&mut self, expr: Expr) -> Result<Expr> {
        let method = self.peek().is_punct(Punct::Dot) && self.peek_nth(1).is_word("value");
        if method && self.peek_nth(2).is_punct(Punct::LParen) {
            self.pos += 3;
            let path = self.expr()?;
            self.expect_punct(Punct::Comma)?;
            let ty = self.expr()?;
            self.expect_punct(Punct::RParen)?;
            let name = ObjectName(vec![Ident::new(XML_VALUE)]);
            return Ok(Expr::Function {
                name,
                args: vec![expr, path, ty],
                distinct: false,
                star: false,
                over: None,
                within_group: vec![],
            });
        }
        Ok(expr)
    }

    /// An expression starting with a word: a keyword expression, a column or a function.
    fn word_expr(&mut self) -> Result<Expr> {
        let token = self.peek().clone();
        let next_is_paren = self.peek_nth(1).is_punct(Punct::LParen);
        let upper = token.text.to_uppercase();
        match upper.as_str() {
            "NULL" => {
                self.pos += 1;
                Ok(Expr::Literal(Literal::Null))
            }
            "CASE" => self.case_expr(),
            "EXISTS" => {
                self.pos += 1;
                self.expect_punct(Punct::LParen)?;
                let query = self.query()?;
                self.expect_punct(Punct::RParen)?;
                Ok(Expr::Exists(Box::new(query)))
            }
            "NEXT" if self.peek_nth(1).is_word("VALUE") && self.peek_nth(2).is_word("FOR") => {
                self.pos += 3;
                let sequence = self.object_name()?;
                if !self.eat_word("OVER") {
                    return Ok(Expr::NextValueFor(sequence));
                }
                // `NEXT VALUE FOR s OVER (ORDER BY …)`: the window function
                // `$NEXT_VALUE_FOR(s)`, values handed out in the window's order.
                let over = Some(Box::new(self.window()?));
                Ok(Expr::Function {
                    name: ObjectName(vec![Ident::new("$NEXT_VALUE_FOR")]),
                    args: vec![Expr::Column(sequence)],
                    distinct: false,
                    star: false,
                    over,
                    within_group: vec![],
                })
            }
            "CAST" | "TRY_CAST" if next_is_paren => self.cast_expr(upper == "TRY_CAST"),
            "PARSE" | "TRY_PARSE" if next_is_paren => self.parse_expr(upper == "TRY_PARSE"),
            "CONVERT" | "TRY_CONVERT" if next_is_paren => self.convert_expr(upper == "TRY_CONVERT"),
            // `UPDATE(col)`: in a trigger, whether the statement set the column.
            "LEFT" | "RIGHT" | "COALESCE" | "NULLIF" | "UPDATE" if next_is_paren => {
                self.pos += 1;
                self.function_rest(ObjectName(vec![Ident::new(token.text)]))
            }
            _ if NILADIC_FUNCTIONS.contains(&upper.as_str()) && !next_is_paren => {
                self.pos += 1;
                let name = ObjectName(vec![Ident::new(upper)]);
                Ok(Expr::Function {
                    name,
                    args: vec![],
                    distinct: false,
                    star: false,
                    over: None,
                    within_group: vec![],
                })
            }
            _ => self.name_expr(),
        }
    }

    /// A column reference or a function call.
    fn name_expr(&mut self) -> Result<Expr> {
        let name = self.object_name()?;
        if self.peek().is_punct(Punct::LParen) {
            return self.function_rest(name);
        }
        Ok(Expr::Column(name))
    }

    /// The argument list and optional `OVER` clause of a call to `name`.
    fn function_rest(&mut self, name: ObjectName) -> Result<Expr> {
        self.expect_punct(Punct::LParen)?;
        let mut call = FunctionCall::default();
        if self.eat_punct(Punct::RParen) {
            return self.finish_call(name, call);
        }
        let single = name.0.len() == 1;
        if self.peek().is_punct(Punct::Star) && self.peek_nth(1).is_punct(Punct::RParen) {
            self.pos += 1;
            call.star = true;
        } else {
            if single && DATE_PART_FUNCTIONS.iter().any(|f| name.name().is(f)) {
                let part = self.ident()?;
                call.args.push(Expr::Column(ObjectName(vec![part])));
                if !self.peek().is_punct(Punct::RParen) {
                    self.expect_punct(Punct::Comma)?;
                }
            } else if self.eat_word("DISTINCT") {
                call.distinct = true;
            } else {
                self.eat_word("ALL");
            }
            if !self.peek().is_punct(Punct::RParen) {
                // A user-defined function's argument may be DEFAULT (its parameter's
                // default value).
                call.args.extend(self.comma_list(|p: &mut Parser| {
                    if !single && p.eat_word("DEFAULT") {
                        Ok(Expr::Default)
                    } else {
                        p.expr()
                    }
                })?);
            }
        }
        self.expect_punct(Punct::RParen)?;
        self.finish_call(name, call)
    }

    fn finish_call(&mut self, name: ObjectName, call: FunctionCall) -> Result<Expr> {
        let within_group = if self.eat_words(&["WITHIN", "GROUP"]) {
            self.expect_punct(Punct::LParen)?;
            self.expect_word("ORDER")?;
            self.expect_word("BY")?;
            let items = self.comma_list(Parser::order_item)?;
            self.expect_punct(Punct::RParen)?;
            items
        } else {
            vec![]
        };
        let over = if self.eat_word("OVER") { Some(Box::new(self.window()?)) } else { None };
        Ok(Expr::Function { name, args: call.args, distinct: call.distinct, star: call.star, over, within_group })
    }

    /// `( [PARTITION BY …] [ORDER BY …] )` after `OVER`.
    fn window(&mut self) -> Result<Window> {
        self.expect_punct(Punct::LParen)?;
        let mut window = Window { partition_by: vec![], order_by: vec![], frame: None };
        if self.eat_words(&["PARTITION", "BY"]) {
            window.partition_by = self.comma_list(Parser::expr)?;
        }
        if self.eat_words(&["ORDER", "BY"]) {
            window.order_by = self.comma_list(Parser::order_item)?;
        }
        if self.peek_is_any_word(&["ROWS", "RANGE"]) {
            let rows = self.advance().is_word("ROWS");
            let (start, end) = if self.eat_word("BETWEEN") {
                let start = self.frame_bound()?;
                self.expect_word("AND")?;
                (start, self.frame_bound()?)
            } else {
                (self.frame_bound()?, FrameBound::CurrentRow)
            };
            window.frame = Some(WindowFrame { rows, start, end });
        }
        self.expect_punct(Punct::RParen)?;
        Ok(window)
    }

    /// `UNBOUNDED PRECEDING | n PRECEDING | CURRENT ROW | n FOLLOWING | UNBOUNDED FOLLOWING`
    fn frame_bound(&mut self) -> Result<FrameBound> {
        if self.eat_words(&["CURRENT", "ROW"]) {
            return Ok(FrameBound::CurrentRow);
        }
        if self.eat_word("UNBOUNDED") {
            if self.eat_word("PRECEDING") {
                return Ok(FrameBound::UnboundedPreceding);
            }
            self.expect_word("FOLLOWING")?;
            return Ok(FrameBound::UnboundedFollowing);
        }
        if self.peek().kind != TokenKind::Integer {
            return Err(self.error_here());
        }
        let n: u64 = self.advance().text.parse().map_err(|_| self.error_here())?;
        if self.eat_word("PRECEDING") {
            return Ok(FrameBound::Preceding(n));
        }
        self.expect_word("FOLLOWING")?;
        Ok(FrameBound::Following(n))
    }

    /// `expr [ASC|DESC]`
    pub(super) fn order_item(&mut self) -> Result<OrderItem> {
        let expr = self.expr()?;
        let descending = self.eat_word("DESC");
        if !descending {
            self.eat_word("ASC");
        }
        Ok(OrderItem { expr, descending })
    }

    /// `CASE [operand] WHEN … THEN … [ELSE …] END`
    fn case_expr(&mut self) -> Result<Expr> {
        self.expect_word("CASE")?;
        let operand = if self.peek().is_word("WHEN") { None } else { Some(boxed(self.expr()?)) };
        let mut branches = Vec::new();
        while self.eat_word("WHEN") {
            let condition = self.expr()?;
            self.expect_word("THEN")?;
            branches.push((condition, self.expr()?));
        }
        if branches.is_empty() {
            return Err(self.error_here());
        }
        let otherwise = if self.eat_word("ELSE") { Some(boxed(self.expr()?)) } else { None };
        self.expect_word("END")?;
        Ok(Expr::Case { operand, branches, otherwise })
    }

    /// `CAST(expr AS type)`
    fn cast_expr(&mut self, try_: bool) -> Result<Expr> {
        self.pos += 1;
        self.expect_punct(Punct::LParen)?;
        let expr = boxed(self.expr()?);
        self.expect_word("AS")?;
        let ty = self.type_name()?;
        self.expect_punct(Punct::RParen)?;
        Ok(Expr::Cast { expr, ty, try_ })
    }

    /// `PARSE(expr AS type [USING culture])`, as the internal function
    /// `$PARSE(expr, CAST(NULL AS type), culture)` (`$TRY_PARSE` for TRY_PARSE), whose
    /// second argument carries the type.
    fn parse_expr(&mut self, try_: bool) -> Result<Expr> {
        self.pos += 1;
        self.expect_punct(Punct::LParen)?;
        let expr = self.expr()?;
        self.expect_word("AS")?;
        let ty = self.type_name()?;
        let culture = if self.eat_word("USING") { self.expr()? } else { Expr::Literal(Literal::Null) };
        self.expect_punct(Punct::RParen)?;
        let typed = Expr::Cast { expr: boxed(Expr::Literal(Literal::Null)), ty, try_: false };
        Ok(Expr::Function {
            name: ObjectName(vec![Ident::new(if try_ { "$TRY_PARSE" } else { "$PARSE" })]),
            args: vec![expr, typed, culture],
            distinct: false,
            star: false,
            over: None,
            within_group: vec![],
        })
    }

    /// `CONVERT(type, expr [, style])`
    fn convert_expr(&mut self, try_: bool) -> Result<Expr> {
        self.pos += 1;
        self.expect_punct(Punct::LParen)?;
        let ty = self.type_name()?;
        self.expect_punct(Punct::Comma)?;
        let expr = boxed(self.expr()?);
        let style = if self.eat_punct(Punct::Comma) { Some(boxed(self.expr()?)) } else { None };
        self.expect_punct(Punct::RParen)?;
        Ok(Expr::Convert { ty, expr, style, try_ })
    }

    /// A type: `int`, `varchar(max)`, `decimal(10, 2)`, `double precision`, `dbo.MyType`.
    pub(super) fn type_name(&mut self) -> Result<TypeName> {
        if self.eat_words(&["DOUBLE", "PRECISION"]) {
            return Ok(TypeName { name: "DOUBLE PRECISION".into(), args: vec![] });
        }
        let name = self.object_name()?;
        let name = match name.0.as_slice() {
            [single] => single.value.to_uppercase(),
            parts => parts.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join("."),
        };
        let args =
            if self.peek().is_punct(Punct::LParen) { self.parenthesized_list(Parser::type_arg)? } else { vec![] };
        Ok(TypeName { name, args })
    }

    fn type_arg(&mut self) -> Result<TypeArg> {
        if self.eat_word("MAX") {
            return Ok(TypeArg::Max);
        }
        let token = self.peek();
        if token.kind == TokenKind::Integer {
            if let Ok(n) = token.text.parse::<u32>() {
                self.pos += 1;
                return Ok(TypeArg::Number(n));
            }
        }
        Err(self.error_here())
    }

    /// Whether the next tokens start a query (`SELECT`, `WITH`, or parentheses around one).
    pub(super) fn peek_starts_query(&self) -> bool {
        let mut n = 0;
        while self.peek_nth(n).is_punct(Punct::LParen) {
            n += 1;
        }
        let token = self.peek_nth(n);
        token.is_word("SELECT") || (token.is_word("WITH") && is_ident_token(self.peek_nth(n + 1)))
    }
}

/// The depth of an expression tree (not entering subqueries), computed without recursion;
/// stops counting once past `limit`.
fn tree_depth<'e>(expr: &'e Expr, limit: usize) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(expr, 1usize)];
    while let Some((expr, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        if deepest > limit {
            break;
        }
        let mut push = |child: &'e Expr| stack.push((child, depth + 1));
        match expr {
            Expr::Literal(_)
            | Expr::Column(_)
            | Expr::Variable(_)
            | Expr::GlobalVariable(_)
            | Expr::Default
            | Expr::NextValueFor(_)
            | Expr::Exists(_)
            | Expr::Subquery(_) => {}
            Expr::Unary { expr, .. }
            | Expr::IsNull { expr, .. }
            | Expr::InSubquery { expr, .. }
            | Expr::Cast { expr, .. }
            | Expr::Collate { expr, .. }
            | Expr::Nested(expr) => push(expr),
            Expr::Quantified { left, .. } => push(left),
            Expr::Binary { left, right, .. } => {
                push(left);
                push(right);
            }
            Expr::Between { expr, low, high, .. } => {
                push(expr);
                push(low);
                push(high);
            }
            Expr::Like { expr, pattern, escape, .. } => {
                push(expr);
                push(pattern);
                escape.iter().for_each(|e| push(e));
            }
            Expr::InList { expr, list, .. } => {
                push(expr);
                list.iter().for_each(push);
            }
            Expr::Case { operand, branches, otherwise } => {
                operand.iter().chain(otherwise.iter()).for_each(|e| push(e));
                branches.iter().for_each(|(when, then)| {
                    push(when);
                    push(then);
                });
            }
            Expr::Convert { expr, style, .. } => {
                push(expr);
                style.iter().for_each(|e| push(e));
            }
            Expr::Function { args, over, .. } => {
                args.iter().for_each(&mut push);
                if let Some(window) = over {
                    window.partition_by.iter().for_each(&mut push);
                    window.order_by.iter().for_each(|item| push(&item.expr));
                }
            }
        }
    }
    deepest
}

/// The parts of a function call collected while parsing its arguments.
#[derive(Default)]
struct FunctionCall {
    args: Vec<Expr>,
    distinct: bool,
    star: bool,
}
