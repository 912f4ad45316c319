//! Function calls: user-defined scalar functions, aggregates, built-in functions (folded when
//! their arguments are constant), session functions and `@@` variables.

use super::aggregate::agg_func;
use super::conversion::{convert, unify};
use super::names::object_display;
use super::{invalid_column, Binder};
use crate::catalog::ModuleKind;
use crate::plan::{Expr, SessionFn};
use crate::types::{self, SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, BinaryOp, ObjectName};

impl<'a> Binder<'a> {
    pub(super) fn bind_function(
        &mut self,
        name: &ObjectName,
        args: &[ast::Expr],
        distinct: bool,
        star: bool,
        over: Option<&ast::Window>,
        within_group: &[ast::OrderItem],
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let fname = name.name().value.to_uppercase();
        if name.0.len() > 1 {
            if let Some((db, m)) = self.module(name, crate::catalog::Access::EXECUTE)? {
                if m.kind == ModuleKind::ScalarFunction {
                    return self.bind_scalar_function(&db, &m, args);
                }
            }
            return Err(msg::COLUMN_OR_FUNCTION_NOT_FOUND.with(&[&(name.0[0].value), &object_display(name)]));
        }
        if name.0.len() == 1 && matches!(fname.as_str(), "GROUPING" | "GROUPING_ID") {
            return self.bind_grouping(&fname, args);
        }
        if fname == tessera_syntax::parser::XML_VALUE {
            return self.bind_xml_value(args);
        }
        if let Some(w) = over {
            if name.0.len() == 1 {
                return self.bind_window_call(&fname, args, distinct, star, w);
            }
        }
        if let Some(func) = agg_func(&fname) {
            return self.bind_aggregate(func, &fname, args, distinct, star, within_group);
        }
        if super::window::needs_over(&fname) {
            return Err(msg::WINDOW_NEEDS_OVER.with(&[&fname.to_lowercase()]));
        }
        let arity = |n: usize| -> SqlResult<()> {
            if args.len() != n {
                return Err(msg::WRONG_ARGUMENT_COUNT.with(&[&fname.to_lowercase(), &n]));
            }
            Ok(())
        };
        match fname.as_str() {
            "COALESCE" => {
                if args.len() < 2 {
                    return Err(msg::ARGUMENT_COUNT_OUT_OF_RANGE.with(&[&"coalesce", &"2", &"254"]));
                }
                if args.iter().all(|a| matches!(a, ast::Expr::Literal(ast::Literal::Null))) {
                    return Err(msg::COALESCE_ALL_NULL.err());
                }
                let bound = args.iter().map(|a| self.bind_expr(a)).collect::<SqlResult<Vec<_>>>()?;
                let ty = unify(bound.iter())?;
                let args = bound.into_iter().map(|(e, t)| convert(e, &t, &ty)).collect::<SqlResult<Vec<_>>>()?;
                return Ok((Expr::Coalesce(args), ty, true));
            }
            "ISNULL" => {
                arity(2)?;
                let (a, at, an) = self.bind_expr_n(&args[0])?;
                let (b, bt, bn) = self.bind_expr_n(&args[1])?;
                // The type of the first argument (a NULL literal has none).
                let ty = if matches!(args[0], ast::Expr::Literal(ast::Literal::Null)) { bt } else { at };
                // A longer string is cut to the first argument's length, as SQL Server does.
                let text = |t: &SqlType| {
                    matches!(t, SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_))
                };
                let b = if text(&ty) && text(&bt) && bt != ty {
                    Expr::Cast { expr: Box::new(b), from: bt, to: ty, style: None, try_: false, implicit: true }
                } else {
                    convert(b, &bt, &ty)?
                };
                return Ok((Expr::Coalesce(vec![a, b]), ty, an && bn));
            }
            "NULLIF" => {
                arity(2)?;
                let (a, at) = self.bind_expr(&args[0])?;
                let (b, bt) = self.bind_expr(&args[1])?;
                let t = types::common_type(&at, &bt)?;
                let cond = Expr::Compare {
                    op: BinaryOp::Eq,
                    left: Box::new(convert(a.clone(), &at, &t)?),
                    right: Box::new(convert(b, &bt, &t)?),
                };
                return Ok((
                    Expr::Case { branches: vec![(cond, Expr::Const(Value::Null))], otherwise: Some(Box::new(a)) },
                    at,
                    true,
                ));
            }
            "IIF" => {
                arity(3)?;
                let c = self.bind_predicate(&args[0])?;
                let t = self.bind_expr(&args[1])?;
                let f = self.bind_expr(&args[2])?;
                let ty = unify([&t, &f].into_iter())?;
                let then = convert(t.0, &t.1, &ty)?;
                let other = convert(f.0, &f.1, &ty)?;
                return Ok((Expr::Case { branches: vec![(c, then)], otherwise: Some(Box::new(other)) }, ty, true));
            }
            "UPDATE" => {
                arity(1)?;
                let column = match &args[0] {
                    ast::Expr::Column(c) => c.name().value.clone(),
                    _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"("]).with_severity(15)),
                };
                let Some(rt) = super::dml::trigger_target(self)? else {
                    return Err(msg::UNRECOGNIZED_NAME.with(&[&"UPDATE", &"built-in function name"]).with_severity(15));
                };
                let i = rt.table.column(&column).ok_or_else(|| invalid_column(&column))?;
                let args = vec![Expr::Const(Value::Int(i as i64))];
                return Ok((Expr::Session { func: SessionFn::ColumnUpdated, args }, SqlType::Bit, true));
            }
            "DB_NAME"
            | "DB_ID"
            | "OBJECT_ID"
            | "OBJECT_NAME"
            | "SCHEMA_NAME"
            | "COL_LENGTH"
            | "TYPE_NAME"
            | "TYPE_ID"
            | "IDENT_CURRENT"
            | "SCOPE_IDENTITY"
            | "SERVERPROPERTY"
            | "DATABASEPROPERTYEX"
            | "XACT_STATE"
            | "CURSOR_STATUS"
            | "ERROR_NUMBER"
            | "ERROR_MESSAGE"
            | "ERROR_SEVERITY"
            | "ERROR_STATE"
            | "ERROR_LINE"
            | "ERROR_PROCEDURE"
            | "SUSER_NAME"
            | "SUSER_SNAME"
            | "ORIGINAL_LOGIN"
            | "USER_NAME"
            | "HOST_NAME"
            | "APP_NAME"
            | "IS_SRVROLEMEMBER"
            | "HAS_DBACCESS"
            | "SUSER_ID"
            | "SUSER_SID"
            | "LOGINPROPERTY"
            | "USER_ID"
            | "DATABASE_PRINCIPAL_ID"
            | "SCHEMA_ID"
            | "IS_MEMBER"
            | "IS_ROLEMEMBER"
            | "HAS_PERMS_BY_NAME"
            | "OBJECT_SCHEMA_NAME"
            | "COL_NAME"
            | "OBJECT_DEFINITION"
            | "OBJECTPROPERTY"
            | "OBJECTPROPERTYEX"
            | "COLUMNPROPERTY"
            | "INDEXPROPERTY"
            | "INDEXKEY_PROPERTY"
            | "TYPEPROPERTY"
            | "COLUMNS_UPDATED"
            | "EVENTDATA"
            | "TRIGGER_NESTLEVEL" => {
                match fname.as_str() {
                    "LOGINPROPERTY" => arity(2)?,
                    "IS_MEMBER" => arity(1)?,
                    "HAS_PERMS_BY_NAME" => arity(3)?,
                    "COL_NAME" | "CURSOR_STATUS" => arity(2)?,
                    _ => {}
                }
                let (func, ty) = session_function(&fname).expect("listed");
                let mut bound = Vec::with_capacity(args.len());
                for a in args {
                    let (e, t) = self.bind_expr(a)?;
                    // Names are passed as nvarchar, ids as int.
                    let to = if matches!(
                        t,
                        SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_)
                    ) {
                        SqlType::NVarChar(tessera_types::MAX)
                    } else if matches!(t, SqlType::Binary(_) | SqlType::VarBinary(_)) {
                        // SUSER_SNAME(sid)
                        SqlType::VarBinary(tessera_types::MAX)
                    } else {
                        SqlType::BigInt
                    };
                    bound.push(convert(e, &t, &to)?);
                }
                return Ok((Expr::Session { func, args: bound }, ty, true));
            }
            _ => {}
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut arg_types = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let is_part = i == 0
                && matches!(
                    fname.as_str(),
                    "DATEADD" | "DATEDIFF" | "DATEDIFF_BIG" | "DATEPART" | "DATENAME" | "DATETRUNC" | "DATE_BUCKET"
                );
            if is_part {
                if let ast::Expr::Column(part) = a {
                    bound.push(Expr::Const(Value::str(&part.name().value)));
                    arg_types.push(SqlType::VarChar(30));
                    continue;
                }
            }
            let (e, t) = self.bind_expr(a)?;
            bound.push(e);
            arg_types.push(t);
        }
        match types::function_type(&fname, &arg_types)? {
            Some(ty) => {
                // STR's length is an argument: a constant one gives the result its size.
                let ty = match (fname.as_str(), bound.get(1)) {
                    ("STR", Some(Expr::Const(Value::Int(n)))) if (1..=8000).contains(n) => SqlType::VarChar(*n as u16),
                    ("STR", None) => SqlType::VarChar(10),
                    _ => ty,
                };
                // Not folded into constants: results that change per call, or (DATEPART's
                // weekday) depend on session settings a cached plan would not see.
                let nondeterministic = matches!(
                    fname.as_str(),
                    "DATEPART"
                        | "RAND"
                        | "NEWID"
                        | "GETDATE"
                        | "SYSDATETIME"
                        | "GETUTCDATE"
                        | "SYSUTCDATETIME"
                        | "CURRENT_TIMESTAMP"
                        | "SYSDATETIMEOFFSET"
                );
                let all_const = bound.iter().all(|b| matches!(b, Expr::Const(_)));
                if all_const && !nondeterministic {
                    let vals: Vec<Value> = bound
                        .iter()
                        .map(|b| match b {
                            Expr::Const(v) => v.clone(),
                            _ => unreachable!("all constant"),
                        })
                        .collect();
                    // Constant folding: deterministic functions of constants (a fresh
                    // context is enough, they use neither clock nor generator; CHECKSUM
                    // hashes storage's key form, which the session provides).
                    let mut fctx = types::FunctionContext::new();
                    fctx.keys = self.session.key_encoding();
                    if let Ok(v) = types::call_function(&fname, &vals, &arg_types, &ty, &mut fctx) {
                        return Ok((Expr::Const(v), ty, true));
                    }
                }
                Ok((Expr::Func { name: fname, args: bound, arg_types, ty }, ty, true))
            }
            None => {
                Err(msg::UNRECOGNIZED_NAME.with(&[&(name.name().value), &"built-in function name"]).with_severity(15))
            }
        }
    }
}

