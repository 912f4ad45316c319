//! BACKUP and RESTORE through a real client (python-tds) over TCP: the messages reach the
//! client, the RESTORE … ONLY result sets, round trips, a point-in-time restore, msdb
//! history, and — on the server side — the ERRORLOG lines trace flags 3213 and 3605 add.

mod common;

use common::{TestServer, PASSWORD};

#[test]
fn pytds_backup_and_restore() {
    if !common::have("python3") {
        eprintln!("python3 is missing: pytds backup scenario skipped");
        return;
    }
    let server = TestServer::start();
    let media = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/pytds_backup.py"))
        .args(["127.0.0.1", &server.port().to_string(), PASSWORD])
        .arg(media.path())
        .output()
        .expect("start python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let log = server.errorlog();
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "--- stdout\n{stdout}\n--- stderr\n{}\n--- ERRORLOG\n{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(log.contains("Backup/Restore buffer configuration parameters"), "{log}");
    assert!(log.contains("MaxTransferSize:            1024 KB"), "{log}");
    assert!(log.contains("Database backed up. Database: shop"), "{log}");
    assert!(log.contains("Log was backed up. Database: shop"), "{log}");
    assert!(log.contains("Database was restored: Database: shop_copy"), "{log}");
}
