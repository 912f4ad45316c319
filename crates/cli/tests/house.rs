//! The house's dependencies, checked on every test run:
//! - every dependency a crate declares is named in its code (an unused one is compiled and
//!   linked for nothing, and hides what a crate really needs);
//! - tessera's crates depend one way, down the layers: io → buffer → log → access →
//!   database → backup → the T-SQL layers → server → gateway → the binaries;
//! - every crate's README names its one job in its first line;
//! - the T-SQL layers that say what a statement is and means (syntax, semantics) know
//!   nothing of storage: no storage crate is among their dependencies, direct or not
//!   (types and errors, below everything, are theirs too).
//!
//! A crate's code is read as text: a dependency `foo-bar` counts as used when the word
//! `foo_bar` appears in its `src/` (for `[dependencies]`) or anywhere in the crate (for
//! `[dev-dependencies]`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// tessera's crates, lowest layer first; a crate may depend only on crates before it.
const LAYERS: &[&str] = &[
    "tessera-errors",
    "tessera-types",
    "tessera-waits",
    "tessera-io",
    "tessera-buffer",
    "tessera-log",
    "tessera-access",
    "tessera-database",
    "tessera-backup",
    "tessera-syntax",
    "tessera-semantics",
    "tessera-security",
    "tessera-governance",
    "tessera-execution",
    "tessera-sql",
    "tessera-server",
    "tessera-gateway",
    "tessera-iobench",
    "tessera-bench",
    "tessera-torture",
    "tessera",
];

/// The storage crates: pages, logs, rows, keys, locks, databases and their backups.
const STORAGE: &[&str] =
    &["tessera-io", "tessera-buffer", "tessera-log", "tessera-access", "tessera-database", "tessera-backup"];

/// The crates that must not reach storage through any dependency.
const STORAGE_FREE: &[&str] = &["tessera-syntax", "tessera-semantics"];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/").to_path_buf()
}

/// A crate's manifest: its package name and the dependencies of each section.
struct Manifest {
    name: String,
    sections: BTreeMap<String, Vec<String>>,
}

fn manifest(dir: &Path) -> Manifest {
    let text = fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    let mut name = String::new();
    let mut section = String::new();
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = line.split(['=', '.']).next().unwrap_or("").trim().to_string();
        match section.as_str() {
            "package" if key == "name" => {
                name = line.split('"').nth(1).unwrap_or("").to_string();
            }
            "dependencies" | "dev-dependencies" => sections.entry(section.clone()).or_default().push(key),
            _ => {}
        }
    }
    Manifest { name, sections }
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && p.file_name().is_some_and(|n| n != "target" && n != "node_modules") {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn code(dir: &Path) -> String {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.iter().map(|f| fs::read_to_string(f).unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// Whether `text` names the crate of `dependency` as a whole word (`tessera_io`, not
/// `tessera_iobench`).
fn names(text: &str, dependency: &str) -> bool {
    let ident = dependency.replace('-', "_");
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(&ident)
        .any(|(at, _)| !word(text[..at].chars().next_back()) && !word(text[at + ident.len()..].chars().next()))
}

fn workspace() -> Vec<(PathBuf, Manifest)> {
    let mut out: Vec<(PathBuf, Manifest)> = fs::read_dir(crates_dir())
        .expect("crates/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| {
            let m = manifest(&p);
            (p, m)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn every_declared_dependency_is_used() {
    let mut unused = Vec::new();
    for (dir, m) in workspace() {
        let src = code(&dir.join("src"));
        let all = code(&dir);
        for (section, deps) in &m.sections {
            let text = if section == "dependencies" { &src } else { &all };
            for d in deps.iter().filter(|d| !names(text, d)) {
                unused.push(format!("{}: [{section}] {d}", m.name));
            }
        }
    }
    assert!(unused.is_empty(), "dependencies declared but never named in the code:\n{}", unused.join("\n"));
}

#[test]
fn crates_depend_down_the_layers_only() {
    let rank = |name: &str| LAYERS.iter().position(|l| *l == name);
    let mut wrong = Vec::new();
    for (_, m) in workspace() {
        let own = rank(&m.name).unwrap_or_else(|| panic!("{} is missing from LAYERS", m.name));
        for d in m.sections.get("dependencies").into_iter().flatten() {
            if let Some(r) = rank(d) {
                if r >= own {
                    wrong.push(format!("{} depends on {d}, which is not below it", m.name));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The workspace crates `name` depends on (its `[dependencies]`), directly or through
/// other workspace crates.
fn reaches(workspace: &[(PathBuf, Manifest)], name: &str) -> Vec<String> {
    let deps = |n: &str| -> Vec<String> {
        workspace
            .iter()
            .find(|(_, m)| m.name == n)
            .and_then(|(_, m)| m.sections.get("dependencies").cloned())
            .unwrap_or_default()
    };
    let mut seen: Vec<String> = Vec::new();
    let mut stack = deps(name);
    while let Some(d) = stack.pop() {
        if workspace.iter().any(|(_, m)| m.name == d) && !seen.contains(&d) {
            stack.extend(deps(&d));
            seen.push(d);
        }
    }
    seen.sort();
    seen
}

#[test]
fn syntax_and_semantics_know_nothing_of_storage() {
    let ws = workspace();
    let mut wrong = Vec::new();
    for name in STORAGE_FREE {
        assert!(ws.iter().any(|(_, m)| m.name == *name), "{name} is not in the workspace");
        for d in reaches(&ws, name).iter().filter(|d| STORAGE.contains(&d.as_str())) {
            wrong.push(format!("{name} depends on the storage crate {d}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every crate says in the first line of its README what its one job is:
/// `# name — job`.
#[test]
fn every_crate_names_its_one_job() {
    let mut wrong = Vec::new();
    for (dir, m) in workspace() {
        let readme = fs::read_to_string(dir.join("README.md")).unwrap_or_default();
        let first = readme.lines().next().unwrap_or("");
        let job = first.strip_prefix("# ").and_then(|t| t.split_once(" — ")).map(|(_, job)| job.trim());
        if job.is_none_or(str::is_empty) {
            wrong.push(format!("{}: README.md's first line {first:?} is not `# name — job`", m.name));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checks_see_what_they_check() {
    let sql = manifest(&crates_dir().join("sql"));
    assert_eq!(sql.name, "tessera-sql");
    assert!(sql.sections["dependencies"].iter().any(|d| d == "tessera-execution"));
    assert!(names("use tessera_io::durable;", "tessera-io"));
    assert!(!names("use tessera_iobench::run;", "tessera-io"), "a longer name is not the dependency");
    let ws = workspace();
    let execution = reaches(&ws, "tessera-execution");
    assert!(execution.iter().any(|d| d == "tessera-access"), "a direct dependency: {execution:?}");
    assert!(reaches(&ws, "tessera-sql").iter().any(|d| d == "tessera-io"), "a dependency through others");
    assert!(STORAGE.iter().chain(STORAGE_FREE).all(|c| LAYERS.contains(c)), "every crate named is a layer");
}
