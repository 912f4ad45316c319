//! The Kubernetes deployment (`deploy/kubernetes`, `docs/deploy.md`), checked without a
//! cluster:
//! - every manifest is valid Kubernetes: `kubernetes-validate --strict` (pip's
//!   kubernetes-validate, which bundles the API's JSON schemas; scripts/install-clients.sh
//!   installs it) against [`KUBERNETES`], a kind it has no schema for counting as invalid;
//! - `kustomization.yaml` lists exactly the manifests beside it;
//! - every `tessera` command line in a container (command and args, `$(VAR)` replaced as
//!   the kubelet does from the container's env) is one the real binary accepts: each flag
//!   is in its subcommand's `--help`, and the binary's parser takes the whole line (run
//!   with `--help` after it, which clap honours only once every argument before it
//!   parsed: an unknown flag or a bad value exits 2);
//! - the names those command lines use are the manifests' own: `--etcd` a Service with
//!   that port, `--advertise` a pod of the headless Service named after it, `--through` a
//!   ReadWriteMany claim mounted there in that container and at the same path in every
//!   server's.
//!
//! The manifests are read as JSON through Python's yaml module (kubernetes-validate's own
//! dependency), so the test needs no YAML crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The Kubernetes version the manifests are validated against: one kubernetes-validate
/// 1.37.0 bundles, and the oldest minor version the manifests are meant for.
const KUBERNETES: &str = "1.31";

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes")
}

/// Every manifest (`*.yaml` but the kustomization), by file name.
fn manifest_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(deploy_dir())
        .expect("deploy/kubernetes")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| (n.ends_with(".yaml") || n.ends_with(".yml")) && n != "kustomization.yaml")
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in deploy/kubernetes");
    files
}

/// The YAML documents of `file` (in deploy/kubernetes), as JSON.
fn documents(file: &str) -> Vec<Value> {
    let script = "import json, sys, yaml\n\
        print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]))\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(deploy_dir().join(file))
        .output()
        .expect("python3 with its yaml module (a dependency of kubernetes-validate)");
    assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
    match serde_json::from_slice(&out.stdout).expect("JSON from python3") {
        Value::Array(docs) => docs,
        other => panic!("{file}: not a list of documents: {other}"),
    }
}

/// Every manifest's documents, with the file each came from.
fn all_documents() -> Vec<(String, Value)> {
    manifest_files().into_iter().flat_map(|f| documents(&f).into_iter().map(move |d| (f.clone(), d))).collect()
}

#[test]
fn every_manifest_is_valid_kubernetes() {
    let files = manifest_files();
    let out = Command::new("kubernetes-validate")
        .args(["--strict", "--kubernetes-version", KUBERNETES])
        .args(&files)
        .current_dir(deploy_dir())
        .output()
        .expect(
            "kubernetes-validate (pip install kubernetes-validate==1.37.0; scripts/install-clients.sh installs it)",
        );
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    // A kind without a schema (a misspelt kind or apiVersion) is only a WARN to the
    // validator, with exit status 0: here it is a failure.
    let bad: Vec<&str> = text.lines().filter(|l| !l.starts_with("INFO ")).collect();
    assert!(out.status.success() && bad.is_empty(), "kubernetes-validate:\n{text}");
    for f in &files {
        let resources = documents(f).len();
        let passed = text.lines().filter(|l| l.starts_with(&format!("INFO {f} passed"))).count();
        assert!(resources > 0 && passed == resources, "{f}: {passed} of {resources} resources passed:\n{text}");
    }
}

#[test]
fn the_kustomization_lists_every_manifest() {
    let kustomization = documents("kustomization.yaml");
    let resources: Vec<String> = kustomization[0]["resources"]
        .as_array()
        .expect("resources in kustomization.yaml")
        .iter()
        .map(|r| r.as_str().expect("a file name").to_string())
        .collect();
    let mut listed = resources.clone();
    listed.sort();
    listed.dedup();
    assert_eq!(listed.len(), resources.len(), "a manifest listed twice: {resources:?}");
    assert_eq!(listed, manifest_files(), "kustomization.yaml's resources are not the manifests in deploy/kubernetes");
}

/// Every object under `v` that holds a `containers` or `initContainers` list: its
/// containers.
fn containers(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                match (k.as_str(), child) {
                    ("containers" | "initContainers", Value::Array(list)) => out.extend(list.iter().cloned()),
                    _ => containers(child, out),
                }
            }
        }
        Value::Array(list) => list.iter().for_each(|c| containers(c, out)),
        _ => {}
    }
}

