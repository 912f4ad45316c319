//! `tessera iobench`: a diskspd/fio-style disk benchmark on tessera's io layer.
//!
//! - [`parser`]: diskspd's command line (`-b8K -o32 -r -w40 -Sh …`) and VMFleet's short form.
//! - [`params`]: what a run does.
//! - [`target`]: creating, filling and opening the files.
//! - [`engine`]: the io_uring engine and the thread-pool engine.
//! - [`run`]: one run, its phases and its [`RunResult`].
//! - [`stats`]: HDR latency histograms, percentiles, IOPS and MiB/s.
//! - [`cpu`]: CPU use from getrusage and /proc/stat.
//! - [`report`]: the text report and the JSON object.
//! - [`chart`]: the latency distribution as PNG or SVG.
//! - [`fio`]: running fio on the same workload and reading its JSON, for comparisons.

pub mod chart;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod fio;
pub mod params;
pub mod parser;
pub mod report;
pub mod rng;
pub mod run;
pub mod stats;
pub mod target;

pub use error::{Error, Result};
pub use params::{Access, EngineChoice, EngineKind, Params, WriteData};
pub use parser::{parse, Parsed};
pub use run::{run, Event, Progress, RunResult};