impl Binder<'_> {
    /// `xml.value(path, 'type')`: the document's text (entities decoded, tags dropped) for
    /// the paths that mean the text of the whole document ('.', '(./text())[1]' and their
    /// like), else the value of the node `path` finds (`types::functions::xml`), as
    /// `type`.
    fn bind_xml_value(&mut self, args: &[ast::Expr]) -> SqlResult<(Expr, SqlType, bool)> {
        if args.len() != 3 {
            return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"value"]));
        }
        let literal = |e: &ast::Expr| match e {
            ast::Expr::Literal(ast::Literal::String { value, .. }) => Some(value.clone()),
            _ => None,
        };
        let path = literal(&args[1]).unwrap_or_default();
        let text_paths = [".", "(.)[1]", "./text()", "(./text())[1]", "text()", "(text())[1]", "(/text())[1]"];
        let whole = text_paths.contains(&path.replace(' ', "").as_str());
        if !whole {
            types::functions::xml::parse(&path)?;
        }
        let ty_text = literal(&args[2]).ok_or_else(|| msg::SYNTAX_ERROR_NEAR.with(&[&"value"]))?;
        let ast::Expr::Cast { ty, .. } =
            tessera_syntax::unparse::parse_definition(&format!("CAST(NULL AS {ty_text})"))?
        else {
            return Err(msg::SYNTAX_ERROR_NEAR.with(&[&ty_text]));
        };
        let (function, arguments) = if whole {
            ("$XML_TEXT", vec![args[0].clone()])
        } else {
            ("$XML_NODE_VALUE", vec![args[0].clone(), args[1].clone()])
        };
        let text = ast::Expr::Function {
            name: ObjectName(vec![ast::Ident::new(function)]),
            args: arguments,
            distinct: false,
            star: false,
            over: None,
            within_group: vec![],
        };
        self.bind_expr_n(&ast::Expr::Cast { expr: Box::new(text), ty, try_: false })
    }
}

