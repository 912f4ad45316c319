//! Seed 002's script end to end through `tessera sql --data-dir`, with its counts scaled
//! down by sqlcmd scripting variables (the full run is 1,000,000 rows and 10,000 queries).

use std::process::Command;

#[test]
fn seed_002_script_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/sql/seed002.sql");
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sql", "--data-dir"])
        .arg(dir.path())
        .args(["-b", "-i", script, "-v", "rows=300", "queries=50"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "tessera sql failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    assert!(!stdout.contains("Msg "), "no errors expected:\n{stdout}");
    assert!(stdout.contains("Changed database context to 'BufferPoolExtensions_test'."));
    assert!(stdout.contains("Batch execution completed 300 times."));
    assert_eq!(stdout.matches("Batch execution completed 50 times.").count(), 2, "warm and cold query loops");
    assert!(stdout.contains("DBCC execution completed."));
    // The count query after the load: 300 rows, ids 1..=300.
    let counts = stdout.lines().skip_while(|l| !l.starts_with("rows")).nth(2).unwrap_or_default().to_string();
    let figures: Vec<&str> = counts.split_whitespace().collect();
    assert_eq!(figures, ["300", "1", "300"], "count line: {counts:?}");
    // Every random point select found its row: 2 × 50 rows of 1000 'A's.
    let hits = stdout.lines().filter(|l| l.trim_end() == "A".repeat(1000)).count();
    assert_eq!(hits, 100, "each query returns exactly one row");

    // The data survives a restart of the engine.
    let again = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sql", "--data-dir"])
        .arg(dir.path())
        .args([
            "-d",
            "BufferPoolExtensions_test",
            "-h",
            "-1",
            "-W",
            "-Q",
            "select count(*) from dbo.TestTable where n = replicate('A', 1000)",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&again.stdout);
    assert_eq!(text.lines().next().map(str::trim), Some("300"), "{text}");
}
