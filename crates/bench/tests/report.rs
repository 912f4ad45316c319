//! The result model and its outputs: JSON shape, ratio orientation, table, chart.

use serde_json::Value;
use tessera_bench::machine::iso8601_from_unix;
use tessera_bench::{Machine, Report, ResultRow};

fn machine() -> Machine {
    Machine {
        cpu_model: "AMD EPYC 7B13".into(),
        cores: 2,
        memory_gib: 23.4,
        kernel: "Linux 6.1.0".into(),
        disk_fsync_us: 106.0,
        date: iso8601_from_unix(1_750_000_000),
    }
}

fn sample() -> Report {
    let mut report = Report::new("engine", serde_json::json!({"scale": "quick", "lookup_rows": 1000}), machine());
    report.push(ResultRow::rate("point lookups", "lookups/s", 300_000.0, "sqlite", 190_000.0, 1.5));
    report.push(ResultRow::rate("point lookups", "lookups/s", 300_000.0, "lmdb", 591_000.0, 1.0));
    report.push(ResultRow::time("backup", "s", 2.0, "cp", 3.0, 1.0));
    report.push(ResultRow::own("commits/s 32 threads ÷ 1 thread", "×", 4.5, 4.0));
    report.push(ResultRow::own("buffer pool release, 8 GiB", "s", 0.8, 0.5));
    report.note("a note");
    report
}

#[test]
fn json_has_exactly_the_convention_fields() {
    let json: Value = serde_json::from_str(&sample().to_json()).unwrap();
    let top: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec!["benchmark", "params", "machine", "results", "notes"];
    let mut got = top.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(json["benchmark"], "engine");
    assert_eq!(json["params"]["lookup_rows"], 1000);
    let machine = json["machine"].as_object().unwrap();
    for key in ["cpu_model", "cores", "memory_gib", "kernel", "disk_fsync_us", "date"] {
        assert!(machine.contains_key(key), "machine lacks {key}");
    }
    assert!(!machine.contains_key("hostname"));

    let rows = json["results"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    for row in rows {
        let mut keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["goal", "metric", "ours", "peer", "peer_value", "ratio", "unit"]);
        let peer = row["peer"].as_str().unwrap();
        assert!(tessera_bench::report::PEERS.contains(&peer));
        assert!(row["ours"].is_number() && row["goal"].is_number());
    }
    assert_eq!(rows[0]["peer"], "sqlite");
    assert_eq!(rows[0]["peer_value"], 190_000.0);
    // No peer: peer "none", no peer value, no ratio, the goal in the metric's unit.
    assert_eq!(rows[4]["peer"], "none");
    assert!(rows[4]["peer_value"].is_null() && rows[4]["ratio"].is_null());
    assert_eq!(rows[4]["goal"], 0.5);
    assert_eq!(json["notes"][0], "a note");

    // And it reads back (floats to within their last bit: serde_json parses them fast, not exactly).
    let back = Report::from_json(&sample().to_json()).unwrap();
    assert_eq!(back.machine, sample().machine);
    for (a, b) in back.results.iter().zip(&sample().results) {
        assert_eq!(
            (&a.metric, &a.peer, a.ours, a.peer_value, a.goal),
            (&b.metric, &b.peer, b.ours, b.peer_value, b.goal)
        );
        assert!((a.ratio.unwrap_or(0.0) - b.ratio.unwrap_or(0.0)).abs() < 1e-12);
    }
}

#[test]
fn ratio_is_oriented_so_more_is_better() {
    // Rates: ours / peer.
    let faster = ResultRow::rate("r", "ops/s", 300.0, "sqlite", 200.0, 1.5);
    assert_eq!(faster.ratio, Some(1.5));
    assert!(faster.meets_goal());
    let slower = ResultRow::rate("r", "ops/s", 100.0, "sqlite", 200.0, 1.0);
    assert_eq!(slower.ratio, Some(0.5));
    assert!(!slower.meets_goal());
    // Times: peer / ours.
    let quicker = ResultRow::time("t", "s", 2.0, "cp", 3.0, 1.0);
    assert_eq!(quicker.ratio, Some(1.5));
    assert!(quicker.meets_goal());
    let longer = ResultRow::time("t", "ms", 4.0, "postgresql", 2.0, 1.0);
    assert_eq!(longer.ratio, Some(0.5));
    assert!(!longer.meets_goal());
    // Own rows: a time or memory goal is a ceiling, any other goal a floor.
    assert!(ResultRow::own("release", "s", 0.4, 0.5).meets_goal());
    assert!(!ResultRow::own("release", "s", 0.6, 0.5).meets_goal());
    assert!(ResultRow::own("RSS growth", "MiB", 12.0, 64.0).meets_goal());
    assert!(!ResultRow::own("RSS growth", "MiB", 65.0, 64.0).meets_goal());
    assert_eq!(ResultRow::own("RSS growth", "MiB", 12.0, 64.0).goal_text(), "≤ 64.0 MiB");
    assert!(ResultRow::own("scaling", "×", 4.0, 4.0).meets_goal());
    assert!(!ResultRow::own("scaling", "×", 3.9, 4.0).meets_goal());
    // A zero peer does not divide by zero into NaN.
    assert_eq!(ResultRow::rate("r", "ops/s", 1.0, "sqlite", 0.0, 1.0).ratio, Some(f64::INFINITY));
}

#[test]
fn table_prints_every_row_with_goal_column() {
    let mut out = Vec::new();
    sample().write_table(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("meets goal"));
    assert!(text.contains("AMD EPYC 7B13"));
    assert!(text.contains("300,000"));
    let yes = text.lines().filter(|l| l.ends_with("yes")).count();
    let no = text.lines().filter(|l| l.ends_with("NO")).count();
    assert_eq!((yes, no), (3, 2), "{text}");
    sample().print_table();
    // An empty report prints too.
    Report::new("empty", Value::Null, machine()).print_table();
}

#[test]
fn chart_writes_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["engine.png", "engine.svg", "ENGINE.PNG"] {
        let path = dir.path().join(name);
        sample().write_chart(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() > 1000, "{name} is {} bytes", bytes.len());
        if name.to_ascii_lowercase().ends_with(".png") {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        } else {
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.contains("<svg") && text.contains("point lookups"));
        }
    }
    // To look at the sample chart: TESSERA_CHART_OUT=/some/dir cargo test -p tessera-bench chart
    if let Some(out) = std::env::var_os("TESSERA_CHART_OUT") {
        sample().write_chart(&std::path::Path::new(&out).join("sample-chart.png")).unwrap();
        sample().write_chart(&std::path::Path::new(&out).join("sample-chart.svg")).unwrap();
    }
    // No rows, extreme values: still drawn.
    let mut odd = Report::new("odd", Value::Null, machine());
    odd.write_chart(&dir.path().join("empty.png")).unwrap();
    odd.push(ResultRow::rate("huge", "x/s", 1e9, "sqlite", 1.0, 1.5));
    odd.push(ResultRow::rate("zero", "x/s", 0.0, "sqlite", 1.0, 1.5));
    odd.push(ResultRow::own("instant", "s", 0.0, 0.5));
    odd.write_chart(&dir.path().join("odd.svg")).unwrap();
    assert!(odd.write_chart(&dir.path().join("chart.jpg")).is_err());
}
