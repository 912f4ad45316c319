//! fio as a peer: the fio job equivalent to a run's parameters, running it, and reading its
//! JSON output. Used by `tessera bench iobench` to put our figures next to fio's on the same
//! file in the same run.
//!
//! Latencies compared are fio's total latency (`lat_ns`: from queueing the request to seeing its
//! completion), the one `tessera iobench` measures.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::params::{Access, EngineKind, Params, WriteData};
use crate::stats::Latency;

/// One direction of a fio job.
#[derive(Debug, Clone, PartialEq)]
pub struct FioDir {
    pub ios: u64,
    pub iops: f64,
    pub bytes_per_s: f64,
    /// Total latency (fio's `lat_ns`) as a histogram, read from fio's `json+` bins, so that
    /// runs can be pooled and percentiles taken as for our own; `None` without I/O.
    pub latency: Option<Latency>,
}

/// What fio reported for a job (all its clones, with `group_reporting`).
#[derive(Debug, Clone, PartialEq)]
pub struct FioResult {
    pub version: String,
    pub read: FioDir,
    pub write: FioDir,
    /// CPU use as fio reports it (percentages of one CPU).
    pub usr_cpu: f64,
    pub sys_cpu: f64,
}

impl FioResult {
    pub fn iops(&self) -> f64 {
        self.read.iops + self.write.iops
    }

    pub fn mib_per_s(&self) -> f64 {
        (self.read.bytes_per_s + self.write.bytes_per_s) / (1024.0 * 1024.0)
    }
}

/// fio's version ("fio-3.33"), or `None` when fio is not installed.
pub fn version() -> Option<String> {
    let out = Command::new("fio").arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn ms(seconds: f64) -> String {
    format!("{}ms", (seconds * 1000.0).round() as u64)
}

/// The fio command line (without `fio`) for `params` on `path`, I/O within `[start, end)`,
/// matching `engine`: io_uring with `-o` per job and `-t` jobs, or the thread pool as
/// `-t × -o` psync jobs of depth 1.
pub fn job_args(params: &Params, path: &Path, start: u64, end: u64, engine: EngineKind) -> Result<Vec<String>> {
    let name = path.to_str().ok_or_else(|| Error::new(format!("fio cannot take the path '{}'", path.display())))?;
    if name.contains(':') {
        return Err(Error::new(format!("fio cannot take a path with ':' ('{name}')")));
    }
    let random = matches!(params.access, Access::Random { .. });
    let rw = match (params.write_pct, random) {
        (0, true) => "randread",
        (0, false) => "read",
        (100, true) => "randwrite",
        (100, false) => "write",
        (_, true) => "randrw",
        (_, false) => "rw",
    };
    let mut a: Vec<String> = vec![
        "--name=iobench".into(),
        format!("--filename={name}"),
        format!("--rw={rw}"),
        format!("--bs={}", params.block_size),
        format!("--offset={start}"),
        format!("--size={}", end - start),
        "--time_based=1".into(),
        format!("--runtime={}", ms(params.duration)),
        "--thread=1".into(),
        "--group_reporting=1".into(),
        "--allow_file_create=0".into(),
        "--norandommap=1".into(),
        "--lat_percentiles=1".into(),
        "--output-format=json+".into(),
    ];
    if params.warmup > 0.0 {
        a.push(format!("--ramp_time={}", ms(params.warmup)));
    }
    if params.write_pct > 0 && params.write_pct < 100 {
        a.push(format!("--rwmixread={}", 100 - params.write_pct));
    }
    match params.access {
        Access::Random { align } if align != params.block_size => a.push(format!("--blockalign={align}")),
        Access::Sequential { stride } if stride != params.block_size => {
            return Err(Error::new("fio has no equivalent of a sequential stride other than the block size"))
        }
        _ => {}
    }
    if params.thread_stride > 0 {
        a.push(format!("--offset_increment={}", params.thread_stride));
    }
    a.push(format!("--direct={}", u8::from(params.direct)));
    if params.write_through {
        a.push("--sync=dsync".into());
    }
    match params.write_data {
        WriteData::Zeros => a.push("--zero_buffers=1".into()),
        WriteData::PerIoRandom => a.push("--refill_buffers=1".into()),
        // fio's default: random buffers, lightly scrambled per write.
        WriteData::RandomBuffer { .. } => {}
    }
    match params.seed {
        Some(seed) => a.push(format!("--randseed={seed}")),
        None => a.push("--randrepeat=0".into()),
    }
    match engine {
        EngineKind::Uring => {
            a.push("--ioengine=io_uring".into());
            a.push(format!("--iodepth={}", params.outstanding));
            a.push(format!("--numjobs={}", params.threads_per_target));
            if params.batch {
                a.push(format!("--iodepth_batch_submit={}", params.outstanding));
                a.push(format!("--iodepth_batch_complete_max={}", params.outstanding));
            }
        }
        EngineKind::Threads => {
            a.push("--ioengine=psync".into());
            a.push("--iodepth=1".into());
            a.push(format!("--numjobs={}", params.threads_per_target * params.outstanding));
        }
    }
    Ok(a)
}

/// Runs fio with `args` and reads its JSON.
pub fn run(args: &[String]) -> Result<FioResult> {
    let out = Command::new("fio").args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::new(
                "fio is not installed: install it (Debian/Ubuntu: apt-get install -y fio) or run \
                 scripts/bench-iobench.sh, which does",
            )
        } else {
            Error::new(format!("cannot run fio: {e}"))
        }
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(Error::new(format!("fio failed ({}): {}{}", out.status, stderr.trim(), stdout.trim())));
    }
    parse_output(&stdout)
}

