//! Moving a tenant between two servers (sp_detach_db, CREATE DATABASE … FOR ATTACH,
//! sp_attach_db) and the fleet commands (`tessera fleet exec`, `tessera fleet backup`)
//! against real servers.

mod common;

use std::path::Path;
use std::process::Command;

use common::{start, Server, PASSWORD};

/// `tessera sql -S … -b -h -1 -W -Q "SET NOCOUNT ON; query"`: (succeeded, stdout).
fn sql(server: &Server, query: &str) -> (bool, String) {
    let query = format!("SET NOCOUNT ON; {query}");
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sql", "-S", &server.address(), "-U", "sa", "-P", PASSWORD, "-b", "-h", "-1", "-W", "-Q", &query])
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ok(server: &Server, query: &str) -> String {
    let (ok, out) = sql(server, query);
    assert!(ok, "{query}:\n{out}");
    out
}

fn path(p: &Path) -> String {
    p.display().to_string().replace('\'', "''")
}

#[test]
fn a_detached_tenant_attaches_on_another_server_and_back() {
    let a = start();
    let b = start();
    ok(
        &a,
        "CREATE DATABASE tenant; \
         EXEC ('CREATE TABLE tenant.dbo.accounts (id int PRIMARY KEY, balance int NOT NULL)'); \
         INSERT INTO tenant.dbo.accounts SELECT n, n * 10 FROM (VALUES (1),(2),(3),(4),(5)) AS v(n)",
    );
    let (succeeded, out) = sql(&a, "USE tenant; EXEC sp_detach_db 'tenant'");
    assert!(!succeeded && out.contains("Msg 3703"), "{out}");
    ok(&a, "EXEC sp_detach_db @dbname = 'tenant', @skipchecks = 'true'");
    assert_eq!(ok(&a, "SELECT COUNT(*) FROM sys.databases WHERE name = 'tenant'").trim(), "0");
    for f in ["tenant.mdf", "tenant_log.ldf"] {
        std::fs::copy(a.dir.path().join(f), b.dir.path().join(f)).unwrap();
    }
    let (data, log) = (b.dir.path().join("tenant.mdf"), b.dir.path().join("tenant_log.ldf"));
    ok(
        &b,
        &format!(
            "CREATE DATABASE tenant ON (FILENAME = '{}') LOG ON (FILENAME = '{}') FOR ATTACH",
            path(&data),
            path(&log)
        ),
    );
    assert_eq!(ok(&b, "SELECT SUM(balance) FROM tenant.dbo.accounts").trim(), "150");
    ok(&b, "INSERT INTO tenant.dbo.accounts VALUES (6, 60)");
    assert_eq!(ok(&b, "SELECT COUNT(*) FROM tenant.dbo.accounts").trim(), "6");

    let junk = b.dir.path().join("junk.mdf");
    std::fs::write(&junk, vec![1u8; 65536]).unwrap();
    let (succeeded, out) = sql(
        &b,
        &format!("CREATE DATABASE junk ON (FILENAME = '{}'), (FILENAME = '{}') FOR ATTACH", path(&junk), path(&log)),
    );
    assert!(!succeeded && out.contains("Msg 5120"), "the log belongs to tenant: {out}");
    let (succeeded, out) = sql(&b, &format!("EXEC sp_attach_db 'junk', '{}'", path(&junk)));
    assert!(!succeeded && out.contains("Msg 5120"), "no junk_log.ldf beside it: {out}");
    std::fs::write(b.dir.path().join("junk_log.ldf"), vec![1u8; 65536]).unwrap();
    let (succeeded, out) = sql(&b, &format!("EXEC sp_attach_db 'junk', '{}'", path(&junk)));
    assert!(!succeeded && out.contains("Msg 5172"), "{out}");

    // Back where it came from, with the rows it had there.
    let (data, log) = (a.dir.path().join("tenant.mdf"), a.dir.path().join("tenant_log.ldf"));
    ok(
        &a,
        &format!(
            "EXEC sp_attach_db @dbname = N'tenant', @filename1 = N'{}', @filename2 = N'{}'",
            path(&data),
            path(&log)
        ),
    );
    assert_eq!(ok(&a, "SELECT COUNT(*) FROM tenant.dbo.accounts").trim(), "5");
    ok(&a, "INSERT INTO tenant.dbo.accounts VALUES (7, 70)");
}

/// `tessera fleet ACTION -S … args`: (exit code, stdout).
fn fleet(server: &Server, action: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["fleet", action, "-S", &server.address(), "-U", "sa", "-P", PASSWORD])
        .args(args)
        .output()
        .unwrap();
    assert!(out.stderr.is_empty() || out.status.code() == Some(2), "no progress bar off a terminal");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn tenants(server: &Server, n: usize) {
    let mut script = String::new();
    for i in 0..n {
        script.push_str(&format!("CREATE DATABASE tenant{i:02};\n"));
        if i != 4 && i != 13 {
            script.push_str(&format!(
                "EXEC ('CREATE TABLE tenant{i:02}.dbo.invoices (id int PRIMARY KEY, amount int)');\n"
            ));
        }
    }
    script.push_str("CREATE DATABASE shop;");
    ok(server, &script);
}

#[test]
fn fleet_exec_reports_exactly_the_databases_that_failed() {
    let server = start();
    tenants(&server, 20);
    let report = server.dir.path().join("report.json");
    let (code, text) = fleet(
        &server,
        "exec",
        &[
            "--databases",
            "tenant%",
            "--parallel",
            "4",
            "--json",
            report.to_str().unwrap(),
            "-Q",
            "INSERT INTO dbo.invoices VALUES (1, 100), (2, 200)\nGO\nUPDATE dbo.invoices SET amount = amount + 1",
        ],
    );
    assert_eq!(code, 1, "two databases failed:\n{text}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["databases"], 20, "shop and the system databases are not selected");
    let failed: Vec<&str> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "failed")
        .map(|r| r["database"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["tenant04", "tenant13"]);
    let first = &json["results"][0];
    assert_eq!((first["database"].as_str(), first["status"].as_str()), (Some("tenant00"), Some("ok")));
    assert_eq!(first["rows_affected"], 4, "two inserted, two updated");
    let t04 = json["results"].as_array().unwrap().iter().find(|r| r["database"] == "tenant04").unwrap();
    assert_eq!(t04["error_number"], 208);
    assert!(text.contains("FAILED  tenant13  Msg 208"), "{text}");
    assert!(text.contains("20 databases: 18 succeeded, 2 failed"), "{text}");
    assert_eq!(ok(&server, "SELECT SUM(amount) FROM tenant19.dbo.invoices").trim(), "302");

    // Selection: a pattern, an exclusion, and the JSON on stdout.
    let (code, out) = fleet(
        &server,
        "exec",
        &[
            "--databases",
            "tenant1_",
            "--exclude",
            "tenant13",
            "--format",
            "json",
            "-Q",
            "SELECT COUNT(*) FROM dbo.invoices",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> =
        json["results"].as_array().unwrap().iter().map(|r| r["database"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["tenant10", "tenant11", "tenant12", "tenant14", "tenant15", "tenant16", "tenant17", "tenant18", "tenant19"]
    );

    let (code, _) = fleet(&server, "exec", &["--parallel", "0", "-Q", "SELECT 1"]);
    assert_eq!(code, 2, "a usage error");
}

#[test]
fn fleet_backup_backs_up_every_database_and_one_restores() {
    let server = start();
    tenants(&server, 6);
    ok(&server, "INSERT INTO tenant03.dbo.invoices VALUES (1, 10), (2, 20), (3, 30)");
    let to = server.dir.path().join("backups");
    let (code, text) = fleet(&server, "backup", &["--to", to.to_str().unwrap(), "--parallel", "3"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("7 databases: 7 succeeded, 0 failed"), "{text}");
    for name in ["tenant00", "tenant03", "tenant05", "shop"] {
        assert!(to.join(format!("{name}.bak")).exists(), "{name}.bak");
    }
    ok(&server, "DELETE FROM tenant03.dbo.invoices");
    ok(&server, &format!("RESTORE DATABASE tenant03 FROM DISK = '{}' WITH REPLACE", path(&to.join("tenant03.bak"))));
    assert_eq!(ok(&server, "SELECT SUM(amount) FROM tenant03.dbo.invoices").trim(), "60");

    let not_a_directory = server.dir.path().join("plain-file");
    std::fs::write(&not_a_directory, b"x").unwrap();
    let args = ["--to", not_a_directory.to_str().unwrap(), "--databases", "tenant0_", "--format", "json"];
    let (code, out) = fleet(&server, "backup", &args);
    assert_eq!(code, 1, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (json["databases"].as_u64(), json["failed"].as_u64()),
        (Some(6), Some(6)),
        "each fails, none stops the others"
    );
}
