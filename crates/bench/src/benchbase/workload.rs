//! The BenchBase workloads `tessera bench benchbase` runs, their sizes, and the
//! configuration file each system gets: BenchBase's own sample for the workload and the
//! system's profile, with only the connection, size, duration and rate replaced.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{BenchError, Result};

/// One workload of BenchBase's, as the benchmark names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Tpcc,
    /// YCSB workload A: half reads, half updates.
    YcsbA,
    /// YCSB workload C: reads only.
    YcsbC,
    Smallbank,
    Tatp,
}

impl Workload {
    pub const ALL: [Workload; 5] =
        [Workload::Tpcc, Workload::YcsbA, Workload::YcsbC, Workload::Smallbank, Workload::Tatp];

    /// The name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Tpcc => "tpcc",
            Workload::YcsbA => "ycsb-a",
            Workload::YcsbC => "ycsb-c",
            Workload::Smallbank => "smallbank",
            Workload::Tatp => "tatp",
        }
    }

    pub fn parse(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name().eq_ignore_ascii_case(name))
    }

    /// BenchBase's name for the benchmark (`-b`).
    pub fn benchmark(self) -> &'static str {
        match self {
            Workload::Tpcc => "tpcc",
            Workload::YcsbA | Workload::YcsbC => "ycsb",
            Workload::Smallbank => "smallbank",
            Workload::Tatp => "tatp",
        }
    }

    /// The transaction mix, in the order of the sample's transaction types (YCSB's:
    /// ReadRecord, InsertRecord, ScanRecord, UpdateRecord, DeleteRecord,
    /// ReadModifyWriteRecord); None keeps the sample's.
    fn weights(self) -> Option<&'static str> {
        match self {
            Workload::YcsbA => Some("50,0,0,50,0,0"),
            Workload::YcsbC => Some("100,0,0,0,0,0"),
            _ => None,
        }
    }

    /// BenchBase's scale factor: TPC-C warehouses, YCSB thousands of records, SmallBank
    /// millions of accounts, TATP hundreds of thousands of subscribers.
    pub fn scale(self, quick: bool) -> f64 {
        match (self, quick) {
            (Workload::Tpcc, false) => 10.0,
            (Workload::Tpcc, true) => 1.0,
            (Workload::YcsbA | Workload::YcsbC, false) => 100.0,
            (Workload::YcsbA | Workload::YcsbC, true) => 10.0,
            (Workload::Smallbank | Workload::Tatp, false) => 1.0,
            (Workload::Smallbank | Workload::Tatp, true) => 0.1,
        }
    }

    /// The goodput ratio over PostgreSQL asked for (issue 33: TPC-C and YCSB A and C at
    /// 1.5×; the others at parity).
    pub fn goal(self) -> f64 {
        match self {
            Workload::Tpcc | Workload::YcsbA | Workload::YcsbC => 1.5,
            Workload::Smallbank | Workload::Tatp => 1.0,
        }
    }
}

/// One of the two systems: BenchBase's build for it and how it connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    Tessera,
    Postgres,
}

impl System {
    pub fn name(self) -> &'static str {
        match self {
            System::Tessera => "tessera",
            System::Postgres => "postgresql",
        }
    }

    /// BenchBase's profile (`mvn package -P <profile>`), which names its unpacked directory
    /// and its sample configurations.
    fn profile(self) -> &'static str {
        match self {
            System::Tessera => "sqlserver",
            System::Postgres => "postgres",
        }
    }

    /// BenchBase's unpacked build for this system under `home`.
    pub fn build_dir(self, home: &Path) -> PathBuf {
        home.join(format!("benchbase-{}", self.profile()))
    }

    /// The JDBC URL, user and password. Both drivers batch inserts the way their own
    /// samples and documentation advise for loading: pgjdbc rewrites a batch into
    /// multi-row INSERTs (`reWriteBatchedInserts`, in BenchBase's PostgreSQL sample), and
    /// mssql-jdbc sends it as a bulk load (`useBulkCopyForBatchInsert`); without it every
    /// row of a batch is its own autocommitted statement.
    fn connection(self, port: u16, password: &str) -> (String, &'static str, String) {
        match self {
            System::Tessera => (
                format!(
                    "jdbc:sqlserver://127.0.0.1:{port};encrypt=false;trustServerCertificate=true;database=benchbase;useBulkCopyForBatchInsert=true;"
                ),
                "sa",
                password.to_string(),
            ),
            System::Postgres => (
                format!(
                    "jdbc:postgresql://127.0.0.1:{port}/benchbase?sslmode=disable&ApplicationName=benchbase&reWriteBatchedInserts=true"
                ),
                "postgres",
                "unused-trust-auth".to_string(),
            ),
        }
    }
}

/// How big and how long one run is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Size {
    pub scale: f64,
    pub terminals: usize,
    pub seconds: u64,
}

/// Writes the configuration for `workload` on `system` to `out`: BenchBase's sample for
/// it, with the connection, scale factor, terminals, one phase's duration, an unlimited
/// rate and (YCSB) the mix replaced, and SERIALIZABLE for both systems.
pub fn write_config(
    home: &Path,
    system: System,
    workload: Workload,
    size: Size,
    port: u16,
    password: &str,
    out: &Path,
) -> Result<()> {
    let sample = system
        .build_dir(home)
        .join("config")
        .join(system.profile())
        .join(format!("sample_{}_config.xml", workload.benchmark()));
    let mut xml = fs::read_to_string(&sample)
        .map_err(|e| BenchError::new(format!("BenchBase's sample configuration {}: {e}", sample.display())))?;
    let (url, user, pass) = system.connection(port, password);
    let scale = if size.scale.fract() == 0.0 { format!("{}", size.scale as u64) } else { size.scale.to_string() };
    let mut elements = vec![
        ("url", url),
        ("username", user.to_string()),
        ("password", pass),
        ("isolation", "TRANSACTION_SERIALIZABLE".to_string()),
        ("scalefactor", scale),
        ("terminals", size.terminals.to_string()),
        ("time", size.seconds.to_string()),
        ("rate", "unlimited".to_string()),
    ];
    if let Some(weights) = workload.weights() {
        elements.push(("weights", weights.to_string()));
    }
    for (tag, value) in elements {
        xml = replace_element(&xml, tag, &value)
            .ok_or_else(|| BenchError::new(format!("{} has no <{tag}> element", sample.display())))?;
    }
    fs::write(out, xml)?;
    Ok(())
}

/// `xml` with the text of the first `<tag>…</tag>` replaced by `value` (escaped).
fn replace_element(xml: &str, tag: &str, value: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    let escaped = value.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    Some(format!("{}{escaped}{}", &xml[..start], &xml[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_replaced_once_and_escaped() {
        let xml = "<p><url>jdbc:x</url><time>60</time><works><work><time>5</time></work></works></p>";
        let xml = replace_element(xml, "url", "jdbc:y?a=1&b=2").unwrap();
        let xml = replace_element(&xml, "time", "120").unwrap();
        assert_eq!(
            xml,
            "<p><url>jdbc:y?a=1&amp;b=2</url><time>120</time><works><work><time>5</time></work></works></p>"
        );
        assert!(replace_element(&xml, "rate", "unlimited").is_none());
    }

    #[test]
    fn workloads_parse_by_name() {
        for w in Workload::ALL {
            assert_eq!(Workload::parse(w.name()), Some(w));
        }
        assert_eq!(Workload::parse("TPCC"), Some(Workload::Tpcc));
        assert_eq!(Workload::parse("ycsb"), None);
    }
}