/// A value for each of the container's environment variables, as the kubelet would give
/// it: literal values as written, the downward API's pod name as a StatefulSet's first pod.
fn environment(container: &Value, owner: &str) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for e in container["env"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().expect("an env var's name").to_string();
        let value = match (&e["value"], &e["valueFrom"]["fieldRef"]["fieldPath"]) {
            (Value::String(v), _) => v.clone(),
            (_, Value::String(path)) if path == "metadata.name" => format!("{owner}-0"),
            (_, Value::String(path)) if path == "metadata.namespace" => "default".to_string(),
            (_, Value::String(path)) if path == "status.podIP" => "10.0.0.10".to_string(),
            _ => format!("{}-value", name.to_lowercase()),
        };
        env.insert(name, value);
    }
    env
}

/// A container that runs tessera.
#[derive(Debug)]
struct CommandLine {
    /// The file, workload and container it comes from.
    at: String,
    /// The workload's `serviceName` (a StatefulSet's), which names its pods in DNS.
    service_name: Option<String>,
    /// The arguments after `tessera`, `$(VAR)` replaced.
    argv: Vec<String>,
    /// The container's mounts of PersistentVolumeClaims: mount path → claim name.
    claims: BTreeMap<String, String>,
}

/// The container's mounts of the pod's `persistentVolumeClaim` volumes: path → claim.
fn claim_mounts(container: &Value, pod: &Value) -> BTreeMap<String, String> {
    let claim_of = |volume: &str| {
        pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == volume)
            .and_then(|v| v["persistentVolumeClaim"]["claimName"].as_str().map(str::to_string))
    };
    container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let path = m["mountPath"].as_str()?.to_string();
            claim_of(m["name"].as_str()?).map(|claim| (path, claim))
        })
        .collect()
}

/// Every container in the manifests that runs tessera.
fn tessera_command_lines() -> Vec<CommandLine> {
    let mut lines = Vec::new();
    for (file, doc) in all_documents() {
        let owner = doc["metadata"]["name"].as_str().unwrap_or("").to_string();
        let service_name = doc["spec"]["serviceName"].as_str().map(str::to_string);
        let mut found = Vec::new();
        containers(&doc, &mut found);
        for c in found {
            let strings = |v: &Value| -> Vec<String> {
                v.as_array().into_iter().flatten().map(|s| s.as_str().expect("a string").to_string()).collect()
            };
            let (command, args) = (strings(&c["command"]), strings(&c["args"]));
            let image = c["image"].as_str().unwrap_or("");
            let image_name = image.rsplit('/').next().unwrap_or("").split([':', '@']).next().unwrap_or("");
            let argv: Vec<String> = match command.split_first() {
                Some((program, rest)) if program.rsplit('/').next() == Some("tessera") => {
                    rest.iter().chain(&args).cloned().collect()
                }
                // The image's entrypoint is tessera (deploy/Dockerfile).
                None if image_name == "tessera" => args,
                _ => continue,
            };
            let env = environment(&c, &owner);
            let argv: Vec<String> =
                argv.iter().map(|a| env.iter().fold(a.clone(), |a, (k, v)| a.replace(&format!("$({k})"), v))).collect();
            let at = format!("{file} ({owner}, container {})", c["name"].as_str().unwrap_or("?"));
            for a in &argv {
                assert!(!a.contains("$("), "{at}: {a:?} names a variable the container does not define");
            }
            let claims = claim_mounts(&c, &doc["spec"]["template"]["spec"]);
            lines.push(CommandLine { at, service_name: service_name.clone(), argv, claims });
        }
    }
    lines
}

fn tessera(args: &[String]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera")).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
}

/// Whether `help` names `flag` as a whole word (`--etcd`, not `--etcd-endpoints`).
fn names_flag(help: &str, flag: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    help.match_indices(flag)
        .any(|(at, _)| !word(help[..at].chars().next_back()) && !word(help[at + flag.len()..].chars().next()))
}