fn session_function(name: &str) -> Option<(SessionFn, SqlType)> {
    use SessionFn::*;
    let nv = SqlType::NVarChar(128);
    Some(match name {
        "COLUMNS_UPDATED" => (ColumnsUpdated, SqlType::VarBinary(128)),
        "TRIGGER_NESTLEVEL" => (TriggerNestLevel, SqlType::Int),
        "EVENTDATA" => (EventData, SqlType::NVarChar(tessera_types::MAX)),
        "DB_NAME" => (DbName, nv),
        "DB_ID" => (DbId, SqlType::Int),
        "OBJECT_ID" => (ObjectId, SqlType::Int),
        "OBJECT_NAME" => (ObjectName, nv),
        "SCHEMA_NAME" => (SchemaName, nv),
        "COL_LENGTH" => (ColLength, SqlType::SmallInt),
        "TYPE_NAME" => (TypeName, nv),
        "TYPE_ID" => (TypeId, SqlType::Int),
        "IDENT_CURRENT" => (IdentCurrent, SqlType::Decimal { precision: 38, scale: 0 }),
        "SCOPE_IDENTITY" => (ScopeIdentity, SqlType::Decimal { precision: 38, scale: 0 }),
        "SERVERPROPERTY" => (ServerProperty, nv),
        "DATABASEPROPERTYEX" => (DatabasePropertyEx, nv),
        "XACT_STATE" => (XactState, SqlType::SmallInt),
        "CURSOR_STATUS" => (CursorStatus, SqlType::SmallInt),
        "ERROR_NUMBER" => (ErrorNumber, SqlType::Int),
        "ERROR_MESSAGE" => (ErrorMessage, SqlType::NVarChar(4000)),
        "ERROR_SEVERITY" => (ErrorSeverity, SqlType::Int),
        "ERROR_STATE" => (ErrorState, SqlType::Int),
        "ERROR_LINE" => (ErrorLine, SqlType::Int),
        "ERROR_PROCEDURE" => (ErrorProcedure, nv),
        "SUSER_NAME" | "SUSER_SNAME" | "SYSTEM_USER" => (SuserName, nv),
        "ORIGINAL_LOGIN" => (OriginalLogin, nv),
        "USER_ID" | "DATABASE_PRINCIPAL_ID" => (UserId, SqlType::Int),
        "SCHEMA_ID" => (SchemaId, SqlType::Int),
        "IS_MEMBER" => (IsMember, SqlType::Int),
        "IS_ROLEMEMBER" => (IsRoleMember, SqlType::Int),
        "HAS_PERMS_BY_NAME" => (HasPermsByName, SqlType::Int),
        "USER_NAME" | "CURRENT_USER" | "SESSION_USER" | "USER" => (UserName, nv),
        "HOST_NAME" => (HostName, nv),
        "APP_NAME" => (AppName, nv),
        "IS_SRVROLEMEMBER" => (IsSrvRoleMember, SqlType::Int),
        "LOGINPROPERTY" => (LoginProperty, nv),
        "SUSER_ID" => (SuserId, SqlType::Int),
        "SUSER_SID" => (SuserSid, SqlType::VarBinary(85)),
        "HAS_DBACCESS" => (HasDbAccess, SqlType::Int),
        "OBJECT_SCHEMA_NAME" => (ObjectSchemaName, nv),
        "COL_NAME" => (ColName, nv),
        "OBJECT_DEFINITION" => (ObjectDefinition, SqlType::NVarChar(tessera_types::MAX)),
        "OBJECTPROPERTY" => (ObjectProperty, SqlType::Int),
        "OBJECTPROPERTYEX" => (ObjectPropertyEx, nv),
        "COLUMNPROPERTY" => (ColumnProperty, SqlType::Int),
        "INDEXPROPERTY" => (IndexProperty, SqlType::Int),
        "INDEXKEY_PROPERTY" => (IndexKeyProperty, SqlType::Int),
        "TYPEPROPERTY" => (TypeProperty, SqlType::Int),
        _ => return None,
    })
}

