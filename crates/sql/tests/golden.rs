//! Golden SQL tests: every `tests/golden/*.sql` script runs on a fresh data directory
//! through the same code as `tessera sql -i`, and its sqlcmd-format output must equal the
//! `.out` file beside it. `BLESS=1 cargo test -p tessera-sql --test golden` rewrites the
//! expected files from the current output (review the diff before committing).

use std::path::{Path, PathBuf};

use tessera_database::{Engine, EngineConfig};
use tessera_sql::{runner, Session, SqlcmdFormat, SqlcmdWriter};

fn run_script(script: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let engine = Engine::open(config).expect("engine");
    let shared = tessera_sql::start_instance(engine.clone()).expect("shared");
    let mut out = Vec::new();
    {
        let mut writer = SqlcmdWriter::new(&mut out, SqlcmdFormat::default());
        let mut session = Session::new(shared, "sa", "master").expect("session");
        runner::run_script(&mut session, script, &mut writer);
        session.close();
    }
    engine.shutdown().expect("shutdown");
    String::from_utf8(out).expect("utf-8 output")
}

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("golden directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    v.sort();
    v
}

/// First differing line, for a readable failure.
fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  expected: {e:?}\n  actual:   {a:?}", i + 1);
        }
    }
    format!("lengths differ: expected {} lines, got {}", expected.lines().count(), actual.lines().count())
}

#[test]
fn golden_scripts() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut failures = Vec::new();
    let all = scripts();
    assert!(!all.is_empty(), "no golden scripts found");
    for path in all {
        let script = std::fs::read_to_string(&path).expect("script");
        let actual = run_script(&script);
        let expected_path = path.with_extension("out");
        if bless {
            std::fs::write(&expected_path, &actual).expect("write expected output");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!("{}: {}", path.display(), first_difference(&expected, &actual)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden script(s) differ (BLESS=1 to accept):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
