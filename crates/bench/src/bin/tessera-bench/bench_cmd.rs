//! `tessera-bench bench <name>` (also `tessera bench <name>`): the workload benchmarks. Every benchmark takes the same flags
//! ([`CommonArgs`]) and ends the same way: a table or one JSON object on stdout, optionally a
//! chart, progress on stderr, and a non-zero exit when something could not be measured.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use tessera_bench::{engine, EngineParams, Report};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub bench: Bench,
}

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// Storage engine against SQLite and LMDB: point lookups, bulk insert, durable commits,
    /// buffer pool release.
    Engine(CommonArgs),
    /// Seed 002's point select through the T-SQL layer against SQLite's prepared statement.
    Sql(CommonArgs),
    /// Seed 002's point select over TCP through the TDS server (1 and 16 connections) next to
    /// PostgreSQL's pgbench in the same run.
    Pointselect(CommonArgs),
    /// Writers on the same rows (a hot counter, bank transfers over 10 and 10,000 accounts;
    /// 1, 4 and 16 connections) next to PostgreSQL's pgbench running the same
    /// transactions; both checked exact afterwards.
    Contention(CommonArgs),
    /// Seed 002's five buffer pool extension scenarios (memory, cold HDD, capped memory,
    /// capped memory plus an extension, cold SSD) through the TDS server.
    Bpe(CommonArgs),
    /// Seed 003's burst: one transaction of 10M rows into an indexed table, then releasing
    /// the pool, next to SQLite.
    Burst(CommonArgs),
    /// Seed 004: BACKUP and RESTORE MB/s over stripes, MAXTRANSFERSIZE, BUFFERCOUNT and
    /// compression, next to the disk's sequential copy rate measured in the same run.
    Backup(CommonArgs),
    /// SELECT * of a 4 GiB table over TDS with max server memory 512 MB, read by a streaming
    /// client: first-row latency and the server's RSS growth, next to PostgreSQL.
    Streaming(CommonArgs),
    /// Issue 19: 4,000 tenant databases of one schema × 200 stored procedures, every
    /// procedure run in every database: compiled plans, plan cache memory, and a shared
    /// plan's first run against a compile; then again with 10 % of the databases altered.
    Plancache(PlancacheArgs),
    /// Issue 20 / seed 000: PACE-like tenants (200 procedures each) at 500 … 8,000
    /// databases under one mix of procedure calls, one tessera instance and two pinned to
    /// half the CPUs each, next to PostgreSQL with a database per tenant behind PgBouncer and
    /// with a schema per tenant; `--idle N`: server RSS with N open idle databases.
    Consolidation(ConsolidationArgs),
    /// Issue 21: 100 quiet tenants' procedure calls at a fixed rate beside one noisy tenant
    /// scanning and bulk inserting flat out: the quiet p99 alone, beside it without limits
    /// and with its MAX_CPU_PERCENT / MAX_CONCURRENT_REQUESTS / MAX_LOG_RATE_KB on, next to
    /// PostgreSQL with the same tenants.
    Noisy(CommonArgs),
    /// Issue 38: what watching costs — seed 002's point select and seed 000's tenants on a
    /// plain server and on one with its Prometheus listener scraped every second and Query
    /// Store on in every database, in alternating pairs in the same run.
    Observed(ObservedArgs),
    /// Issue 33: BenchBase, unchanged and provided by the user, loading and running TPC-C
    /// (10 warehouses, 8 terminals, 120 s; 1 warehouse, 4 terminals, 20 s with --quick),
    /// YCSB A and C, SmallBank or TATP against tessera through mssql-jdbc and against
    /// PostgreSQL through pgjdbc in the same run: goodput, latency, server CPU per
    /// transaction, load time and their ratios.
    Benchbase(BenchbaseArgs),
    /// Issue 34: values of 1 MiB and one of 1 GiB written and read back through T-SQL, in
    /// process and over TDS, next to SQLite's incremental blob I/O.
    Lob(CommonArgs),
    /// Issue 34: 16 connections doing point selects beside 4 updating random rows, with READ
    /// COMMITTED SNAPSHOT on and off: the readers' throughput and p99, next to PostgreSQL
    /// running the same load.
    Rcsi(CommonArgs),
    /// Issue 39: three `tessera serve --etcd` servers of 2,000 tenants each behind two
    /// `tessera gateway`s against one server holding all 6,000, in the same run: a point
    /// select / update mix through the gateways and direct, the latency a gateway adds to
    /// `select 1`, and the write pause of `tessera move` under a writer (every acknowledged
    /// insert checked after each move).
    Fleet(FleetArgs),
    /// Disk I/O: tessera iobench next to fio on seed 001's and seed 004's patterns.
    Iobench(crate::iobench_cmd::IobenchBenchArgs),
}

