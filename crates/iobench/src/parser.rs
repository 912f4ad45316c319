//! The command line of `tessera iobench`: diskspd's flags, whose values are glued to the
//! letter (`-b8K -o32 -r -w40 -Sh`), VMFleet's short form (`--pattern t1,o32,b4k --read 70`)
//! and a few long options of our own (`--engine`, `--json`, `--chart`, `--quiet`).
//!
//! Sizes are whole numbers of bytes with an optional suffix: K, M, G, T (KiB … TiB, either
//! case) or `b` for blocks of `-b` (`-c100b` with `-b8K` is 800 KiB), as diskspd reads them.
//! Every problem is an [`Error`] naming the flag and what was wrong with it.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::params::{Access, EngineChoice, Params, WriteData, DEFAULT_WRITE_BUFFER, GIB};

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Run(Box<Params>),
    Help,
}

/// Largest block size accepted (one I/O must fit in an io_uring request).
pub const MAX_BLOCK: u64 = GIB;
/// Most threads per target and most I/Os in flight per thread.
pub const MAX_THREADS: u32 = 1024;
pub const MAX_OUTSTANDING: u32 = 32768;
/// O_DIRECT transfers must be multiples of the device's logical block, at least 512 bytes.
pub const DIRECT_ALIGN: u64 = 512;

/// diskspd flags we know but do not implement, with what they do.
const UNSUPPORTED: &[(char, &str)] = &[
    (':', "experimental behaviours"),
    ('a', "CPU affinity"),
    ('D', "interval IOPS statistics"),
    ('e', "event tracing"),
    ('F', "total thread count"),
    ('g', "throughput throttling"),
    ('i', "I/O bursts"),
    ('j', "I/O burst intervals"),
    ('I', "I/O priority"),
    ('l', "large pages"),
    ('N', "memory-mapped flush mode"),
    ('O', "outstanding I/O per thread with -F"),
    ('p', "parallel sequential I/O at one offset"),
    ('P', "progress dots"),
    ('R', "output format (use --json)"),
    ('v', "verbose mode"),
    ('x', "completion routines"),
    ('X', "XML profiles"),
    ('y', "event synchronisation"),
];

pub const USAGE: &str = "\
Usage: tessera iobench [options] target1 [target2 ...]

A diskspd-style disk benchmark. Flags take their value glued to the letter (-b8K, -o32).
Sizes are bytes with an optional K, M, G or T suffix (KiB ... TiB), or b for blocks of -b.

  -b<size>          bytes per I/O [64K]
  -B<base>[:<len>]  issue I/O only from offset <base> on (and within <len> bytes of it)
  -c<size>          create each target of this size (filled with random data) if it is missing
                    or smaller
  -C<seconds>       cool-down: keep issuing I/O this long after measuring ends [0]
  -d<seconds>       measured duration [10]
  -f<size>          issue I/O only below this offset
  -h                same as -Sh
  -L                measure latency (always done; accepted for diskspd compatibility)
  -n                no CPU affinity (the default here; accepted for compatibility)
  -o<count>         I/Os in flight per thread (queue depth) [2]
  -r[<align>]       random I/O at offsets that are multiples of <align> [block size]; overrides -s
  -s[<stride>]      sequential I/O, each thread advancing <stride> bytes per I/O [block size] (default)
  -S[bhuw]          caching: -S or -Su no OS cache (O_DIRECT); -Sw write-through (O_DSYNC);
                    -Sh both; -Sb OS cache (the default)
  -t<count>         threads per target [1]
  -T<offset>        sequential threads of one target start <offset> bytes apart [0]
  -w[<percent>]     percentage of writes [0]
  -W<seconds>       warm-up before measuring [5]
  -Z                write zeros
  -Zr               write fresh random bytes for every I/O
  -Z<size>          write slices of a <size> buffer of random bytes [default: a 16 MiB buffer]
  -z[<seed>]        random seed [0]; a bare -z seeds from the clock
  -?, --help        this text

  --pattern <p>     VMFleet short form, comma-separated: t<threads>, o<outstanding>, b<size>,
                    and r (random, the default) or s (sequential), e.g. t1,o32,b4k
  --read <percent>  percentage of reads (sets -w to 100 - percent), e.g. --read 70
  --engine <e>      uring (io_uring), threads (a pool of pread/pwrite threads), or auto [auto:
                    io_uring where the kernel allows it]
  --batch           io_uring: reap all ready completions and submit their replacements in one
                    call (fio's iodepth_batch_submit = iodepth_batch_complete_max = -o) instead
                    of one at a time (fio's defaults)
  --json            print one JSON object instead of the text report
  --chart <file>    draw the latency distribution into <file> (.png or .svg)
  --quiet           no progress line on stderr

Example (seed 004): tessera iobench -b8K -d30 -t1 -o32 -h -r -w40 -L -Z1G -c20G iotest.dat
";

/// A size whose unit may be blocks, resolved once the block size is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RawSize {
    Bytes(u64),
    Blocks(u64),
}

impl RawSize {
    fn resolve(self, block: u64, flag: &str) -> Result<u64> {
        match self {
            RawSize::Bytes(n) => Ok(n),
            RawSize::Blocks(n) => n
                .checked_mul(block)
                .ok_or_else(|| Error::new(format!("{flag}: {n} blocks of {block} bytes overflow a 64-bit size"))),
        }
    }
}

/// Parses a size as diskspd does: digits, then nothing, K/M/G/T (powers of 1024, either case)
/// or b (blocks of `-b`). Returns bytes; `block` resolves the b suffix.
pub fn parse_size(text: &str, block: u64) -> std::result::Result<u64, String> {
    parse_raw_size(text)?.resolve(block, "size").map_err(|e| e.to_string())
}

fn parse_raw_size(text: &str) -> std::result::Result<RawSize, String> {
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(if text.is_empty() { "a size is missing".to_string() } else { format!("'{text}' is not a size") });
    }
    let n: u64 = digits.parse().map_err(|_| format!("'{text}' is too large"))?;
    let shift = match suffix.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        "B" => return Ok(RawSize::Blocks(n)),
        _ => {
            return Err(format!(
            "'{text}' is not a size: the suffix '{suffix}' is not one of K, M, G, T (KiB, MiB, GiB, TiB) or b (blocks)"
        ))
        }
    };
    n.checked_mul(1u64 << shift).map(RawSize::Bytes).ok_or_else(|| format!("'{text}' is too large"))
}