/// Reads fio's `--output-format=json` (or `json+`) output (anything before the first '{' is skipped: fio
/// may print notes there).
pub fn parse_output(text: &str) -> Result<FioResult> {
    let start = text.find('{').ok_or_else(|| Error::new("fio printed no JSON"))?;
    let v: Value = serde_json::from_str(&text[start..]).map_err(|e| Error::new(format!("fio's JSON: {e}")))?;
    let job = v["jobs"].get(0).ok_or_else(|| Error::new("fio's JSON has no job"))?;
    let err = job["error"].as_i64().unwrap_or(0);
    if err != 0 {
        return Err(Error::new(format!("fio's job failed with error {err}")));
    }
    Ok(FioResult {
        version: v["fio version"].as_str().unwrap_or("fio").to_string(),
        read: direction(&job["read"])?,
        write: direction(&job["write"])?,
        usr_cpu: job["usr_cpu"].as_f64().unwrap_or(0.0),
        sys_cpu: job["sys_cpu"].as_f64().unwrap_or(0.0),
    })
}

fn direction(d: &Value) -> Result<FioDir> {
    let ios = d["total_ios"].as_u64().unwrap_or(0);
    let latency = if ios == 0 {
        None
    } else {
        Some(histogram(&d["lat_ns"]["bins"])?.ok_or_else(|| {
            Error::new("fio's JSON has no total-latency histogram (lat_ns bins: --output-format=json+)")
        })?)
    };
    Ok(FioDir {
        ios,
        iops: d["iops"].as_f64().unwrap_or(0.0),
        bytes_per_s: d["bw_bytes"].as_f64().unwrap_or(0.0),
        latency,
    })
}

