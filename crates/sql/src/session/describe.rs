//! `sp_describe_first_result_set @tsql [, @params] [, @browse_information_mode]`: the
//! columns of the first result set a batch would send, found by static analysis
//! (`tessera_execution::first_result`), described as SQL Server describes them
//! (`tessera_execution::sysprocs::describe`).

use super::{Runner, Stop};
use tessera_errors::msg;
use tessera_execution::first_result;
use tessera_execution::runtime::ExecCtx;
use tessera_execution::sysprocs::{describe, text_arg, NamedArg};

impl Runner<'_> {
    /// Runs `sp_describe_first_result_set`.
    pub(super) fn run_describe_first_result_set(&mut self, args: &[NamedArg]) -> Result<i32, Stop> {
        let Some(tsql) = text_arg(args, 0, "@tsql") else {
            return Err(Stop::Error(msg::MISSING_PARAMETER.with(&[&"sp_describe_first_result_set", &"@tsql"])));
        };
        describe::browse_mode(args).map_err(Stop::Error)?;
        let params =
            self.declared_parameters(&text_arg(args, 1, "@params").unwrap_or_default()).map_err(Stop::Error)?;
        let columns =
            first_result::first_result_of_batch(self.shared, &*self.state, &tsql, &params).map_err(Stop::Error)?;
        let ctx = ExecCtx::new(self.shared, self.state);
        describe::first_result_set(&columns, &ctx, &mut self.sink);
        Ok(0)
    }
}