fn size_err(flag: &str, what: &str, msg: String) -> Error {
    Error::new(format!("{flag}: invalid {what}: {msg}"))
}

fn parse_count(flag: &str, what: &str, text: &str, min: u32, max: u32) -> Result<u32> {
    let n: u64 =
        text.parse().map_err(|_| Error::new(format!("{flag}: expected a whole number of {what}, got '{text}'")))?;
    if n < u64::from(min) || n > u64::from(max) {
        return Err(Error::new(format!("{flag}: {what} must be between {min} and {max}, got {n}")));
    }
    Ok(n as u32)
}

fn parse_seconds(flag: &str, text: &str) -> Result<f64> {
    let v: f64 = text.parse().map_err(|_| Error::new(format!("{flag}: expected a number of seconds, got '{text}'")))?;
    if !v.is_finite() || !(0.0..=1e7).contains(&v) {
        return Err(Error::new(format!("{flag}: seconds must be between 0 and 10000000, got '{text}'")));
    }
    Ok(v)
}

fn parse_percent(flag: &str, text: &str) -> Result<u32> {
    parse_count(flag, "percent", text, 0, 100)
}

#[derive(Debug, Default)]
struct Raw {
    block: Option<u64>,
    duration: Option<f64>,
    warmup: Option<f64>,
    cooldown: Option<f64>,
    threads: Option<u32>,
    outstanding: Option<u32>,
    /// `-r` given, with its alignment if any.
    random: Option<Option<RawSize>>,
    /// `-s` given, with its stride if any.
    sequential: Option<Option<RawSize>>,
    write_pct: Option<u32>,
    write_data: Option<RawWriteData>,
    create: Option<RawSize>,
    cache_on: bool,
    direct: bool,
    write_through: bool,
    base: Option<RawSize>,
    length: Option<RawSize>,
    max_offset: Option<RawSize>,
    thread_stride: Option<RawSize>,
    seed: Option<Option<u64>>,
    latency: bool,
    engine: Option<EngineChoice>,
    batch: bool,
    json: bool,
    chart: Option<PathBuf>,
    quiet: bool,
    targets: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy)]
enum RawWriteData {
    Zeros,
    PerIoRandom,
    Buffer(RawSize),
}

