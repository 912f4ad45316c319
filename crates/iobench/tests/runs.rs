//! Short real runs of both engines on a small temporary file: reads, writes and a mix, with
//! and without the OS cache, and the outputs (text, JSON, chart) of a run.

use std::path::Path;

use tessera_iobench::{parse, run, EngineKind, Event, Params, Parsed, RunResult};

fn params(dir: &Path, args: &str) -> Params {
    let mut v: Vec<String> = args.split_whitespace().map(String::from).collect();
    v.push(dir.join("t.dat").display().to_string());
    match parse(&v).unwrap() {
        Parsed::Run(p) => *p,
        Parsed::Help => unreachable!(),
    }
}

fn go(p: &Params) -> RunResult {
    let mut ticks = 0;
    let r = run(p, &mut |e| {
        if let Event::Tick(_) = e {
            ticks += 1
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    r
}

fn uring_available() -> bool {
    tessera_io::Uring::is_available()
}

/// Checks what every run must show: I/O in the expected directions, consistent totals, sane
/// latency percentiles.
fn check(r: &RunResult, reads: bool, writes: bool) {
    let t = &r.total;
    assert!(r.duration_s > 0.3 && r.duration_s < 2.0, "{}", r.duration_s);
    assert_eq!(t.total.ios, t.read.ios + t.write.ios);
    assert_eq!(t.read.ios > 0, reads, "reads: {:?}", t.read);
    assert_eq!(t.write.ios > 0, writes, "writes: {:?}", t.write);
    assert_eq!(t.total.bytes, t.total.ios * r.params.block_size);
    assert!((t.total.iops - t.total.ios as f64 / r.duration_s).abs() < 1e-6);
    let lat = t.total.latency_us.unwrap();
    assert!(lat.min > 0.0 && lat.min <= lat.p50 && lat.p50 <= lat.p90 && lat.p90 <= lat.p99);
    assert!(lat.p99 <= lat.p99_9 && lat.p99_9 <= lat.p99_99 && lat.p99_99 <= lat.max * 1.001, "{lat:?}");
    assert_eq!(r.threads.len(), r.params.total_threads());
    let per_thread: u64 = r.threads.iter().map(|th| th.figures.total.ios).sum();
    assert_eq!(per_thread, t.total.ios);
    assert!(r.cpu.process_user_pct + r.cpu.process_sys_pct > 0.0);
}

#[test]
fn uring_read_write_mixed() {
    assert!(uring_available(), "io_uring is available on the kernels tessera is tested on");
    let dir = tempfile::tempdir().unwrap();
    let base = "--engine uring --quiet -c8M -b4K -d0.5 -W0.1 -o8 -Sh";
    let r = go(&params(dir.path(), &format!("{base} -r")));
    assert_eq!(r.engine, EngineKind::Uring);
    assert!(r.targets[0].filled);
    check(&r, true, false);
    let r = go(&params(dir.path(), &format!("{base} -r -w100 -Zr")));
    check(&r, false, true);
    let r = go(&params(dir.path(), &format!("{base} -r -w30 -t2")));
    check(&r, true, true);
    let share = r.total.write.ios as f64 / r.total.total.ios as f64;
    assert!((0.2..0.4).contains(&share), "write share {share}");
    let r = go(&params(dir.path(), &format!("{base} -r -w30 --batch")));
    check(&r, true, true);
    // Sequential through the OS cache, two threads 1 MiB apart.
    let r = go(&params(dir.path(), "--engine uring --quiet -b64K -d0.5 -W0 -o4 -s -t2 -T1M -w50 -Z"));
    check(&r, true, true);
}

#[test]
fn threads_read_write_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let base = "--engine threads --quiet -c8M -b4K -d0.5 -W0.1 -o4 -Su";
    let r = go(&params(dir.path(), &format!("{base} -r")));
    assert_eq!(r.engine, EngineKind::Threads);
    check(&r, true, false);
    let r = go(&params(dir.path(), &format!("{base} -r -w100")));
    check(&r, false, true);
    let r = go(&params(dir.path(), &format!("{base} -r -w50 -t2")));
    check(&r, true, true);
    let r = go(&params(dir.path(), "--engine threads --quiet -b16K -d0.5 -W0 -o2 -s -w10"));
    check(&r, true, true);
}

#[test]
fn outputs_text_json_and_chart() {
    let dir = tempfile::tempdir().unwrap();
    let p = params(dir.path(), "--quiet -c4M -b4K -d0.5 -W0 -o4 -r -w25");
    let r = go(&p);
    let mut text = Vec::new();
    tessera_iobench::report::write_text(&r, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    for want in
        ["Total I/O", "Read I/O", "Write I/O", "Latency (µs)", "p99.99", "total", "CPU, whole machine", "I/O per s"]
    {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    let json: serde_json::Value = serde_json::from_str(&tessera_iobench::report::to_json(&r)).unwrap();
    assert_eq!(json["total"]["total"]["ios"].as_u64(), Some(r.total.total.ios));
    for key in ["min", "avg", "p50", "p90", "p99", "p99_9", "p99_99", "max"] {
        assert!(json["total"]["read"]["latency_us"][key].as_f64().is_some(), "{key}");
        assert!(json["total"]["write"]["latency_us"][key].as_f64().is_some(), "{key}");
    }
    assert!(json["threads"][0]["total"]["iops"].as_f64().unwrap() > 0.0);
    assert!(json["threads"][0]["cpu_pct"].as_f64().is_some());
    assert!(json["cpu"]["machine_usage_pct"].as_f64().is_some());
    assert_eq!(json["params"]["block_size"].as_u64(), Some(4096));
    for name in ["lat.png", "lat.svg"] {
        let path = dir.path().join(name);
        tessera_iobench::chart::draw(&r, &path).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 1000);
    }
    let svg = std::fs::read_to_string(dir.path().join("lat.svg")).unwrap();
    assert!(svg.contains("percentile") && svg.contains("99.9%"));
}

#[test]
fn bad_targets_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let e = run(&params(dir.path(), "--quiet -b4K -d0.2 -W0"), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("does not exist"), "{e}");
    std::fs::write(dir.path().join("t.dat"), [1u8; 100]).unwrap();
    let e = run(&params(dir.path(), "--quiet -b4K -d0.2 -W0"), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("too small"), "{e}");
    let e = run(&params(dir.path(), "--quiet --engine threads -b4K -d0.2 -W0 -t1024 -o64 -c1M"), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("thread-pool engine would start 65536 threads"), "{e}");
    let e = run(&params(dir.path(), "--quiet -b1G -o64 -d0.2 -W0 -c1G"), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("I/O buffers would take 64 GiB"), "{e}");
}

#[test]
fn several_targets_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.dat"), dir.path().join("b.dat"));
    let args: Vec<String> = "--quiet -c2M -b4K -d0.5 -W0 -o2 -t2 -r -w20"
        .split_whitespace()
        .map(String::from)
        .chain([a.display().to_string(), b.display().to_string()])
        .collect();
    let Parsed::Run(p) = parse(&args).unwrap() else { unreachable!() };
    let r = go(&p);
    check(&r, true, true);
    assert_eq!(r.targets.len(), 2);
    assert_eq!(r.threads.len(), 4);
    assert_eq!(r.threads.iter().filter(|t| t.target == a).count(), 2);
    assert!(r.threads.iter().all(|t| t.figures.total.ios > 0));
    assert_eq!(std::fs::metadata(&b).unwrap().len(), 2 << 20);
}
