//! What one `tessera iobench` run does: the workload (diskspd's model), the engine and the
//! outputs. Built by [`crate::parser`] from diskspd-style flags, or directly by code.

use std::path::PathBuf;

use serde::Serialize;

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;

/// Size of the random buffer writes are taken from when `-Z` is not given (at least one block).
pub const DEFAULT_WRITE_BUFFER: u64 = 16 * MIB;

/// Which I/O engine issues the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineChoice {
    /// io_uring where the kernel allows it, else the thread pool.
    Auto,
    /// io_uring: one ring per thread with `-o` requests in flight.
    Uring,
    /// Portable: `-o` threads per thread, each doing blocking pread/pwrite.
    Threads,
}

impl EngineChoice {
    pub fn parse(text: &str) -> Option<EngineChoice> {
        match text.to_ascii_lowercase().as_str() {
            "auto" => Some(EngineChoice::Auto),
            "uring" | "io_uring" | "io-uring" => Some(EngineChoice::Uring),
            "threads" | "thread" | "psync" | "pool" => Some(EngineChoice::Threads),
            _ => None,
        }
    }
}

/// The engine that actually ran (after `auto` was resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    Uring,
    Threads,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Uring => "io_uring",
            EngineKind::Threads => "threads (pread/pwrite)",
        }
    }
}

/// Where successive I/Os go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Access {
    /// Uniformly random offsets, multiples of `align` from the start of the range (`-r`).
    Random { align: u64 },
    /// Each thread walks the range in steps of `stride` bytes, wrapping at its end (`-s`).
    Sequential { stride: u64 },
}

/// What writes carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WriteData {
    /// Zeros (`-Z`): compressible, deduplicable; only for comparison.
    Zeros,
    /// Fresh random bytes for every write (`-Zr`); costs CPU per write.
    PerIoRandom,
    /// Slices at random offsets of one buffer of random bytes (`-Z<size>`; the default, with
    /// [`DEFAULT_WRITE_BUFFER`]).
    RandomBuffer { size: u64 },
}

/// One run's parameters. Every target gets the same workload, as with diskspd.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Params {
    pub targets: Vec<PathBuf>,
    /// Bytes per I/O (`-b`, default 64 KiB).
    pub block_size: u64,
    /// Measured seconds (`-d`, default 10).
    pub duration: f64,
    /// Seconds of I/O before measuring starts (`-W`, default 5).
    pub warmup: f64,
    /// Seconds of I/O after measuring ends (`-C`, default 0).
    pub cooldown: f64,
    /// Threads per target (`-t`, default 1).
    pub threads_per_target: u32,
    /// I/Os in flight per thread (`-o`, default 2).
    pub outstanding: u32,
    pub access: Access,
    /// Percentage of I/Os that are writes (`-w`, default 0).
    pub write_pct: u32,
    pub write_data: WriteData,
    /// Create (or extend) each target to this size first (`-c`).
    pub create_size: Option<u64>,
    /// Bypass the OS cache: O_DIRECT (`-Su`, `-Sh`, `-h`).
    pub direct: bool,
    /// Writes reach stable storage before they complete: O_DSYNC (`-Sw`, `-Sh`, `-h`).
    pub write_through: bool,
    /// I/O starts this many bytes into each target (`-B<base>`).
    pub base_offset: u64,
    /// I/O stays within this many bytes from the base (`-B<base>:<length>`).
    pub range_length: Option<u64>,
    /// I/O stays below this offset (`-f<size>`).
    pub max_offset: Option<u64>,
    /// Sequential threads on one target start this many bytes apart (`-T`).
    pub thread_stride: u64,
    /// Random seed (`-z<seed>`, default 0); `None` (a bare `-z`) seeds from the clock.
    pub seed: Option<u64>,
    /// `-L` was given (latency is always measured; kept to echo the command line).
    pub latency: bool,
    pub engine: EngineChoice,
    /// io_uring: reap every ready completion and submit all replacements in one call, instead
    /// of one at a time (`--batch`).
    pub batch: bool,
    /// Print one JSON object instead of the text report (`--json`).
    pub json: bool,
    /// Draw the latency distribution into this PNG or SVG file (`--chart`).
    pub chart: Option<PathBuf>,
    /// No progress line on stderr (`--quiet`).
    pub quiet: bool,
}