/// Parses the arguments after `tessera iobench`.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Parsed> {
    let mut raw = Raw::default();
    let mut i = 0;
    let mut only_targets = false;
    while i < args.len() {
        let arg = args[i].as_ref();
        i += 1;
        if only_targets || !arg.starts_with('-') || arg == "-" {
            if arg.is_empty() {
                return Err(Error::new("an empty target path was given"));
            }
            if arg == "-" {
                return Err(Error::new("'-' is not a target: give a file path"));
            }
            raw.targets.push(PathBuf::from(arg));
            continue;
        }
        if arg == "--" {
            only_targets = true;
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let mut value = |what: &str| -> Result<String> {
                if let Some(v) = inline.clone() {
                    return Ok(v);
                }
                match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Ok(v.as_ref().to_string())
                    }
                    None => Err(Error::new(format!("--{name} needs a value ({what})"))),
                }
            };
            match name {
                "help" => return Ok(Parsed::Help),
                "json" => raw.json = true,
                "batch" => raw.batch = true,
                "quiet" => raw.quiet = true,
                "chart" => raw.chart = Some(PathBuf::from(value("a .png or .svg file")?)),
                "engine" => {
                    let v = value("uring, threads or auto")?;
                    raw.engine = Some(EngineChoice::parse(&v).ok_or_else(|| {
                        Error::new(format!("--engine: unknown engine '{v}' (expected uring, threads or auto)"))
                    })?);
                }
                "pattern" => {
                    let v = value("e.g. t1,o32,b4k")?;
                    apply_pattern(&mut raw, &v)?;
                }
                "read" => {
                    let v = value("a percentage of reads")?;
                    raw.write_pct = Some(100 - parse_percent("--read", &v)?);
                }
                _ => return Err(Error::new(format!("unknown option '{arg}' (see tessera iobench --help)"))),
            }
            if inline.is_some() && matches!(name, "help" | "json" | "quiet" | "batch") {
                return Err(Error::new(format!("--{name} takes no value")));
            }
            continue;
        }
        let body = &arg[1..];
        let mut chars = body.chars();
        let letter = chars.next().expect("a flag has a letter after '-'");
        let v = chars.as_str();
        let flag = &arg[..1 + letter.len_utf8()];
        let no_value = |raw_flag: &str| -> Result<()> {
            if v.is_empty() {
                Ok(())
            } else {
                Err(Error::new(format!("{raw_flag} takes no value, got '{arg}'")))
            }
        };
        let size = |what: &str| -> Result<RawSize> { parse_raw_size(v).map_err(|m| size_err(flag, what, m)) };
        match letter {
            '?' => return Ok(Parsed::Help),
            'b' => match size("block size")? {
                RawSize::Bytes(n) => raw.block = Some(n),
                RawSize::Blocks(_) => return Err(Error::new("-b: the block size cannot be given in blocks")),
            },
            'B' => {
                let (base, len) = match v.split_once(':') {
                    Some((b, l)) => (b, Some(l)),
                    None => (v, None),
                };
                raw.base = Some(parse_raw_size(base).map_err(|m| size_err(flag, "base offset", m))?);
                raw.length = match len {
                    Some(l) => Some(parse_raw_size(l).map_err(|m| size_err(flag, "range length", m))?),
                    None => None,
                };
            }
            'c' => raw.create = Some(size("file size")?),
            'C' => raw.cooldown = Some(parse_seconds(flag, v)?),
            'd' => raw.duration = Some(parse_seconds(flag, v)?),
            'f' => {
                if v.starts_with(|c: char| c.is_ascii_alphabetic()) {
                    return Err(Error::new(format!(
                        "{arg}: file access hints (-f<rst>) are not supported by tessera iobench"
                    )));
                }
                raw.max_offset = Some(size("maximum offset")?);
            }
            'h' => {
                no_value("-h")?;
                raw.direct = true;
                raw.write_through = true;
            }
            'L' => {
                no_value("-L")?;
                raw.latency = true;
            }
            'n' => no_value("-n")?,
            'o' => raw.outstanding = Some(parse_count(flag, "outstanding I/Os", v, 1, MAX_OUTSTANDING)?),
            'r' => {
                if let Some(rest) = v.strip_prefix('s') {
                    return Err(Error::new(format!(
                        "-rs{rest}: mixed random/sequential I/O is not supported by tessera iobench"
                    )));
                }
                if v.starts_with('d') {
                    return Err(Error::new(format!(
                        "{arg}: non-uniform random distributions (-rd) are not supported by tessera iobench"
                    )));
                }
                raw.random = Some(if v.is_empty() { None } else { Some(size("random alignment")?) });
            }
            's' => {
                if v.starts_with('i') {
                    return Err(Error::new(format!(
                        "{arg}: interlocked sequential I/O (-si) is not supported by tessera iobench"
                    )));
                }
                raw.sequential = Some(if v.is_empty() { None } else { Some(size("stride")?) });
            }
            'S' => apply_caching(&mut raw, arg, v)?,
            't' => raw.threads = Some(parse_count(flag, "threads", v, 1, MAX_THREADS)?),
            'T' => raw.thread_stride = Some(size("thread offset")?),
            'w' => raw.write_pct = Some(if v.is_empty() { 0 } else { parse_percent(flag, v)? }),
            'W' => raw.warmup = Some(parse_seconds(flag, v)?),
            'Z' => {
                raw.write_data = Some(match v {
                    "" => RawWriteData::Zeros,
                    "r" => RawWriteData::PerIoRandom,
                    _ if v.contains(',') => {
                        return Err(Error::new(format!(
                    "{arg}: write buffers filled from a file (-Z<size>,<file>) are not supported by tessera iobench"
                )))
                    }
                    _ => RawWriteData::Buffer(size("write buffer size")?),
                })
            }
            'z' => {
                raw.seed = Some(if v.is_empty() {
                    None
                } else {
                    Some(v.parse().map_err(|_| Error::new(format!("-z: expected a whole-number seed, got '{v}'")))?)
                })
            }
            _ => {
                if let Some((_, what)) = UNSUPPORTED.iter().find(|(c, _)| *c == letter) {
                    return Err(Error::new(format!(
                        "{flag} ({what}) is a diskspd flag that tessera iobench does not support"
                    )));
                }
                return Err(Error::new(format!("unknown flag '{arg}' (see tessera iobench --help)")));
            }
        }
    }
    build(raw).map(|p| Parsed::Run(Box::new(p)))
}

