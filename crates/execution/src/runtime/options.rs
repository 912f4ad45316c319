//! A session's SET options, with @@OPTIONS and @@TEXTSIZE as SQL Server computes them.

impl Options {
    /// The on/off SET options: each one's name (as DBCC USEROPTIONS shows it), whether
    /// it is on, and its bit in @@OPTIONS.
    pub fn switches(&self) -> [(&'static str, bool, i64); 15] {
        [
            ("disable_def_cnst_chk", false, 1),
            ("implicit_transactions", self.implicit_transactions, 2),
            ("cursor_close_on_commit", self.cursor_close_on_commit, 4),
            ("ansi_warnings", self.ansi_warnings, 8),
            ("ansi_padding", self.ansi_padding, 16),
            ("ansi_nulls", self.ansi_nulls, 32),
            ("arithabort", self.arithabort, 64),
            ("arithignore", self.arithignore, 128),
            ("quoted_identifier", self.quoted_identifier, 256),
            ("nocount", self.nocount, 512),
            ("ansi_null_dflt_on", self.ansi_null_dflt_on, 1024),
            ("ansi_null_dflt_off", self.ansi_null_dflt_off, 2048),
            ("concat_null_yields_null", self.concat_null_yields_null, 4096),
            ("numeric_roundabort", self.numeric_roundabort, 8192),
            ("xact_abort", self.xact_abort, 16384),
        ]
    }

    /// `@@OPTIONS`: the SET options on, as SQL Server's bit mask (5496 by default).
    pub fn bits(&self) -> i64 {
        self.switches().iter().filter(|(_, on, _)| *on).map(|(_, _, bit)| bit).sum()
    }

    /// `@@TEXTSIZE`: 4096 until SET TEXTSIZE.
    pub fn text_size(&self) -> i64 {
        if self.textsize < 0 {
            4096
        } else {
            self.textsize
        }
    }
}

/// `SET LOCK_TIMEOUT` milliseconds as a wait limit: -1 (or any negative) waits forever.
pub fn lock_timeout(ms: i64) -> Option<std::time::Duration> {
    u64::try_from(ms).ok().map(std::time::Duration::from_millis)
}

/// Session options set with `SET`.
#[derive(Clone, Debug)]
pub struct Options {
    pub nocount: bool,
    pub xact_abort: bool,
    pub implicit_transactions: bool,
    pub ansi_nulls: bool,
    pub quoted_identifier: bool,
    pub concat_null_yields_null: bool,
    pub arithabort: bool,
    pub ansi_warnings: bool,
    /// Kept and shown in @@OPTIONS; tessera pads and defaults nullability as their
    /// defaults say, whatever they are set to.
    pub ansi_padding: bool,
    pub ansi_null_dflt_on: bool,
    pub ansi_null_dflt_off: bool,
    pub cursor_close_on_commit: bool,
    pub numeric_roundabort: bool,
    pub arithignore: bool,
    /// `SET FMTONLY ON`: queries return their column metadata and no rows; data
    /// modifications are not carried out (freebcp and older drivers ask result shapes so).
    pub fmtonly: bool,
    /// `SET SHOWPLAN_TEXT`, `SET STATISTICS IO`, `SET STATISTICS TIME` (session/showplan.rs,
    /// statistics.rs).
    pub showplan_text: bool,
    pub statistics_io: bool,
    pub statistics_time: bool,
    pub textsize: i64,
    pub lock_timeout: i64,
    pub rowcount: i64,
    pub datefirst: i64,
    pub dateformat: String,
    pub language: String,
    pub isolation_level: String,
    /// The table (database, object id) with IDENTITY_INSERT ON, if any.
    pub identity_insert: Option<(String, i32)>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            nocount: false,
            xact_abort: false,
            implicit_transactions: false,
            ansi_nulls: true,
            quoted_identifier: true,
            concat_null_yields_null: true,
            arithabort: true,
            ansi_warnings: true,
            ansi_padding: true,
            ansi_null_dflt_on: true,
            ansi_null_dflt_off: false,
            cursor_close_on_commit: false,
            numeric_roundabort: false,
            arithignore: false,
            fmtonly: false,
            showplan_text: false,
            statistics_io: false,
            statistics_time: false,
            textsize: -1,
            lock_timeout: -1,
            rowcount: 0,
            datefirst: 7,
            dateformat: "mdy".to_string(),
            language: "us_english".to_string(),
            isolation_level: "READ COMMITTED".to_string(),
            identity_insert: None,
        }
    }
}