/// The flags every benchmark accepts.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// A scaled-down run that finishes in about a minute on 2 cores (a smoke check).
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw the chart into FILE (.png or .svg).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Directory for the benchmark's files (a fresh subdirectory is made in it and removed
    /// afterwards) [default: the current directory, or $TMPDIR if that is not writable].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `tessera bench plancache`'s flags.
#[derive(Debug, Args)]
pub struct PlancacheArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Tenant databases to create (each takes about 8.5 MiB of disk) [default: 4,000;
    /// 200 with --quick].
    #[arg(long, value_name = "N")]
    pub databases: Option<usize>,
}

/// `tessera bench consolidation`'s flags.
#[derive(Debug, Args)]
pub struct ConsolidationArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Database counts, ascending [default: 500,1000,2000,4000,8000; 50,100,200,400 with
    /// --quick].
    #[arg(long, value_name = "N,…", value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Timed seconds per point [default: 20; 5 with --quick].
    #[arg(long, value_name = "S")]
    pub seconds: Option<u64>,
    /// Only measure the server's RSS with N open idle databases (the 10,000).
    #[arg(long, value_name = "N")]
    pub idle: Option<usize>,
    /// Only the scale run: the largest N databases made as copies of a template, under a
    /// 4,096-descriptor limit with 20,000 open at most, and a load over each N of them
    /// (the issue's: 500,4000,20000,100000; the largest a multiple of 4).
    #[arg(long, value_name = "N,…", value_delimiter = ',')]
    pub scale: Option<Vec<usize>>,
    /// Leave out PostgreSQL (tessera's two variants only).
    #[arg(long)]
    pub no_postgres: bool,
}

/// `tessera bench fleet`'s flags.
#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Tenant databases on each of the three servers; the one server holds three times as
    /// many [default: 2,000; 200 with --quick].
    #[arg(long, value_name = "N")]
    pub databases_per_server: Option<usize>,
    /// Client connections of the workload, each in a tenant drawn at random [default: 16].
    #[arg(long, value_name = "K")]
    pub connections: Option<usize>,
    /// Timed seconds of each workload phase (three pairs) [default: 10; 3 with --quick].
    #[arg(long, value_name = "S")]
    pub seconds: Option<u64>,
    /// `select 1` round trips on each side of the proxy-latency measurement [default:
    /// 20,000; 5,000 with --quick].
    #[arg(long, value_name = "N")]
    pub pings: Option<usize>,
    /// Tenants moved under a writer [default: 20; 5 with --quick].
    #[arg(long, value_name = "M")]
    pub moves: Option<usize>,
}

/// `tessera bench observed`'s flags.
#[derive(Debug, Args)]
pub struct ObservedArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Seconds between scrapes of the observed server's /metrics [default: 15].
    #[arg(long, value_name = "S")]
    pub scrape_seconds: Option<u64>,
}