impl Default for Params {
    /// diskspd's defaults: 64 KiB sequential reads, 2 in flight, 1 thread, 5 s warm-up, 10 s.
    fn default() -> Params {
        Params {
            targets: Vec::new(),
            block_size: 64 * KIB,
            duration: 10.0,
            warmup: 5.0,
            cooldown: 0.0,
            threads_per_target: 1,
            outstanding: 2,
            access: Access::Sequential { stride: 64 * KIB },
            write_pct: 0,
            write_data: WriteData::RandomBuffer { size: DEFAULT_WRITE_BUFFER },
            create_size: None,
            direct: false,
            write_through: false,
            base_offset: 0,
            range_length: None,
            max_offset: None,
            thread_stride: 0,
            seed: Some(0),
            latency: false,
            engine: EngineChoice::Auto,
            batch: false,
            json: false,
            chart: None,
            quiet: false,
        }
    }
}

impl Params {
    /// Total threads issuing I/O.
    pub fn total_threads(&self) -> usize {
        self.targets.len() * self.threads_per_target as usize
    }

    /// Bytes of random data writes are taken from (0 unless writes use a random buffer).
    pub fn write_buffer_size(&self) -> u64 {
        match self.write_data {
            WriteData::RandomBuffer { size } => size,
            _ => 0,
        }
    }

    /// The I/O range `[start, end)` of a target whose file is `file_len` bytes long.
    pub fn range(&self, file_len: u64) -> (u64, u64) {
        let mut end = file_len;
        if let Some(len) = self.range_length {
            end = end.min(self.base_offset.saturating_add(len));
        }
        if let Some(max) = self.max_offset {
            end = end.min(max);
        }
        (self.base_offset, end)
    }

    /// A short description of the workload: "4 KiB random, 30% writes, t1 o32, O_DIRECT".
    pub fn describe(&self) -> String {
        let access = match self.access {
            Access::Random { align } if align == self.block_size => "random".to_string(),
            Access::Random { align } => format!("random (aligned to {})", fmt_size(align)),
            Access::Sequential { stride } if stride == self.block_size => "sequential".to_string(),
            Access::Sequential { stride } => format!("sequential (stride {})", fmt_size(stride)),
        };
        let caching = match (self.direct, self.write_through) {
            (true, true) => "O_DIRECT + O_DSYNC",
            (true, false) => "O_DIRECT",
            (false, true) => "OS cache + O_DSYNC",
            (false, false) => "OS cache",
        };
        format!(
            "{} {access}, {}% writes, t{} o{}, {caching}",
            fmt_size(self.block_size),
            self.write_pct,
            self.threads_per_target,
            self.outstanding
        )
    }
}

/// "4 KiB", "2 MiB", "1.50 GiB", "512 B".
pub fn fmt_size(bytes: u64) -> String {
    let units = [(1u64 << 40, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    for (unit, name) in units {
        if bytes >= unit {
            return if bytes.is_multiple_of(unit) {
                format!("{} {name}", bytes / unit)
            } else {
                format!("{:.2} {name}", bytes as f64 / unit as f64)
            };
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_readably() {
        assert_eq!(fmt_size(4096), "4 KiB");
        assert_eq!(fmt_size(2 * MIB), "2 MiB");
        assert_eq!(fmt_size(3 * GIB / 2), "1.50 GiB");
        assert_eq!(fmt_size(512), "512 B");
    }

    #[test]
    fn range_honours_base_length_and_max() {
        let mut p = Params::default();
        assert_eq!(p.range(GIB), (0, GIB));
        p.base_offset = MIB;
        p.range_length = Some(10 * MIB);
        assert_eq!(p.range(GIB), (MIB, 11 * MIB));
        p.max_offset = Some(5 * MIB);
        assert_eq!(p.range(GIB), (MIB, 5 * MIB));
        assert_eq!(p.range(2 * MIB), (MIB, 2 * MIB));
    }
}