/// fio's `json+` bins (`"latency in ns": count`, each latency the value fio's log-linear
/// histogram gives its bucket) as a [`Latency`]; `None` when there are none.
fn histogram(bins: &Value) -> Result<Option<Latency>> {
    let Some(bins) = bins.as_object() else { return Ok(None) };
    let mut h = Latency::new();
    for (ns, count) in bins {
        let ns: u64 = ns.parse().map_err(|_| Error::new(format!("fio's JSON has a latency bin named '{ns}'")))?;
        let count = count.as_u64().ok_or_else(|| Error::new(format!("fio's latency bin {ns} has no count")))?;
        h.record_ns_n(ns, count);
    }
    Ok((!h.is_empty()).then_some(h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{parse, Parsed};

    fn params(args: &str) -> Params {
        let v: Vec<&str> = args.split_whitespace().collect();
        match parse(&v).unwrap() {
            Parsed::Run(p) => *p,
            _ => unreachable!(),
        }
    }

    fn has(args: &[String], want: &str) -> bool {
        args.iter().any(|a| a == want)
    }

    #[test]
    fn seed_004_job() {
        let p = params("-b8K -d30 -W5 -t1 -h -r -w40 -L -Z1G f");
        let a = job_args(&p, Path::new("/d/f.dat"), 0, 1 << 30, EngineKind::Uring).unwrap();
        for want in [
            "--filename=/d/f.dat",
            "--rw=randrw",
            "--rwmixread=60",
            "--bs=8192",
            "--iodepth=2",
            "--numjobs=1",
            "--ioengine=io_uring",
            "--direct=1",
            "--sync=dsync",
            "--runtime=30000ms",
            "--ramp_time=5000ms",
            "--size=1073741824",
            "--offset=0",
            "--lat_percentiles=1",
            "--randseed=0",
        ] {
            assert!(has(&a, want), "{want} missing from {a:?}");
        }
    }

    #[test]
    fn pattern_jobs() {
        let p = params("--pattern t1,o32,b2m,s -W0 -Su -z f");
        let a = job_args(&p, Path::new("f"), 4096, 8192 + 4096, EngineKind::Threads).unwrap();
        for want in ["--rw=read", "--ioengine=psync", "--iodepth=1", "--numjobs=32", "--randrepeat=0", "--offset=4096"]
        {
            assert!(has(&a, want), "{want} missing from {a:?}");
        }
        assert!(!a.iter().any(|x| x.starts_with("--ramp_time") || x.starts_with("--sync")));
        let p = params("-b4K -r512 -w100 -Z f");
        let a = job_args(&p, Path::new("f"), 0, 1 << 20, EngineKind::Uring).unwrap();
        assert!(has(&a, "--rw=randwrite") && has(&a, "--blockalign=512") && has(&a, "--zero_buffers=1"));
        assert!(!a.iter().any(|x| x.starts_with("--iodepth_batch")));
        let p = params("-b4K -o16 --batch f");
        let a = job_args(&p, Path::new("f"), 0, 1 << 20, EngineKind::Uring).unwrap();
        assert!(has(&a, "--iodepth_batch_submit=16") && has(&a, "--iodepth_batch_complete_max=16"));
        assert!(job_args(&p, Path::new("a:b"), 0, 1 << 20, EngineKind::Uring).is_err());
    }

    #[test]
    fn reads_fio_json() {
        let text = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "iobench", "error" : 0, "usr_cpu" : 5.5, "sys_cpu" : 30.25,
      "read" : {
        "io_bytes" : 1000, "bw_bytes" : 2097152, "iops" : 512.5, "total_ios" : 5125,
        "lat_ns" : { "min" : 1000, "max" : 9000000, "mean" : 250000.0, "stddev" : 1000.0, "N" : 5125,
          "percentile" : { "50.000000" : 200704, "90.000000" : 301056, "99.000000" : 1011712,
                           "99.900000" : 5013504, "99.990000" : 8978432 },
          "bins" : { "200704" : 5000, "1011712" : 100, "8978432" : 25 } }
      },
      "write" : {
        "io_bytes" : 0, "bw_bytes" : 0, "iops" : 0.0, "total_ios" : 0,
        "lat_ns" : { "min" : 0, "max" : 0, "mean" : 0.0, "stddev" : 0.0, "N" : 0 }
      }
    }
  ]
}"#;
        let r = parse_output(text).unwrap();
        assert_eq!(r.version, "fio-3.33");
        assert_eq!(r.read.ios, 5125);
        assert!((r.iops() - 512.5).abs() < 1e-9);
        assert!((r.mib_per_s() - 2.0).abs() < 1e-9);
        let h = r.read.latency.as_ref().unwrap();
        assert_eq!(h.count(), 5125);
        assert!(h.quantile_ns(0.5).abs_diff(200_704) < 200 && h.quantile_ns(0.99).abs_diff(1_011_712) < 1_000);
        assert!(h.quantile_ns(0.9999).abs_diff(8_978_432) < 10_000);
        assert!(r.write.latency.is_none());
        // I/O without bins (plain json output) is refused rather than compared as zero.
        let plain = text.replace(r#""bins" : { "200704" : 5000, "1011712" : 100, "8978432" : 25 }"#, r#""x" : 0"#);
        assert!(parse_output(&plain).unwrap_err().to_string().contains("histogram"));
        assert!((r.sys_cpu - 30.25).abs() < 1e-9);
        assert!(parse_output("no json here").is_err());
        assert!(parse_output(r#"{"jobs":[{"error":5,"read":{},"write":{}}]}"#)
            .unwrap_err()
            .to_string()
            .contains("error 5"));
    }
}