/// `tessera bench benchbase`'s flags.
#[derive(Debug, Args)]
pub struct BenchbaseArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The directory holding BenchBase's two builds, unpacked: `benchbase-sqlserver/` and
    /// `benchbase-postgres/` (from `mvn package -P sqlserver` and `-P postgres`)
    /// [default: $BENCHBASE_HOME].
    #[arg(long, value_name = "DIR")]
    pub benchbase: Option<PathBuf>,
    /// The workloads to run: tpcc, ycsb-a, ycsb-c, smallbank, tatp, or all.
    #[arg(long, value_name = "NAME,…", value_delimiter = ',', default_value = "tpcc")]
    pub workload: Vec<String>,
    /// BenchBase's scale factor for every workload [default: each workload's own].
    #[arg(long, value_name = "N")]
    pub scale: Option<f64>,
    /// Client terminals [default: 8; 4 with --quick].
    #[arg(long, value_name = "N")]
    pub terminals: Option<usize>,
    /// Seconds each workload runs [default: 120; 20 with --quick].
    #[arg(long, value_name = "S")]
    pub time: Option<u64>,
    /// The Java runtime for BenchBase [default: $JAVA_HOME/bin/java, else java on PATH].
    #[arg(long, value_name = "PATH")]
    pub java: Option<PathBuf>,
    /// Run BenchBase's JVM on the first N CPUs and the server under test on the others,
    /// so that the client does not take the server's turn [default: all share every CPU].
    #[arg(long, value_name = "N")]
    pub client_cpus: Option<usize>,
}

/// `tessera bench benchbase`'s parameters from its flags and environment.
fn benchbase_params(
    args: &BenchbaseArgs,
    binary: PathBuf,
) -> Result<tessera_bench::benchbase::BenchbaseParams, String> {
    use tessera_bench::benchbase::{BenchbaseParams, CpuSplit, Workload};
    let home = args
        .benchbase
        .clone()
        .or_else(|| std::env::var_os("BENCHBASE_HOME").map(PathBuf::from))
        .ok_or("tessera bench benchbase: say where BenchBase's builds are (--benchbase DIR or $BENCHBASE_HOME)")?;
    let java = args
        .java
        .clone()
        .or_else(|| std::env::var_os("JAVA_HOME").map(|h| PathBuf::from(h).join("bin").join("java")))
        .unwrap_or_else(|| PathBuf::from("java"));
    let mut workloads = Vec::new();
    for name in &args.workload {
        if name.eq_ignore_ascii_case("all") {
            workloads.extend(Workload::ALL);
        } else {
            workloads.push(Workload::parse(name).ok_or_else(|| {
                format!(
                    "tessera bench benchbase: unknown workload '{name}' (tpcc, ycsb-a, ycsb-c, smallbank, tatp, all)"
                )
            })?);
        }
    }
    let mut params = BenchbaseParams::new(home, java, binary, workloads, args.common.quick);
    params.scale = args.scale;
    params.terminals = args.terminals.unwrap_or(params.terminals);
    params.seconds = args.time.unwrap_or(params.seconds);
    if let Some(n) = args.client_cpus {
        let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
        params.split = Some(CpuSplit::new(n, cpus).ok_or_else(|| {
            format!(
                "tessera bench benchbase: --client-cpus {n} must leave at least one of the {cpus} CPUs to the server"
            )
        })?);
    }
    Ok(params)
}