fn apply_caching(raw: &mut Raw, arg: &str, v: &str) -> Result<()> {
    if v.is_empty() {
        raw.direct = true;
        return Ok(());
    }
    for c in v.chars() {
        match c {
            'b' => raw.cache_on = true,
            'h' => {
                raw.direct = true;
                raw.write_through = true;
            }
            'u' => raw.direct = true,
            'w' => raw.write_through = true,
            'm' => {
                return Err(Error::new(format!("{arg}: memory-mapped I/O (-Sm) is not supported by tessera iobench")))
            }
            'r' => return Err(Error::new(format!("{arg}: remote caching (-Sr) is not supported by tessera iobench"))),
            _ => {
                return Err(Error::new(format!(
                    "{arg}: unknown caching flag '{c}' (expected b, h, u or w: -Sb, -Sh, -Su, -Sw)"
                )))
            }
        }
    }
    Ok(())
}

/// VMFleet's short form: `t1,o32,b4k` with optional `r`/`s` (random/sequential) and `w<pct>`.
fn apply_pattern(raw: &mut Raw, pattern: &str) -> Result<()> {
    let mut access = None;
    for token in pattern.split(',').map(str::trim) {
        let lower = token.to_ascii_lowercase();
        let bad = |msg: String| Error::new(format!("--pattern {pattern}: {msg}"));
        match lower.as_str() {
            "" => return Err(bad("an empty item".to_string())),
            "r" | "rand" | "random" => access = Some(false),
            "s" | "seq" | "sequential" => access = Some(true),
            _ => {
                let (key, value) = lower.split_at(1);
                match key {
                    "t" => raw.threads = Some(parse_count("--pattern t", "threads", value, 1, MAX_THREADS)?),
                    "o" => {
                        raw.outstanding =
                            Some(parse_count("--pattern o", "outstanding I/Os", value, 1, MAX_OUTSTANDING)?)
                    }
                    "b" => match parse_raw_size(value).map_err(|m| bad(format!("invalid block size: {m}")))? {
                        RawSize::Bytes(n) => raw.block = Some(n),
                        RawSize::Blocks(_) => return Err(bad("the block size cannot be given in blocks".into())),
                    },
                    "w" => raw.write_pct = Some(parse_percent("--pattern w", value)?),
                    _ => {
                        return Err(bad(format!(
                            "unknown item '{token}' (expected t<threads>, o<outstanding>, b<size>, w<write %>, r or s)"
                        )))
                    }
                }
            }
        }
    }
    match access {
        Some(true) => {
            raw.sequential = Some(None);
            raw.random = None;
        }
        _ => raw.random = Some(None),
    }
    Ok(())
}

