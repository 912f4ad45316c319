//! Resource Governor: `CREATE/ALTER/DROP RESOURCE POOL`, `CREATE/ALTER/DROP WORKLOAD
//! GROUP` and `ALTER RESOURCE GOVERNOR`.

use super::{Parser, Result};
use crate::ast::governor::{GovernorOption, GovernorStatement, OptionValue};
use crate::ast::StatementKind;
use crate::lexer::{Punct, TokenKind};

impl Parser<'_> {
    /// After `CREATE RESOURCE POOL` or `ALTER RESOURCE POOL`.
    pub(super) fn resource_pool(&mut self, create: bool) -> Result<StatementKind> {
        let name = self.ident()?;
        let options = self.governor_options()?;
        let statement = if create {
            GovernorStatement::CreatePool { name, options }
        } else {
            GovernorStatement::AlterPool { name, options }
        };
        Ok(StatementKind::ResourceGovernor(statement))
    }

    /// After `CREATE WORKLOAD GROUP` or `ALTER WORKLOAD GROUP`.
    pub(super) fn workload_group(&mut self, create: bool) -> Result<StatementKind> {
        let name = self.ident()?;
        let options = self.governor_options()?;
        let pool = if self.eat_word("USING") { Some(self.ident()?) } else { None };
        let statement = if create {
            GovernorStatement::CreateGroup { name, options, pool }
        } else {
            GovernorStatement::AlterGroup { name, options, pool }
        };
        Ok(StatementKind::ResourceGovernor(statement))
    }

    /// After `ALTER RESOURCE GOVERNOR`.
    pub(super) fn alter_resource_governor(&mut self) -> Result<StatementKind> {
        let statement = if self.eat_word("RECONFIGURE") {
            GovernorStatement::Reconfigure
        } else if self.eat_word("DISABLE") {
            GovernorStatement::Disable
        } else if self.eat_words(&["RESET", "STATISTICS"]) {
            GovernorStatement::ResetStatistics
        } else {
            self.expect_word("WITH")?;
            self.expect_punct(Punct::LParen)?;
            self.expect_word("CLASSIFIER_FUNCTION")?;
            self.expect_punct(Punct::Eq)?;
            let function = if self.eat_word("NULL") { None } else { Some(self.object_name()?) };
            self.expect_punct(Punct::RParen)?;
            GovernorStatement::Classifier(function)
        };
        Ok(StatementKind::ResourceGovernor(statement))
    }

    /// `[WITH (NAME = value [, …])]`; none without WITH.
    fn governor_options(&mut self) -> Result<Vec<GovernorOption>> {
        let mut options = Vec::new();
        if !self.eat_word("WITH") {
            return Ok(options);
        }
        self.expect_punct(Punct::LParen)?;
        loop {
            let mut name = self.upper_word()?;
            if name == "AFFINITY" {
                name = format!("AFFINITY {}", self.upper_word()?);
            }
            self.expect_punct(Punct::Eq)?;
            let token = self.peek().clone();
            let value = match token.kind {
                TokenKind::Integer => {
                    self.pos += 1;
                    OptionValue::Number(token.text.parse().map_err(|_| self.error_here())?)
                }
                _ if token.is_punct(Punct::LParen) => {
                    let start = self.pos;
                    self.skip_parenthesized()?;
                    let words: Vec<&str> = (start..self.pos).map(|i| self.tokens[i].text).collect();
                    OptionValue::Word(words.join(" "))
                }
                _ => OptionValue::Word(self.upper_word()?),
            };
            options.push(GovernorOption { name, value });
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::governor::{GovernorOption, GovernorStatement, OptionValue};
    use crate::ast::{Ident, StatementKind};
    use crate::parser::parse_batch;

    fn statement(sql: &str) -> GovernorStatement {
        let mut batch = parse_batch(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(batch.statements.len(), 1);
        match batch.statements.remove(0).kind {
            StatementKind::ResourceGovernor(g) => g,
            other => panic!("{sql}: {other:?}"),
        }
    }

    fn option(name: &str, value: OptionValue) -> GovernorOption {
        GovernorOption { name: name.into(), value }
    }

    #[test]
    fn pools_groups_and_the_governor() {
        assert_eq!(
            statement(
                "CREATE RESOURCE POOL p WITH (MIN_CPU_PERCENT = 10, cap_cpu_percent = 30, AFFINITY SCHEDULER = AUTO)"
            ),
            GovernorStatement::CreatePool {
                name: Ident::new("p"),
                options: vec![
                    option("MIN_CPU_PERCENT", OptionValue::Number(10)),
                    option("CAP_CPU_PERCENT", OptionValue::Number(30)),
                    option("AFFINITY SCHEDULER", OptionValue::Word("AUTO".into())),
                ],
            }
        );
        assert_eq!(
            statement("ALTER RESOURCE POOL [default] WITH (AFFINITY SCHEDULER = (0 TO 1))"),
            GovernorStatement::AlterPool {
                name: Ident { value: "default".into(), quoted: true },
                options: vec![option("AFFINITY SCHEDULER", OptionValue::Word("( 0 TO 1 )".into()))],
            }
        );
        assert_eq!(statement("DROP RESOURCE POOL p"), GovernorStatement::DropPool(Ident::new("p")));
        assert_eq!(
            statement("CREATE WORKLOAD GROUP g WITH (IMPORTANCE = low, GROUP_MAX_REQUESTS = 4) USING \"default\""),
            GovernorStatement::CreateGroup {
                name: Ident::new("g"),
                options: vec![
                    option("IMPORTANCE", OptionValue::Word("LOW".into())),
                    option("GROUP_MAX_REQUESTS", OptionValue::Number(4)),
                ],
                pool: Some(Ident { value: "default".into(), quoted: true }),
            }
        );
        assert_eq!(
            statement("ALTER WORKLOAD GROUP g USING p"),
            GovernorStatement::AlterGroup { name: Ident::new("g"), options: vec![], pool: Some(Ident::new("p")) }
        );
        assert_eq!(statement("DROP WORKLOAD GROUP g"), GovernorStatement::DropGroup(Ident::new("g")));
        assert_eq!(statement("ALTER RESOURCE GOVERNOR RECONFIGURE"), GovernorStatement::Reconfigure);
        assert_eq!(statement("ALTER RESOURCE GOVERNOR DISABLE"), GovernorStatement::Disable);
        assert_eq!(statement("ALTER RESOURCE GOVERNOR RESET STATISTICS"), GovernorStatement::ResetStatistics);
        assert_eq!(
            statement("ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = NULL)"),
            GovernorStatement::Classifier(None)
        );
        let GovernorStatement::Classifier(Some(f)) =
            statement("ALTER RESOURCE GOVERNOR WITH (CLASSIFIER_FUNCTION = dbo.classify)")
        else {
            panic!("a classifier")
        };
        assert_eq!(f.0.len(), 2);
        assert!(parse_batch("CREATE RESOURCE POOL p WITH (MAX_CPU_PERCENT 5)").is_err());
        assert!(parse_batch("DROP RESOURCE POOL IF EXISTS p").is_err());
    }
}
