//! `sp_describe_undeclared_parameters @tsql [, @params]`: the parameters a batch uses
//! without declaring them (neither in `@params` nor by DECLARE), each with the type its
//! use suggests — what the Microsoft JDBC driver's `getParameterMetaData` asks for. The
//! batch is parsed and every statement on every path is bound by a deducing binder
//! (`tessera_semantics::bind::Binder::deducing`, whose comment gives the rules); nothing
//! runs. A parameter used more than once is 11508, as in SQL Server; one whose use fixes
//! no type is 11502.

use super::{Runner, Stop};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_execution::runtime::ExecCtx;
use tessera_execution::sysprocs::{describe, text_arg, NamedArg};
use tessera_semantics::bind::{
    compile_assign, compile_delete, compile_insert, compile_merge, compile_update, Binder, Deduced,
};
use tessera_semantics::catalog::ModuleKind;
use tessera_semantics::frame::{addr, Frame};
use tessera_semantics::types::{self, SqlType};
use tessera_syntax::ast::{self, SelectItem, SetExpr, Statement, StatementKind};
use tessera_syntax::lexer::{tokenize, TokenKind};

impl Runner<'_> {
    /// Runs `sp_describe_undeclared_parameters`.
    pub(super) fn run_describe_undeclared_parameters(&mut self, args: &[NamedArg]) -> Result<i32, Stop> {
        let Some(tsql) = text_arg(args, 0, "@tsql") else {
            return Err(Stop::Error(msg::MISSING_PARAMETER.with(&[&"sp_describe_undeclared_parameters", &"@tsql"])));
        };
        let params =
            self.declared_parameters(&text_arg(args, 1, "@params").unwrap_or_default()).map_err(Stop::Error)?;
        let found = self.undeclared_parameters(&tsql, &params).map_err(Stop::Error)?;
        let ctx = ExecCtx::new(self.shared, self.state);
        describe::undeclared_parameters(&found, &ctx, &mut self.sink);
        Ok(0)
    }

    /// The undeclared parameters of `tsql`, in the order they first appear, with their
    /// deduced types.
    fn undeclared_parameters(&mut self, tsql: &str, params: &[ast::Parameter]) -> SqlResult<Vec<Deduced>> {
        let cached = self.shared.plans.get_or_parse(tsql, tessera_syntax::parser::parse_batch)?;
        let statements = &cached.batch.statements;
        let frame = Frame::of_procedure(params, statements)?;
        // Every `@name` of the text that no parameter or DECLARE declares, in order.
        let mut undeclared: Vec<(String, usize)> = Vec::new();
        for t in tokenize(tsql)? {
            if t.kind != TokenKind::Variable || frame.decls.iter().any(|(n, _)| n.eq_ignore_ascii_case(t.text)) {
                continue;
            }
            match undeclared.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(t.text)) {
                Some((_, uses)) => *uses += 1,
                None => undeclared.push((t.text.to_string(), 1)),
            }
        }
        if let Some((name, _)) = undeclared.iter().find(|(_, uses)| *uses > 1) {
            return Err(msg::DEDUCE_USED_TWICE.with(&[name]));
        }
        let mut deduced: Vec<Deduced> = Vec::new();
        if !undeclared.is_empty() {
            self.deduce_in(&frame, statements, &mut deduced)?;
        }
        undeclared
            .into_iter()
            .map(|(name, _)| {
                deduced
                    .iter()
                    .find(|d| d.name.eq_ignore_ascii_case(&name))
                    .cloned()
                    .ok_or_else(|| msg::DEDUCE_NOT_IN_CONTEXT.with(&[&name]))
            })
            .collect()
    }

    /// Binds every statement of `stmts` (and of the blocks and branches in them) with a
    /// deducing binder, adding what it deduces to `out`.
    fn deduce_in(&mut self, frame: &Frame, stmts: &[Statement], out: &mut Vec<Deduced>) -> SqlResult<()> {
        for s in stmts {
            match &s.kind {
                StatementKind::Block(body) => self.deduce_in(frame, body, out)?,
                StatementKind::If { condition, then, otherwise } => {
                    self.deduce_with(frame, s, out, |b| b.bind_predicate(condition).map(drop))?;
                    self.deduce_in(frame, std::slice::from_ref(then), out)?;
                    if let Some(o) = otherwise {
                        self.deduce_in(frame, std::slice::from_ref(o), out)?;
                    }
                }
                StatementKind::While { condition, body } => {
                    self.deduce_with(frame, s, out, |b| b.bind_predicate(condition).map(drop))?;
                    self.deduce_in(frame, std::slice::from_ref(body), out)?;
                }
                StatementKind::TryCatch { try_block, catch_block } => {
                    self.deduce_in(frame, try_block, out)?;
                    self.deduce_in(frame, catch_block, out)?;
                }
                _ => self.deduce_statement(frame, s, out)?,
            }
        }
        Ok(())
    }

    fn deduce_statement(&mut self, frame: &Frame, s: &Statement, out: &mut Vec<Deduced>) -> SqlResult<()> {
        match &s.kind {
            StatementKind::Query(q) => match &q.body {
                SetExpr::Select(sel) if sel.items.iter().any(|i| matches!(i, SelectItem::Assign { .. })) => {
                    self.deduce_with(frame, s, out, |b| compile_assign(b, sel, &q.order_by).map(drop))
                }
                _ => self.deduce_with(frame, s, out, |b| b.bind_query(q).map(drop)),
            },
            StatementKind::Insert(i) => self.deduce_with(frame, s, out, |b| compile_insert(b, i).map(drop)),
            StatementKind::Update(u) => self.deduce_with(frame, s, out, |b| compile_update(b, u).map(drop)),
            StatementKind::Delete(d) => self.deduce_with(frame, s, out, |b| compile_delete(b, d).map(drop)),
            StatementKind::Merge(m) => self.deduce_with(frame, s, out, |b| compile_merge(b, m).map(drop)),
            StatementKind::SetVariable { name, op, value } => {
                let declared = frame.decls.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, t)| *t);
                self.deduce_with(frame, s, out, |b| match declared {
                    // `SET @p = value`: an output parameter of the value's type.
                    None => {
                        let (_, t) = b.bind_expr(value)?;
                        b.note_deduced(name, t, true, None);
                        Ok(())
                    }
                    Some(t) if op.is_none() => b.bind_for(value, &t).map(drop),
                    Some(_) => b.bind_expr(value).map(drop),
                })
            }
            StatementKind::Declare(decls) => {
                for d in decls {
                    if let ast::DeclarationKind::Scalar { ty, init: Some(init) } = &d.kind {
                        let t = types::resolve_type(ty, false)?;
                        self.deduce_with(frame, s, out, |b| b.bind_for(init, &t).map(drop))?;
                    }
                }
                Ok(())
            }
            StatementKind::Return(Some(e)) => {
                self.deduce_with(frame, s, out, |b| b.bind_for(e, &SqlType::Int).map(drop))
            }
            StatementKind::Execute(e) => self.deduce_execute(frame, s, e, out),
            _ => Ok(()),
        }
    }

    /// `EXEC proc args`: an argument that is an undeclared parameter has the type of the
    /// procedure's parameter it is passed to, under that parameter's name (an output
    /// parameter if passed as OUTPUT).
    fn deduce_execute(
        &mut self,
        frame: &Frame,
        s: &Statement,
        e: &ast::Execute,
        out: &mut Vec<Deduced>,
    ) -> SqlResult<()> {
        let found = {
            let ctx = ExecCtx::new(self.shared, self.state);
            tessera_execution::modules::find(&ctx, &e.procedure)?
        };
        let Some((_, module)) = found.filter(|(_, m)| m.kind == ModuleKind::Procedure) else {
            // A system procedure or none: its arguments fix no types.
            return Ok(());
        };
        let cached = self.shared.plans.get_or_parse(&module.text, tessera_syntax::parser::parse_batch)?;
        let Some(StatementKind::CreateProcedure(cp)) = cached.batch.statements.first().map(|st| &st.kind) else {
            return Ok(());
        };
        let mut passed = Vec::new();
        for (i, arg) in e.args.iter().enumerate() {
            let formal = match &arg.name {
                Some(n) => cp.params.iter().find(|p| p.name.eq_ignore_ascii_case(n)),
                None => cp.params.get(i),
            };
            let Some(formal) = formal else {
                return Err(msg::TOO_MANY_ARGUMENTS.with(&[&module.name]));
            };
            passed.push((arg, formal.name.clone(), types::resolve_type(&formal.ty, false)?));
        }
        self.deduce_with(frame, s, out, |b| {
            for (arg, formal, ty) in &passed {
                match b.undeclared(&arg.value) {
                    Some(p) => {
                        b.note_deduced(p, *ty, arg.output, Some(formal));
                    }
                    None if !matches!(arg.value, ast::Expr::Default) => {
                        b.bind_expr(&arg.value)?;
                    }
                    None => {}
                }
            }
            Ok(())
        })
    }

    /// Runs `bind` with a deducing binder that sees the variables statement `s` sees, and
    /// adds what it deduced to `out` (the first deduction of a name stands).
    fn deduce_with(
        &mut self,
        frame: &Frame,
        s: &Statement,
        out: &mut Vec<Deduced>,
        bind: impl FnOnce(&mut Binder) -> SqlResult<()>,
    ) -> SqlResult<()> {
        let n = frame.visible.get(&addr(s)).copied().unwrap_or(frame.decls.len());
        let mut b = Binder::new(self.shared, self.state, &frame.decls[..n]).deducing();
        bind(&mut b)?;
        for d in b.take_deduced() {
            if !out.iter().any(|o| o.name.eq_ignore_ascii_case(&d.name)) {
                out.push(d);
            }
        }
        Ok(())
    }
}