#[test]
fn every_tessera_command_line_is_one_the_binary_accepts() {
    let lines = tessera_command_lines();
    let subcommands: Vec<&str> = lines.iter().map(|l| l.argv.first().map_or("", String::as_str)).collect();
    assert!(
        subcommands.contains(&"serve") && subcommands.contains(&"gateway"),
        "no tessera serve and gateway: {lines:?}"
    );
    let mut wrong = Vec::new();
    for CommandLine { at, argv, .. } in &lines {
        let subcommand = &argv[0];
        let (ok, help) = tessera(&[subcommand.clone(), "--help".to_string()]);
        assert!(ok, "tessera {subcommand} --help: {help}");
        for arg in &argv[1..] {
            let flag = arg.split('=').next().unwrap_or("");
            let is_flag = flag.starts_with("--") || (flag.len() == 2 && flag.starts_with('-') && flag != "--");
            if is_flag && !names_flag(&help, flag) {
                wrong.push(format!("{at}: tessera {subcommand} has no flag {flag}"));
            }
        }
        // The parser itself: every argument before --help must parse.
        let mut parsed = argv.clone();
        parsed.push("--help".to_string());
        let (ok, text) = tessera(&parsed);
        if !ok || !text.contains(&format!("Usage: tessera {subcommand}")) {
            wrong.push(format!("{at}: tessera {} is refused:\n{text}", argv.join(" ")));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_command_lines_name_the_manifests_services() {
    // Each Service: (headless, its ports).
    let services: BTreeMap<String, (bool, Vec<u64>)> = all_documents()
        .into_iter()
        .filter(|(_, d)| d["kind"] == "Service")
        .map(|(_, d)| {
            let name = d["metadata"]["name"].as_str().unwrap().to_string();
            let headless = d["spec"]["clusterIP"] == "None";
            let ports =
                d["spec"]["ports"].as_array().into_iter().flatten().filter_map(|p| p["port"].as_u64()).collect();
            (name, (headless, ports))
        })
        .collect();
    let value_of = |argv: &[String], flag: &str| -> Option<String> {
        argv.iter()
            .position(|a| a == flag)
            .map(|i| argv[i + 1].clone())
            .or_else(|| argv.iter().find_map(|a| a.strip_prefix(&format!("{flag}=")).map(str::to_string)))
    };
    let host_port = |v: &str| -> (String, u64) {
        let (host, port) = v.rsplit_once(':').unwrap_or_else(|| panic!("{v} is not HOST:PORT"));
        (host.to_string(), port.parse().unwrap_or_else(|_| panic!("{v}: not a port")))
    };
    let mut servers = 0;
    for CommandLine { at, service_name, argv, .. } in tessera_command_lines() {
        if argv[0] == "serve" {
            servers += 1;
            assert!(value_of(&argv, "--etcd").is_some(), "{at}: a server that does not publish itself in etcd");
        }
        if let Some(etcd) = value_of(&argv, "--etcd") {
            let (host, port) = host_port(&etcd);
            let service = services.get(&host).unwrap_or_else(|| panic!("{at}: --etcd {etcd}: no Service {host}"));
            assert!(service.1.contains(&port), "{at}: --etcd {etcd}: Service {host} has no port {port}");
        }
        if let Some(advertised) = value_of(&argv, "--advertise") {
            let (host, port) = host_port(&advertised);
            let (pod, service) = host.split_once('.').unwrap_or_else(|| panic!("{at}: --advertise {advertised}"));
            let (headless, ports) =
                services.get(service).unwrap_or_else(|| panic!("{at}: --advertise {advertised}: no Service {service}"));
            assert!(*headless, "{at}: --advertise {advertised}: {service} is not headless, {pod} has no name in it");
            assert!(ports.contains(&port), "{at}: --advertise {advertised}: Service {service} has no port {port}");
            assert_eq!(
                service_name.as_deref(),
                Some(service),
                "{at}: --advertise {advertised}: {pod} is not a pod of a StatefulSet whose serviceName is {service}"
            );
        }
    }
    assert!(servers > 0, "no tessera serve in the manifests");
}

#[test]
fn the_moves_go_through_one_shared_volume_that_every_server_mounts_there() {
    // Each claim's access modes.
    let claims: BTreeMap<String, Vec<Value>> = all_documents()
        .into_iter()
        .filter(|(_, d)| d["kind"] == "PersistentVolumeClaim")
        .map(|(_, d)| {
            let modes = d["spec"]["accessModes"].as_array().cloned().unwrap_or_default();
            (d["metadata"]["name"].as_str().unwrap().to_string(), modes)
        })
        .collect();
    let lines = tessera_command_lines();
    let mut movers = 0;
    for CommandLine { at, argv, claims: mounted, .. } in &lines {
        let Some(i) = argv.iter().position(|a| a == "--through") else { continue };
        movers += 1;
        let through = &argv[i + 1];
        let claim = mounted
            .get(through)
            .unwrap_or_else(|| panic!("{at}: --through {through} is not a PersistentVolumeClaim mounted there"));
        let modes =
            claims.get(claim).unwrap_or_else(|| panic!("{at}: no PersistentVolumeClaim {claim} in the manifests"));
        assert!(
            modes.iter().any(|m| m == "ReadWriteMany"),
            "{at}: {claim} is not ReadWriteMany, so not every server can mount it: {modes:?}"
        );
        // The servers back up into it and restore from it at the path the mover names.
        for server in lines.iter().filter(|l| l.argv[0] == "serve") {
            assert_eq!(
                server.claims.get(through),
                Some(claim),
                "{}: does not mount {claim} at {through}, where {at} moves tenants through",
                server.at
            );
        }
    }
    assert!(movers > 0, "no tessera rebalance (or move) with --through in the manifests");
}