pub fn run(args: BenchArgs) -> ExitCode {
    match args.bench {
        Bench::Engine(common) => {
            let params = if common.quick { EngineParams::quick() } else { EngineParams::full() };
            finish(&common, |dir| engine::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Sql(common) => {
            let params = if common.quick {
                tessera_bench::sql::SqlParams::quick()
            } else {
                tessera_bench::sql::SqlParams::full()
            };
            finish(&common, |dir| tessera_bench::sql::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Pointselect(common) => {
            let params = if common.quick {
                tessera_bench::pointselect::PointselectParams::quick()
            } else {
                tessera_bench::pointselect::PointselectParams::full()
            };
            finish(&common, |dir| {
                tessera_bench::pointselect::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Contention(common) => {
            let params = if common.quick {
                tessera_bench::contention::ContentionParams::quick()
            } else {
                tessera_bench::contention::ContentionParams::full()
            };
            finish(&common, |dir| {
                tessera_bench::contention::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Bpe(common) => {
            let params = if common.quick {
                tessera_bench::bpe::BpeParams::quick()
            } else {
                tessera_bench::bpe::BpeParams::full()
            };
            finish(&common, |dir| tessera_bench::bpe::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Burst(common) => {
            let params = if common.quick {
                tessera_bench::burst::BurstParams::quick()
            } else {
                tessera_bench::burst::BurstParams::full()
            };
            finish(&common, |dir| tessera_bench::burst::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Backup(common) => {
            let params = if common.quick {
                tessera_bench::backup::BackupParams::quick()
            } else {
                tessera_bench::backup::BackupParams::full()
            };
            finish(&common, |dir| tessera_bench::backup::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Lob(common) => {
            let params = if common.quick {
                tessera_bench::lob::LobParams::quick()
            } else {
                tessera_bench::lob::LobParams::full()
            };
            finish(&common, |dir| tessera_bench::lob::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Rcsi(common) => {
            let params = if common.quick {
                tessera_bench::rcsi::RcsiParams::quick()
            } else {
                tessera_bench::rcsi::RcsiParams::full()
            };
            finish(&common, |dir| tessera_bench::rcsi::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Streaming(common) => {
            let params = if common.quick {
                tessera_bench::streaming::StreamingParams::quick()
            } else {
                tessera_bench::streaming::StreamingParams::full()
            };
            finish(&common, |dir| {
                tessera_bench::streaming::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Plancache(PlancacheArgs { common, databases }) => {
            let mut params = if common.quick {
                tessera_bench::plancache::PlancacheParams::quick()
            } else {
                tessera_bench::plancache::PlancacheParams::full()
            };
            params.databases = databases.unwrap_or(params.databases);
            finish(&common, |dir| {
                tessera_bench::plancache::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Consolidation(args) => {
            let Some(binary) = server_binary() else { return ExitCode::FAILURE };
            let mut params = if args.common.quick {
                tessera_bench::consolidation::ConsolidationParams::quick(binary)
            } else {
                tessera_bench::consolidation::ConsolidationParams::full(binary)
            };
            if let Some(sizes) = args.sizes {
                params.goal_size = if sizes.contains(&params.goal_size) {
                    params.goal_size
                } else {
                    *sizes.iter().max().unwrap_or(&0)
                };
                params.sizes = sizes;
            }
            params.seconds = args.seconds.unwrap_or(params.seconds);
            params.idle = args.idle;
            params.scale = args.scale.map(|sizes| tessera_bench::consolidation::scale::ScaleParams {
                sizes,
                ..tessera_bench::consolidation::scale::ScaleParams::full()
            });
            params.postgres = !args.no_postgres;
            finish(&args.common, |dir| {
                tessera_bench::consolidation::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Noisy(common) => {
            let Some(binary) = server_binary() else { return ExitCode::FAILURE };
            let params = if common.quick {
                tessera_bench::noisy::NoisyParams::quick(binary)
            } else {
                tessera_bench::noisy::NoisyParams::full(binary)
            };
            finish(&common, |dir| tessera_bench::noisy::run(dir, &params, &progress).map(|o| (o.report, o.failures)))
        }
        Bench::Observed(args) => {
            let Some(binary) = server_binary() else { return ExitCode::FAILURE };
            let mut params = if args.common.quick {
                tessera_bench::observed::ObservedParams::quick(binary)
            } else {
                tessera_bench::observed::ObservedParams::full(binary)
            };
            params.scrape_seconds = args.scrape_seconds.unwrap_or(params.scrape_seconds);
            finish(&args.common, |dir| {
                tessera_bench::observed::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Fleet(args) => {
            let Some(Some(binary)) = server_binary() else { return ExitCode::FAILURE };
            let mut params = if args.common.quick {
                tessera_bench::fleet::FleetParams::quick(binary)
            } else {
                tessera_bench::fleet::FleetParams::full(binary)
            };
            params.databases_per_server = args.databases_per_server.unwrap_or(params.databases_per_server);
            params.connections = args.connections.unwrap_or(params.connections);
            params.seconds = args.seconds.unwrap_or(params.seconds);
            params.pings = args.pings.unwrap_or(params.pings);
            params.moves = args.moves.unwrap_or(params.moves);
            finish(&args.common, |dir| {
                tessera_bench::fleet::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Benchbase(args) => {
            let Some(Some(binary)) = server_binary() else { return ExitCode::FAILURE };
            let params = match benchbase_params(&args, binary) {
                Ok(params) => params,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            finish(&args.common, |dir| {
                tessera_bench::benchbase::run(dir, &params, &progress).map(|o| (o.report, o.failures))
            })
        }
        Bench::Iobench(args) => finish(&args.common, |dir| crate::iobench_cmd::bench(dir, &args, &progress)),
    }
}

/// The `tessera` binary beside this one, which the benchmarks start their `tessera serve`
/// servers from: the server users run, not a copy linked into the benchmark.
fn server_binary() -> Option<Option<PathBuf>> {
    let beside = std::env::current_exe().map(|exe| exe.with_file_name("tessera"));
    match beside {
        Ok(path) if path.is_file() => Some(Some(path)),
        Ok(path) => {
            eprintln!(
                "tessera-bench: no tessera binary at '{}' to start servers from: build it too (cargo build --release -p tessera -p tessera-bench)",
                path.display()
            );
            None
        }
        Err(e) => {
            eprintln!("tessera-bench: cannot find the tessera binary to start servers from: {e}");
            None
        }
    }
}

fn progress(line: &str) {
    eprintln!("[bench] {line}");
}

/// Makes the work directory, runs `bench` in it, removes it, and writes the outputs.
fn finish(common: &CommonArgs, bench: impl FnOnce(&Path) -> tessera_bench::Result<(Report, Vec<String>)>) -> ExitCode {
    let work = match work_dir(common.dir.as_deref()) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("tessera bench: cannot make a work directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    progress(&format!("working in {}", work.path().display()));
    let outcome = bench(work.path());
    if let Err(e) = work.close() {
        eprintln!("tessera bench: could not remove the work directory: {e}");
    }
    let (report, failures) = match outcome {
        Ok(done) => done,
        Err(e) => {
            eprintln!("tessera bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    if common.json {
        println!("{}", report.to_json());
    } else {
        report.print_table();
    }
    let mut ok = failures.is_empty();
    if let Some(chart) = &common.chart {
        match report.write_chart(chart) {
            Ok(()) => progress(&format!("chart written to {}", chart.display())),
            Err(e) => {
                eprintln!("tessera bench: {e}");
                ok = false;
            }
        }
    }
    if !failures.is_empty() {
        eprintln!("tessera bench: {} part(s) not measured:", failures.len());
        for failure in &failures {
            eprintln!("  {failure}");
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A fresh directory for the benchmark's files: in `dir` if given, else in the current
/// directory, else in the system's temporary directory ($TMPDIR).
fn work_dir(dir: Option<&Path>) -> std::io::Result<tempfile::TempDir> {
    let make = |parent: &Path| {
        std::fs::create_dir_all(parent)?;
        tempfile::Builder::new().prefix("tessera-bench-").tempdir_in(parent)
    };
    match dir {
        Some(dir) => make(dir),
        None => std::env::current_dir().and_then(|cwd| make(&cwd)).or_else(|_| make(&std::env::temp_dir())),
    }
}