fn build(raw: Raw) -> Result<Params> {
    let mut p = Params::default();
    if raw.targets.is_empty() {
        return Err(Error::new("no target given: name at least one file (e.g. tessera iobench -c1G -d10 -r test.dat)"));
    }
    let block = raw.block.unwrap_or(p.block_size);
    if block == 0 {
        return Err(Error::new("-b: the block size must be at least 1 byte"));
    }
    if block > MAX_BLOCK {
        return Err(Error::new(format!("-b: the block size must be at most 1G, got {block} bytes")));
    }
    p.block_size = block;
    p.duration = raw.duration.unwrap_or(p.duration);
    if p.duration <= 0.0 {
        return Err(Error::new("-d: the duration must be more than 0 seconds"));
    }
    p.warmup = raw.warmup.unwrap_or(p.warmup);
    p.cooldown = raw.cooldown.unwrap_or(p.cooldown);
    p.threads_per_target = raw.threads.unwrap_or(p.threads_per_target);
    p.outstanding = raw.outstanding.unwrap_or(p.outstanding);
    p.access = match (raw.random, raw.sequential) {
        // As in diskspd, -r overrides -s.
        (Some(align), _) => {
            let align = match align {
                Some(a) => a.resolve(block, "-r")?,
                None => block,
            };
            if align == 0 {
                return Err(Error::new("-r: the alignment must be at least 1 byte"));
            }
            Access::Random { align }
        }
        (None, Some(stride)) => {
            let stride = match stride {
                Some(s) => s.resolve(block, "-s")?,
                None => block,
            };
            if stride == 0 {
                return Err(Error::new("-s: the stride must be at least 1 byte"));
            }
            Access::Sequential { stride }
        }
        (None, None) => Access::Sequential { stride: block },
    };
    p.write_pct = raw.write_pct.unwrap_or(0);
    p.write_data = match raw.write_data {
        None => WriteData::RandomBuffer { size: DEFAULT_WRITE_BUFFER.max(block) },
        Some(RawWriteData::Zeros) => WriteData::Zeros,
        Some(RawWriteData::PerIoRandom) => WriteData::PerIoRandom,
        Some(RawWriteData::Buffer(size)) => {
            let size = size.resolve(block, "-Z")?;
            if size < block {
                return Err(Error::new(format!(
                    "-Z: the write buffer ({size} bytes) must be at least one block (-b, {block} bytes)"
                )));
            }
            WriteData::RandomBuffer { size }
        }
    };
    p.create_size = raw.create.map(|s| s.resolve(block, "-c")).transpose()?;
    if let Some(size) = p.create_size {
        if size < block {
            return Err(Error::new(format!(
                "-c: the file size ({size} bytes) must be at least one block (-b, {block} bytes)"
            )));
        }
    }
    if raw.cache_on && raw.direct {
        return Err(Error::new("-Sb (OS caching on) conflicts with -S, -Su, -Sh and -h (OS caching off)"));
    }
    p.direct = raw.direct;
    p.write_through = raw.write_through;
    p.base_offset = raw.base.map(|s| s.resolve(block, "-B")).transpose()?.unwrap_or(0);
    p.range_length = raw.length.map(|s| s.resolve(block, "-B")).transpose()?;
    if let Some(len) = p.range_length {
        if len < block {
            return Err(Error::new(format!("-B: the range length ({len} bytes) is smaller than one block ({block})")));
        }
    }
    p.max_offset = raw.max_offset.map(|s| s.resolve(block, "-f")).transpose()?;
    if let Some(max) = p.max_offset {
        if max < p.base_offset.saturating_add(block) {
            return Err(Error::new(format!(
                "-f: the maximum offset ({max}) leaves no room for one block after the base offset ({})",
                p.base_offset
            )));
        }
    }
    p.thread_stride = raw.thread_stride.map(|s| s.resolve(block, "-T")).transpose()?.unwrap_or(0);
    if p.thread_stride > 0 && matches!(p.access, Access::Random { .. }) {
        return Err(Error::new("-T applies to sequential I/O only (-s); it conflicts with -r"));
    }
    if p.direct {
        let check = |what: &str, v: u64| -> Result<()> {
            if v.is_multiple_of(DIRECT_ALIGN) {
                Ok(())
            } else {
                Err(Error::new(format!(
                    "{what} ({v} bytes) must be a multiple of {DIRECT_ALIGN} bytes when the OS cache is bypassed \
                     (O_DIRECT: -S, -Su, -Sh, -h)"
                )))
            }
        };
        check("-b: the block size", block)?;
        match p.access {
            Access::Random { align } => check("-r: the alignment", align)?,
            Access::Sequential { stride } => check("-s: the stride", stride)?,
        }
        check("-B: the base offset", p.base_offset)?;
        check("-T: the thread offset", p.thread_stride)?;
    }
    p.seed = raw.seed.unwrap_or(Some(0));
    p.latency = raw.latency;
    p.engine = raw.engine.unwrap_or(EngineChoice::Auto);
    p.batch = raw.batch;
    p.json = raw.json;
    p.chart = raw.chart;
    if let Some(chart) = &p.chart {
        let ext = chart.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if !matches!(ext.as_deref(), Some("png") | Some("svg")) {
            return Err(Error::new(format!("--chart: '{}' must end in .png or .svg", chart.display())));
        }
    }
    p.quiet = raw.quiet;
    p.targets = raw.targets;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{KIB, MIB};

    fn run(args: &str) -> Params {
        let v: Vec<&str> = args.split_whitespace().collect();
        match parse(&v) {
            Ok(Parsed::Run(p)) => *p,
            other => panic!("{args}: {other:?}"),
        }
    }

    fn err(args: &str) -> String {
        let v: Vec<&str> = args.split_whitespace().collect();
        match parse(&v) {
            Err(e) => e.to_string(),
            Ok(p) => panic!("{args} parsed: {p:?}"),
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096", 0), Ok(4096));
        assert_eq!(parse_size("8K", 0), Ok(8 * KIB));
        assert_eq!(parse_size("8k", 0), Ok(8 * KIB));
        assert_eq!(parse_size("2m", 0), Ok(2 * MIB));
        assert_eq!(parse_size("20G", 0), Ok(20 * GIB));
        assert_eq!(parse_size("1T", 0), Ok(1 << 40));
        assert_eq!(parse_size("8b", 4096), Ok(32768));
        assert_eq!(parse_size("0", 0), Ok(0));
        for bad in ["", "K", "8KB", "8KiB", "1.5G", "-1", "8X", "12 K", "0x10"] {
            assert!(parse_size(bad, 4096).is_err(), "{bad}");
        }
        assert!(parse_size("99999999999999999999", 1).unwrap_err().contains("too large"));
        assert!(parse_size("17179869184G", 1).unwrap_err().contains("too large"));
        assert!(parse_size("8Q", 1).unwrap_err().contains("suffix 'Q'"));
    }

    #[test]
    fn defaults_are_diskspds() {
        let p = run("f.dat");
        assert_eq!(p.targets, vec![PathBuf::from("f.dat")]);
        assert_eq!(p.block_size, 64 * KIB);
        assert_eq!((p.duration, p.warmup, p.cooldown), (10.0, 5.0, 0.0));
        assert_eq!((p.threads_per_target, p.outstanding), (1, 2));
        assert_eq!(p.access, Access::Sequential { stride: 64 * KIB });
        assert_eq!(p.write_pct, 0);
        assert_eq!(p.write_data, WriteData::RandomBuffer { size: DEFAULT_WRITE_BUFFER });
        assert!(!p.direct && !p.write_through && !p.latency && !p.json && !p.quiet);
        assert_eq!(p.seed, Some(0));
        assert_eq!(p.engine, EngineChoice::Auto);
        assert_eq!(p.create_size, None);
    }

    #[test]
    fn seed_004_command_line() {
        let p = run("-b8K -d30 -t1 -h -r -w40 -L -Z1G -c20G D.dat");
        assert_eq!(p.block_size, 8 * KIB);
        assert_eq!(p.duration, 30.0);
        assert_eq!(p.threads_per_target, 1);
        assert_eq!(p.outstanding, 2);
        assert!(p.direct && p.write_through && p.latency);
        assert_eq!(p.access, Access::Random { align: 8 * KIB });
        assert_eq!(p.write_pct, 40);
        assert_eq!(p.write_data, WriteData::RandomBuffer { size: GIB });
        assert_eq!(p.create_size, Some(20 * GIB));
    }

    #[test]
    fn every_flag() {
        let p = run("-b4K -B1M:100M -c1G -C2 -d1.5 -f500M -o32 -s8K -Su -t4 -T16M -w10 -W0 -Zr -z42 -n a b c");
        assert_eq!(p.targets.len(), 3);
        assert_eq!(p.base_offset, MIB);
        assert_eq!(p.range_length, Some(100 * MIB));
        assert_eq!(p.max_offset, Some(500 * MIB));
        assert_eq!(p.cooldown, 2.0);
        assert_eq!(p.duration, 1.5);
        assert_eq!(p.warmup, 0.0);
        assert_eq!(p.outstanding, 32);
        assert_eq!(p.threads_per_target, 4);
        assert_eq!(p.total_threads(), 12);
        assert_eq!(p.access, Access::Sequential { stride: 8 * KIB });
        assert_eq!(p.thread_stride, 16 * MIB);
        assert!(p.direct && !p.write_through);
        assert_eq!(p.write_pct, 10);
        assert_eq!(p.write_data, WriteData::PerIoRandom);
        assert_eq!(p.seed, Some(42));
    }

    #[test]
    fn flag_variants() {
        assert_eq!(run("-r f").access, Access::Random { align: 64 * KIB });
        assert_eq!(run("-b8K -r512 f").access, Access::Random { align: 512 });
        assert_eq!(run("-r4K -b8K f").access, Access::Random { align: 4 * KIB });
        // -r overrides -s whatever the order.
        assert_eq!(run("-r -s f").access, Access::Random { align: 64 * KIB });
        assert_eq!(run("-s -r f").access, Access::Random { align: 64 * KIB });
        // Blocks are resolved with the final block size, wherever -b stands.
        assert_eq!(run("-c100b -b8K f").create_size, Some(800 * KIB));
        assert_eq!(run("-w f").write_pct, 0);
        assert_eq!(run("-w100 f").write_pct, 100);
        assert_eq!(run("-Z f").write_data, WriteData::Zeros);
        assert_eq!(run("-Z64M f").write_data, WriteData::RandomBuffer { size: 64 * MIB });
        assert_eq!(run("-z f").seed, None);
        assert_eq!(run("-b4M f").write_data, WriteData::RandomBuffer { size: DEFAULT_WRITE_BUFFER });
        assert_eq!(run("-b32M f").write_data, WriteData::RandomBuffer { size: 32 * MIB });
        let s = run("-S f");
        assert!(s.direct && !s.write_through);
        let s = run("-Sw f");
        assert!(!s.direct && s.write_through);
        for flags in ["-Sh", "-Suw", "-Swu", "-h"] {
            let s = run(&format!("{flags} f"));
            assert!(s.direct && s.write_through, "{flags}");
        }
        let s = run("-Sb f");
        assert!(!s.direct && !s.write_through);
        assert_eq!(run("-B4K f").range_length, None);
        // Later flags win.
        assert_eq!(run("-o4 -o8 f").outstanding, 8);
    }

    #[test]
    fn long_options() {
        let p = run("--engine threads --json --chart lat.svg --quiet f");
        assert_eq!(p.engine, EngineChoice::Threads);
        assert!(p.json && p.quiet && !p.batch);
        assert!(run("--batch f").batch);
        assert_eq!(p.chart, Some(PathBuf::from("lat.svg")));
        assert_eq!(run("--engine=uring f").engine, EngineChoice::Uring);
        assert_eq!(run("--engine io_uring f").engine, EngineChoice::Uring);
        assert_eq!(run("--chart=x.PNG f").chart, Some(PathBuf::from("x.PNG")));
        // After --, everything is a target, even names starting with '-'.
        assert_eq!(run("-d1 -- -odd.dat").targets, vec![PathBuf::from("-odd.dat")]);
        assert_eq!(parse(&["-?"]), Ok(Parsed::Help));
        assert_eq!(parse(&["--help"]), Ok(Parsed::Help));
        assert_eq!(parse(&["-b4K", "--help", "f"]), Ok(Parsed::Help));
    }

    #[test]
    fn vmfleet_patterns() {
        let p = run("--pattern t1,o32,b4k --read 100 f");
        assert_eq!((p.threads_per_target, p.outstanding, p.block_size), (1, 32, 4 * KIB));
        assert_eq!(p.access, Access::Random { align: 4 * KIB });
        assert_eq!(p.write_pct, 0);
        assert_eq!(run("--pattern t1,o32,b16k --read 90 f").write_pct, 10);
        assert_eq!(run("--pattern t1,o32,b16k --read=70 f").write_pct, 30);
        let p = run("--pattern T2,O8,B2M,seq f");
        assert_eq!((p.threads_per_target, p.outstanding, p.block_size), (2, 8, 2 * MIB));
        assert_eq!(p.access, Access::Sequential { stride: 2 * MIB });
        assert_eq!(run("--pattern t1,o1,b8k,w30,s f").write_pct, 30);
        // Later diskspd flags refine the pattern.
        assert_eq!(run("--pattern t1,o32,b4k -o4 f").outstanding, 4);
        assert!(err("--pattern t1,x3 f").contains("unknown item 'x3'"));
        assert!(err("--pattern t1,,b4k f").contains("empty item"));
        assert!(err("--pattern b4q f").contains("invalid block size"));
        assert!(err("--pattern t0 f").contains("between 1 and"));
        assert!(err("--read 101 f").contains("between 0 and 100"));
        assert!(err("--read f").contains("percent"));
        assert!(err("--pattern").contains("needs a value"));
    }

    #[test]
    fn bad_input_is_named() {
        assert!(err("-b8Q f").contains("-b: invalid block size"));
        assert!(err("-b f").contains("size is missing"));
        assert!(err("-c1.5G f").contains("-c: invalid file size"));
        assert!(err("-b0 f").contains("at least 1 byte"));
        assert!(err("-b2G f").contains("at most 1G"));
        assert!(err("-bb f").contains("-b"));
        assert!(err("-b2b f").contains("cannot be given in blocks"));
        assert!(err("-d0 f").contains("more than 0"));
        assert!(err("-dx f").contains("-d: expected a number of seconds"));
        assert!(err("-d-1 f").contains("-d"));
        assert!(err("-W1e9 f").contains("-W"));
        assert!(err("-t0 f").contains("-t: threads must be between 1 and 1024"));
        assert!(err("-tx f").contains("-t: expected a whole number"));
        assert!(err("-o f").contains("-o: expected a whole number"));
        assert!(err("-o40000 f").contains("-o"));
        assert!(err("-w101 f").contains("-w"));
        assert!(err("-q f").contains("unknown flag '-q'"));
        assert!(err("--frobnicate f").contains("unknown option '--frobnicate'"));
        assert!(err("-F4 f").contains("-F (total thread count) is a diskspd flag"));
        assert!(err("-ag0,1 f").contains("CPU affinity"));
        assert!(err("-Rxml f").contains("--json"));
        assert!(err("-rs50 f").contains("not supported"));
        assert!(err("-rdpct90/10 f").contains("not supported"));
        assert!(err("-si f").contains("not supported"));
        assert!(err("-Sm f").contains("memory-mapped"));
        assert!(err("-Sx f").contains("unknown caching flag 'x'"));
        assert!(err("-Sbu f").contains("conflicts"));
        assert!(err("-Z1G,src.bin f").contains("not supported"));
        assert!(err("-b8K -Z4K f").contains("at least one block"));
        assert!(err("-b8K -c4K f").contains("at least one block"));
        assert!(err("-zabc f").contains("-z"));
        assert!(err("-Lx f").contains("-L takes no value"));
        assert!(err("-hh f").contains("-h takes no value"));
        assert!(err("-r -T1M f").contains("conflicts with -r"));
        assert!(err("-b4K -B0:2K f").contains("smaller than one block"));
        assert!(err("-b4K -B1M -f1M f").contains("no room"));
        assert!(err("-frs f").contains("hints"));
        assert!(err("-b4K").contains("no target"));
        assert!(err("").contains("no target"));
        assert!(err("- f").contains("'-' is not a target"));
        assert!(err("--engine spdk f").contains("unknown engine 'spdk'"));
        assert!(err("f --chart").contains("needs a value"));
        assert!(err("--chart x.jpg f").contains(".png or .svg"));
        assert!(err("--json=1 f").contains("takes no value"));
        // O_DIRECT needs sector-multiple sizes and offsets.
        assert!(err("-Sh -b1000 f").contains("multiple of 512"));
        assert!(err("-Su -b4K -r100 f").contains("-r: the alignment"));
        assert!(err("-Su -b4K -B100 f").contains("-B: the base offset"));
        assert!(run("-b1000 f").block_size == 1000);
    }
}
