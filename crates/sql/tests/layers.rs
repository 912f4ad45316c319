//! The T-SQL crates keep their dependencies one way inside, too: no two top-level
//! modules of a crate import each other (directly or in a longer circle), nor any two
//! files of one module, but for the one recursion documented in `execution/src/exec`
//! (an expression may hold a subquery, and a query holds expressions).
//!
//! A module's imports are read from its source text: `crate::m` at the top, `super::f`
//! between the files of a directory (a name the directory's `mod.rs` re-exports counts
//! as the file it comes from). Comments and `#[cfg(test)]` code are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Circles that are the code's own recursion, as the sorted files of each.
const ALLOWED: &[&[&str]] = &[&["cursor", "evaluate", "locked_read", "operators", "ranges", "scan", "window"]];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/").to_path_buf()
}

/// The source a module is made of: its file, or every file under its directory.
fn sources(dir: &Path, module: &str) -> Vec<PathBuf> {
    let file = dir.join(format!("{module}.rs"));
    let mut out = Vec::new();
    if file.is_file() {
        out.push(file);
    }
    let sub = dir.join(module);
    if sub.is_dir() {
        let mut stack = vec![sub];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).expect("read dir") {
                let p = e.expect("dir entry").path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// A file's code without comments and without its test module.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).expect("read source");
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The identifiers that follow `prefix` (`crate::` or `super::`), including those in a
/// `prefix{a, b::c}` group.
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The group's items at its own nesting level: `{a::{x, y}, b}` → a, b.
            let mut depth = 0;
            let mut item_start = 0;
            for (j, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(group[item_start..j].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[item_start..j].trim()));
                        item_start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out
}

/// The modules of a directory (`lib.rs` or `mod.rs` aside), and which names the parent
/// file re-exports from which of them.
fn modules(dir: &Path) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut mods = BTreeSet::new();
    for e in fs::read_dir(dir).expect("read dir") {
        let p = e.expect("dir entry").path();
        let name = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if p.is_dir() || (p.extension().is_some_and(|x| x == "rs") && !["lib", "mod", "tests"].contains(&&*name)) {
            mods.insert(name);
        }
    }
    let mut exported = BTreeMap::new();
    let parent = [dir.join("mod.rs"), dir.join("lib.rs")].into_iter().find(|p| p.is_file());
    if let Some(parent) = parent {
        let text = code(&parent);
        for m in &mods {
            for name in names_after(&text, &format!("use {m}::")) {
                exported.insert(name, m.clone());
            }
        }
    }
    (mods, exported)
}

/// Who imports whom among the modules of `dir`, through `prefix`.
fn graph(dir: &Path, prefix: &str) -> Graph {
    let (mods, exported) = modules(dir);
    let mut g = Graph::new();
    for m in &mods {
        let deps = g.entry(m.clone()).or_default();
        for file in sources(dir, m) {
            for name in names_after(&code(&file), prefix) {
                let target = if mods.contains(&name) { Some(&name) } else { exported.get(&name) };
                if let Some(t) = target.filter(|t| *t != m) {
                    deps.insert(t.clone());
                }
            }
        }
    }
    g
}

/// The circles of a graph: its strongly connected components of more than one module.
fn circles(g: &Graph) -> Vec<Vec<String>> {
    // Reachability closure: fine for graphs of a few dozen modules.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(n) = stack.pop() {
            for d in g.get(&n).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|k| (k, reach(k))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for a in g.keys() {
        let mut c: Vec<String> =
            g.keys().filter(|b| *b == a || (reaches[a].contains(*b) && reaches[*b].contains(a))).cloned().collect();
        c.sort();
        if c.len() > 1 && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

#[test]
fn no_module_imports_its_importers() {
    let mut found = Vec::new();
    for krate in ["semantics", "execution", "sql"] {
        let src = crates_dir().join(krate).join("src");
        for c in circles(&graph(&src, "crate::")) {
            found.push(format!("{krate}: {c:?}"));
        }
        let mut dirs = vec![src];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(&d).expect("read dir") {
                let p = e.expect("dir entry").path();
                if p.is_dir() {
                    for c in circles(&graph(&p, "super::")) {
                        if !ALLOWED.iter().any(|a| a.iter().copied().eq(c.iter().map(String::as_str))) {
                            found.push(format!("{}: {c:?}", p.display()));
                        }
                    }
                    dirs.push(p);
                }
            }
        }
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn the_checker_sees_a_circle() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\nmod c;\npub use c::Thing;\n").expect("write");
    fs::write(dir.path().join("a.rs"), "// use crate::c;\nuse crate::b::f;\n").expect("write");
    fs::write(dir.path().join("b.rs"), "use crate::{c::{self, Other}, Thing, a::g};\n").expect("write");
    fs::write(dir.path().join("c.rs"), "pub struct Thing;\n#[cfg(test)]\nuse crate::a;\n").expect("write");
    let g = graph(dir.path(), "crate::");
    assert_eq!(circles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
    assert!(g["b"].contains("c"), "a re-exported name counts as its module: {g:?}");
    assert!(g["c"].is_empty() && !g["a"].contains("c"), "comments and test code do not count: {g:?}");
}