pub(super) fn global_variable(name: &str) -> Option<(SessionFn, SqlType)> {
    use SessionFn::*;
    Some(match name {
        "@@ROWCOUNT" => (RowCount, SqlType::Int),
        "@@IDENTITY" => (Identity, SqlType::Decimal { precision: 38, scale: 0 }),
        "@@ERROR" => (Error, SqlType::Int),
        "@@TRANCOUNT" => (TranCount, SqlType::Int),
        "@@SPID" => (Spid, SqlType::SmallInt),
        "@@NESTLEVEL" => (NestLevel, SqlType::Int),
        "@@VERSION" => (Version, SqlType::NVarChar(300)),
        "@@MICROSOFTVERSION" => (MicrosoftVersion, SqlType::Int),
        "@@SERVERNAME" => (ServerName, SqlType::NVarChar(128)),
        "@@SERVICENAME" => (ServiceName, SqlType::NVarChar(128)),
        "@@LANGUAGE" => (Language, SqlType::NVarChar(128)),
        "@@MAX_PRECISION" => (MaxPrecision, SqlType::TinyInt),
        "@@TEXTSIZE" => (TextSize, SqlType::Int),
        "@@LOCK_TIMEOUT" => (LockTimeout, SqlType::Int),
        "@@OPTIONS" => (Options, SqlType::Int),
        "@@FETCH_STATUS" => (FetchStatus, SqlType::Int),
        "@@CURSOR_ROWS" => (CursorRows, SqlType::Int),
        "@@DATEFIRST" => (DateFirst, SqlType::TinyInt),
        "@@PROCID" => (ProcId, SqlType::Int),
        _ => return None,
    })
}
