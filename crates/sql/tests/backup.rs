//! BACKUP and RESTORE in T-SQL: options, messages, the RESTORE … ONLY result sets, the
//! msdb history, recovery models and log chains with STOPAT, trace flags, and the errors
//! a SQL Server user expects. (Messages carry times, so no golden file can hold them.)

use std::path::Path;

use tessera_database::{Engine, EngineConfig};
use tessera_semantics::types::Value;
use tessera_sql::{Collected, Session};

fn session(dir: &Path) -> Session {
    let mut config = EngineConfig::new(dir.join("data"));
    config.pool_bytes = 32 << 20;
    config.background = false;
    let shared = tessera_sql::start_instance(Engine::open(config).unwrap()).unwrap();
    Session::new(shared, "sa", "master").unwrap()
}

fn run(s: &mut Session, sql: &str) -> Collected {
    let mut out = Collected::default();
    s.execute(sql, &mut out);
    out
}

fn ok(s: &mut Session, sql: &str) -> Collected {
    let out = run(s, sql);
    assert!(out.errors().is_empty(), "{sql}: {:?}", out.errors());
    out
}

fn texts(out: &Collected) -> Vec<String> {
    out.messages.iter().map(|m| m.message.clone()).collect()
}

fn error_numbers(out: &Collected) -> Vec<i32> {
    out.errors().iter().map(|e| e.number).collect()
}

fn scalar(s: &mut Session, sql: &str) -> Value {
    let out = ok(s, sql);
    out.result_sets[0].1[0][0].clone()
}

#[test]
fn full_backup_restore_with_stripes_compression_and_the_only_statements() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut s = session(dir.path());
    ok(&mut s, "create database shop; alter database shop set recovery simple");
    ok(
        &mut s,
        "use shop; create table t (id int primary key, name nvarchar(100), price decimal(10,2));
         declare @i int = 0; while @i < 2000 begin insert t values (@i, concat(N'item ', @i), @i * 1.5); set @i += 1 end;
         use master",
    );
    let out = ok(
        &mut s,
        &format!(
            "BACKUP DATABASE shop TO DISK = '{d}/a.bak', DISK = '{d}/b.bak'
             WITH FORMAT, INIT, COMPRESSION, CHECKSUM, STATS = 25, NAME = N'nightly', DESCRIPTION = 'all of it',
                  BUFFERCOUNT = 6, MAXTRANSFERSIZE = 65536, NOREWIND, NOUNLOAD"
        ),
    );
    let t = texts(&out);
    // STATS = 25: a notice at each multiple of 25 the backup passes (a small database
    // passes several in one read), rising to 100.
    let percents: Vec<u32> = t.iter().filter_map(|m| m.strip_suffix(" percent processed.")?.parse().ok()).collect();
    assert!(percents.windows(2).all(|w| w[0] < w[1]) && percents.last() == Some(&100), "{t:?}");
    assert!(percents.iter().all(|p| p % 25 == 0), "{t:?}");
    assert!(
        t.iter().any(|m| m.starts_with("Processed ") && m.ends_with("for database 'shop', file 'shop' on file 1.")),
        "{t:?}"
    );
    assert!(t.iter().any(|m| m.ends_with("for database 'shop', file 'shop_log' on file 1.")), "{t:?}");
    assert!(t.last().unwrap().starts_with("BACKUP DATABASE successfully processed "), "{t:?}");
    assert_eq!(out.messages.last().unwrap().number, 3014);

    let out = ok(&mut s, &format!("RESTORE HEADERONLY FROM DISK = '{d}/a.bak'"));
    let (cols, rows) = &out.result_sets[0];
    let col = |name: &str| cols.iter().position(|c| c.name == name).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][col("BackupName")], Value::str("nightly"));
    assert_eq!(rows[0][col("BackupDescription")], Value::str("all of it"));
    assert_eq!(rows[0][col("BackupType")], Value::Int(1));
    assert_eq!(rows[0][col("Compressed")], Value::Int(1));
    assert_eq!(rows[0][col("Position")], Value::Int(1));
    assert_eq!(rows[0][col("DatabaseName")], Value::str("shop"));
    assert_eq!(rows[0][col("HasBackupChecksums")], Value::Bit(true));
    assert_eq!(rows[0][col("RecoveryModel")], Value::str("SIMPLE"));

    let out = ok(&mut s, &format!("RESTORE FILELISTONLY FROM DISK = '{d}/b.bak' WITH FILE = 1"));
    let names: Vec<Value> = out.result_sets[0].1.iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, vec![Value::str("shop"), Value::str("shop_log")]);
    let out = ok(&mut s, &format!("RESTORE LABELONLY FROM DISK = '{d}/b.bak'"));
    assert_eq!(out.result_sets[0].1[0][2], Value::Int(2), "two media families");

    let out = ok(&mut s, &format!("RESTORE VERIFYONLY FROM DISK = '{d}/a.bak', DISK = '{d}/b.bak'"));
    assert_eq!(texts(&out).last().unwrap(), "The backup set on file 1 is valid.");
    // One stripe is not enough.
    let out = run(&mut s, &format!("RESTORE VERIFYONLY FROM DISK = '{d}/a.bak'"));
    assert_eq!(error_numbers(&out), vec![3132, 3013]);
    assert_eq!(texts(&out).last().unwrap(), "RESTORE VERIFYONLY is terminating abnormally.");

    let out = ok(
        &mut s,
        &format!(
            "RESTORE DATABASE shop_copy FROM DISK = '{d}/b.bak', DISK = '{d}/a.bak'
             WITH MOVE 'shop' TO '{d}/copy.mdf', MOVE 'shop_log' TO '{d}/copy.ldf', RECOVERY, STATS"
        ),
    );
    assert!(texts(&out).last().unwrap().starts_with("RESTORE DATABASE successfully processed "));
    assert_eq!(
        ok(&mut s, "select id, name, price from shop_copy.dbo.t order by id").result_sets[0].1,
        ok(&mut s, "select id, name, price from shop.dbo.t order by id").result_sets[0].1
    );
    assert_eq!(scalar(&mut s, "select count(*) from shop_copy.dbo.t"), Value::Int(2000));
    let out = ok(&mut s, "DBCC CHECKDB('shop_copy')");
    assert!(texts(&out)[0].starts_with("CHECKDB found 0 allocation errors and 0 consistency errors"));

    // The history tools read.
    let out = ok(&mut s, "select type, database_name, position, name, is_copy_only from msdb.dbo.backupset");
    assert_eq!(
        out.result_sets[0].1,
        vec![vec![Value::str("D"), Value::str("shop"), Value::Int(1), Value::str("nightly"), Value::Bit(false)]]
    );
    assert_eq!(
        scalar(&mut s, "select count(*) from msdb.dbo.backupmediafamily f join msdb.dbo.backupset b on b.media_set_id = f.media_set_id"),
        Value::Int(2)
    );
    assert_eq!(
        scalar(&mut s, "select destination_database_name from msdb.dbo.restorehistory"),
        Value::str("shop_copy")
    );

    // NOINIT appends a second set; FILE = 2 names it.
    ok(&mut s, &format!("BACKUP DATABASE shop_copy TO DISK = '{d}/a.bak', DISK = '{d}/b.bak' WITH NOINIT"));
    let out = ok(&mut s, &format!("RESTORE HEADERONLY FROM DISK = '{d}/a.bak'"));
    assert_eq!(out.result_sets[0].1.len(), 2);
    // Over an existing database: another database's backup needs REPLACE (3154).
    let out = run(&mut s, &format!("RESTORE DATABASE shop FROM DISK = '{d}/a.bak', DISK = '{d}/b.bak' WITH FILE = 2"));
    assert_eq!(error_numbers(&out), vec![3154, 3013]);
    // A different number of devices than the media set has (3231).
    let out = run(&mut s, &format!("BACKUP DATABASE shop TO DISK = '{d}/a.bak'"));
    assert_eq!(error_numbers(&out), vec![3231, 3013]);
}

#[test]
fn full_model_log_chain_point_in_time_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut s = session(dir.path());
    ok(&mut s, "create database bank; alter database bank set recovery full");
    ok(&mut s, "create table bank.dbo.acct (id int primary key, balance int)");
    ok(&mut s, "insert bank.dbo.acct values (1, 100), (2, 200)");
    let out = run(&mut s, &format!("BACKUP LOG bank TO DISK = '{d}/log.bak'"));
    assert_eq!(error_numbers(&out), vec![4214, 3013]);
    ok(&mut s, &format!("BACKUP DATABASE bank TO DISK = '{d}/full.bak' WITH INIT"));
    ok(&mut s, "update bank.dbo.acct set balance = 150 where id = 1");
    ok(&mut s, "use bank; checkpoint; use master");
    assert_eq!(
        scalar(&mut s, "select log_reuse_wait_desc from sys.databases where name = 'bank'"),
        Value::str("LOG_BACKUP")
    );
    let out = ok(&mut s, &format!("BACKUP LOG bank TO DISK = '{d}/log.bak' WITH INIT"));
    assert!(texts(&out).last().unwrap().starts_with("BACKUP LOG successfully processed "));
    ok(&mut s, "insert bank.dbo.acct values (3, 300)");
    let between = match scalar(&mut s, "select convert(varchar(30), sysdatetime(), 121)") {
        Value::Str(t) => t.to_string(),
        v => panic!("{v:?}"),
    };
    std::thread::sleep(std::time::Duration::from_millis(30));
    ok(&mut s, "insert bank.dbo.acct values (4, 400)");
    ok(&mut s, &format!("BACKUP LOG bank TO DISK = '{d}/log.bak' WITH NOINIT"));

    ok(
        &mut s,
        &format!(
            "RESTORE DATABASE bank2 FROM DISK = '{d}/full.bak' WITH NORECOVERY,
               MOVE 'bank' TO '{d}/bank2.mdf', MOVE 'bank_log' TO '{d}/bank2.ldf'"
        ),
    );
    assert_eq!(scalar(&mut s, "select state_desc from sys.databases where name = 'bank2'"), Value::str("RESTORING"));
    let out = run(&mut s, "select * from bank2.dbo.acct");
    assert_eq!(error_numbers(&out), vec![927]);
    // A system view of it names no table: it bound against nothing, and finds nothing
    // now (this looped for ever, binding again and again).
    let out = run(&mut s, "select name from bank2.sys.tables");
    assert_eq!(error_numbers(&out), vec![927]);
    // The second log backup does not follow the full one (4305).
    let out = run(&mut s, &format!("RESTORE LOG bank2 FROM DISK = '{d}/log.bak' WITH FILE = 2, NORECOVERY"));
    assert_eq!(error_numbers(&out), vec![4305, 3013]);
    let out = ok(&mut s, &format!("RESTORE LOG bank2 FROM DISK = '{d}/log.bak' WITH FILE = 1, NORECOVERY"));
    assert!(texts(&out).last().unwrap().starts_with("RESTORE LOG successfully processed "));
    ok(&mut s, &format!("RESTORE LOG bank2 FROM DISK = '{d}/log.bak' WITH FILE = 2, RECOVERY, STOPAT = '{between}'"));
    let out = ok(&mut s, "select id, balance from bank2.dbo.acct order by id");
    assert_eq!(
        out.result_sets[0].1,
        vec![
            vec![Value::Int(1), Value::Int(150)],
            vec![Value::Int(2), Value::Int(200)],
            vec![Value::Int(3), Value::Int(300)]
        ]
    );
    assert_eq!(scalar(&mut s, "select state_desc from sys.databases where name = 'bank2'"), Value::str("ONLINE"));

    // Restoring the database the session is in, inside a transaction, or a system one.
    let out = run(&mut s, &format!("use bank; RESTORE DATABASE bank FROM DISK = '{d}/full.bak' WITH REPLACE"));
    assert_eq!(error_numbers(&out), vec![3102, 3013]);
    let out = run(&mut s, &format!("use master; begin tran; BACKUP DATABASE bank TO DISK = '{d}/x.bak'; rollback"));
    assert_eq!(error_numbers(&out)[0], 3021);
    let out = run(&mut s, &format!("RESTORE DATABASE msdb FROM DISK = '{d}/full.bak'"));
    assert_eq!(error_numbers(&out), vec![3108, 3013]);
    // The tail of bank's log was not backed up: REPLACE is needed.
    let out = run(&mut s, &format!("RESTORE DATABASE bank FROM DISK = '{d}/full.bak'"));
    assert_eq!(error_numbers(&out), vec![3159, 3013]);
    // A tail-log backup WITH NORECOVERY leaves it RESTORING; the chain then recovers it.
    ok(&mut s, &format!("BACKUP LOG bank TO DISK = '{d}/tail.bak' WITH INIT, NORECOVERY"));
    assert_eq!(scalar(&mut s, "select state_desc from sys.databases where name = 'bank'"), Value::str("RESTORING"));
    ok(&mut s, &format!("RESTORE DATABASE bank FROM DISK = '{d}/full.bak' WITH NORECOVERY"));
    ok(&mut s, &format!("RESTORE LOG bank FROM DISK = '{d}/log.bak' WITH FILE = 1, NORECOVERY"));
    ok(&mut s, &format!("RESTORE LOG bank FROM DISK = '{d}/log.bak' WITH FILE = 2, NORECOVERY"));
    ok(&mut s, &format!("RESTORE LOG bank FROM DISK = '{d}/tail.bak' WITH NORECOVERY"));
    ok(&mut s, "RESTORE DATABASE bank WITH RECOVERY");
    assert_eq!(scalar(&mut s, "select count(*) from bank.dbo.acct"), Value::Int(4));
    // Differential needs a full backup of its own database first.
    ok(&mut s, "create database fresh");
    let out = run(&mut s, &format!("BACKUP DATABASE fresh TO DISK = '{d}/diff.bak' WITH DIFFERENTIAL"));
    assert_eq!(error_numbers(&out), vec![3035, 3013]);
    // Options SQL Server does not know, and devices tessera does not have.
    let out = run(&mut s, &format!("BACKUP DATABASE bank TO DISK = '{d}/y.bak' WITH FROBNICATE"));
    assert_eq!(error_numbers(&out), vec![155]);
    let out = run(&mut s, "BACKUP DATABASE bank TO TAPE = '\\\\.\\tape0'");
    assert_eq!(error_numbers(&out), vec![40525]);
}

#[test]
fn trace_flag_3213_shows_the_buffer_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut s = session(dir.path());
    ok(&mut s, "create database tf");
    ok(&mut s, "DBCC TRACEON(3213, 3604)");
    let out = ok(
        &mut s,
        &format!("BACKUP DATABASE tf TO DISK = '{d}/tf.bak' WITH BUFFERCOUNT = 7, MAXTRANSFERSIZE = 1048576"),
    );
    let t = texts(&out);
    assert!(t.iter().any(|m| m == "BufferCount:                7"), "{t:?}");
    assert!(t.iter().any(|m| m == "MaxTransferSize:            1024 KB"), "{t:?}");
    assert!(t.iter().any(|m| m == "Total buffer space:         7 MB"), "{t:?}");
}

/// The number of pages a BACKUP/RESTORE message says it processed for `file`.
fn processed_pages(out: &Collected, file: &str) -> Option<u64> {
    texts(out).iter().find_map(|m| {
        let rest = m.strip_prefix("Processed ")?;
        let (n, tail) = rest.split_once(' ')?;
        tail.contains(&format!("file '{file}' on file")).then(|| n.parse().unwrap())
    })
}

#[test]
fn bulk_logged_insert_select_is_minimally_logged_and_its_log_backup_carries_the_pages() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut s = session(dir.path());
    ok(&mut s, "create database bl; alter database bl set recovery bulk_logged");
    ok(
        &mut s,
        "use bl; create table src (id int primary key, pad char(300));
         create table dst (id int primary key, pad char(300));
         create table dup (id int primary key, pad char(300));
         create table logged (id int primary key, pad char(300));
         declare @i int = 0;
         begin tran; while @i < 3000 begin insert src values (@i, concat('row ', @i)); set @i += 1 end; commit;
         use master",
    );
    ok(&mut s, &format!("BACKUP DATABASE bl TO DISK = '{d}/bl.bak' WITH FORMAT"));
    ok(&mut s, &format!("BACKUP LOG bl TO DISK = '{d}/bl_log.bak' WITH FORMAT")); // file 1

    // Into an empty table: minimally logged, so the next log backup copies data pages
    // and very little log.
    let out = ok(&mut s, "insert bl.dbo.dst select id, pad from bl.dbo.src");
    assert_eq!(out.counts, vec![3000]);
    let between = match scalar(&mut s, "select convert(varchar(30), sysdatetime(), 121)") {
        Value::Str(t) => t.to_string(),
        v => panic!("{v:?}"),
    };
    std::thread::sleep(std::time::Duration::from_millis(30));
    ok(&mut s, "update bl.dbo.dst set pad = 'changed' where id = 10");
    let out = ok(&mut s, &format!("BACKUP LOG bl TO DISK = '{d}/bl_log.bak'")); // file 2
    let data = processed_pages(&out, "bl").expect("data pages processed");
    let log = processed_pages(&out, "bl_log").unwrap();
    assert!(data >= 100, "{data} data pages for 3000 rows of 300 bytes");
    assert!(log * 10 < data, "{log} log pages beside {data} data pages");

    // Loads that fail on a duplicate key (still BULK_LOGGED: staged rows), then the same
    // rows as `dst` fully logged (FULL).
    let out = run(&mut s, "insert bl.dbo.dup select id % 2000, pad from bl.dbo.src");
    assert_eq!(error_numbers(&out), vec![2627]);
    assert!(out.errors()[0].message.ends_with("The duplicate key value is (0)."), "{:?}", out.errors());
    assert_eq!(scalar(&mut s, "select count(*) from bl.dbo.dup"), Value::Int(0));
    // Into a table that has rows: stored row by row, the same error for a clash.
    ok(&mut s, "insert bl.dbo.dup values (5, 'five')");
    let out = run(&mut s, "insert bl.dbo.dup select id, pad from bl.dbo.src where id < 150");
    assert_eq!(error_numbers(&out), vec![2627]);
    assert!(out.errors()[0].message.ends_with("The duplicate key value is (5)."), "{:?}", out.errors());
    ok(&mut s, "insert bl.dbo.dup select id, pad from bl.dbo.src where id between 6 and 300");
    assert_eq!(scalar(&mut s, "select count(*) from bl.dbo.dup"), Value::Int(296));
    ok(&mut s, "alter database bl set recovery full");
    ok(&mut s, "insert bl.dbo.logged select id, pad from bl.dbo.src");
    let out = ok(&mut s, &format!("BACKUP LOG bl TO DISK = '{d}/bl_log.bak'")); // file 3
    assert_eq!(processed_pages(&out, "bl"), None);
    assert!(processed_pages(&out, "bl_log").unwrap() >= 100);

    let out = ok(&mut s, &format!("RESTORE HEADERONLY FROM DISK = '{d}/bl_log.bak'"));
    let (cols, rows) = &out.result_sets[0];
    let col = |name: &str| cols.iter().position(|c| c.name == name).unwrap();
    let flags: Vec<&Value> = rows.iter().map(|r| &r[col("HasBulkLoggedData")]).collect();
    assert_eq!(flags, vec![&Value::Bit(false), &Value::Bit(true), &Value::Bit(false)]);
    assert_eq!(
        scalar(
            &mut s,
            "select sum(cast(has_bulk_logged_data as int)) from msdb.dbo.backupset where database_name = 'bl' and type = 'L'"
        ),
        Value::Int(1)
    );

    // Restore: no point inside the bulk-logged backup (4341); its end is fine.
    ok(
        &mut s,
        &format!(
            "RESTORE DATABASE bl2 FROM DISK = '{d}/bl.bak' WITH NORECOVERY,
               MOVE 'bl' TO '{d}/bl2.mdf', MOVE 'bl_log' TO '{d}/bl2.ldf'"
        ),
    );
    ok(&mut s, &format!("RESTORE LOG bl2 FROM DISK = '{d}/bl_log.bak' WITH FILE = 1, NORECOVERY"));
    let out = run(&mut s, &format!("RESTORE LOG bl2 FROM DISK = '{d}/bl_log.bak' WITH FILE = 2, STOPAT = '{between}'"));
    assert_eq!(error_numbers(&out), vec![4341, 3013]);
    let out = ok(&mut s, &format!("RESTORE LOG bl2 FROM DISK = '{d}/bl_log.bak' WITH FILE = 2, NORECOVERY"));
    assert!(processed_pages(&out, "bl").unwrap() >= 100);
    ok(&mut s, &format!("RESTORE LOG bl2 FROM DISK = '{d}/bl_log.bak' WITH FILE = 3, RECOVERY"));
    let same = "select (select count(*) from bl.dbo.dst), (select sum(cast(checksum(id, pad) as bigint)) from bl.dbo.dst),
                       (select count(*) from bl2.dbo.dst), (select sum(cast(checksum(id, pad) as bigint)) from bl2.dbo.dst),
                       (select count(*) from bl2.dbo.logged)";
    let out = ok(&mut s, same);
    let r = &out.result_sets[0].1[0];
    assert_eq!((&r[0], &r[1]), (&r[2], &r[3]));
    assert_eq!(r[0], Value::Int(3000));
    assert_eq!(r[4], Value::Int(3000));
    ok(&mut s, "dbcc checkdb ('bl2')");
}

/// RESTORE never overwrites a file that is not the database's own without WITH REPLACE
/// (3142): a detached database's files survive a RESTORE of its name and attach again.
#[test]
fn restore_refuses_to_overwrite_a_detached_database_s_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut s = session(dir.path());
    ok(&mut s, "create database tenant; alter database tenant set recovery simple");
    ok(&mut s, "create table tenant.dbo.t (id int primary key, v varchar(10)); insert tenant.dbo.t values (1, 'old')");
    ok(&mut s, &format!("backup database tenant to disk = '{d}/tenant.bak' with init"));
    ok(&mut s, "insert tenant.dbo.t values (2, 'after')");
    let files =
        ok(&mut s, "select physical_name from sys.master_files where database_id = db_id('tenant') order by type");
    let paths: Vec<String> = files.result_sets[0]
        .1
        .iter()
        .map(|r| match &r[0] {
            Value::Str(t) => t.to_string(),
            v => panic!("{v:?}"),
        })
        .collect();
    ok(&mut s, "exec sp_detach_db 'tenant'");

    let out = run(&mut s, &format!("restore database tenant from disk = '{d}/tenant.bak'"));
    assert_eq!(error_numbers(&out)[0], 3142, "{:?}", texts(&out));
    assert!(texts(&out)[0].contains(&paths[0]), "{:?}", texts(&out));
    assert_eq!(
        scalar(&mut s, "select count(*) from sys.databases where name = 'tenant'"),
        Value::Int(0),
        "a refused RESTORE registers nothing"
    );
    ok(
        &mut s,
        &format!("create database tenant on (filename = '{}'), (filename = '{}') for attach", paths[0], paths[1]),
    );
    assert_eq!(scalar(&mut s, "select count(*) from tenant.dbo.t"), Value::Int(2), "the detached files are intact");

    ok(&mut s, "exec sp_detach_db 'tenant'");
    ok(&mut s, &format!("restore database tenant from disk = '{d}/tenant.bak' with replace"));
    assert_eq!(scalar(&mut s, "select count(*) from tenant.dbo.t"), Value::Int(1), "WITH REPLACE overwrote them");
    let out = run(
        &mut s,
        &format!("create database again on (filename = '{}'), (filename = '{}') for attach", paths[0], paths[1]),
    );
    assert_eq!(error_numbers(&out)[0], 5120, "the files are the restored database's now: {:?}", texts(&out));
}

/// Large values off the row go through BACKUP and RESTORE (full, then a log backup that
/// carries an update replacing one and a delete dropping another), and the restored
/// database passes CHECKDB.
#[test]
fn large_values_survive_full_and_log_backups() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut s = session(dir.path());
    ok(&mut s, "create database docs; alter database docs set recovery full");
    ok(&mut s, "create table docs.dbo.d (id int primary key, body varchar(max), blob varbinary(max))");
    ok(
        &mut s,
        "insert docs.dbo.d values
           (1, replicate(cast('a' as varchar(max)), 50000), cast(replicate(cast('x' as varchar(max)), 30000) as varbinary(max))),
           (2, replicate(cast('b' as varchar(max)), 9000), null),
           (3, 'short', 0x01)",
    );
    ok(&mut s, &format!("BACKUP DATABASE docs TO DISK = '{d}/docs.bak' WITH INIT"));
    ok(&mut s, "update docs.dbo.d set body = replicate(cast('c' as varchar(max)), 70000) where id = 1");
    ok(&mut s, "delete docs.dbo.d where id = 2");
    ok(&mut s, &format!("BACKUP LOG docs TO DISK = '{d}/docs.trn' WITH INIT"));
    ok(
        &mut s,
        &format!(
            "RESTORE DATABASE docs2 FROM DISK = '{d}/docs.bak' WITH NORECOVERY,
               MOVE 'docs' TO '{d}/docs2.mdf', MOVE 'docs_log' TO '{d}/docs2.ldf'"
        ),
    );
    ok(&mut s, &format!("RESTORE LOG docs2 FROM DISK = '{d}/docs.trn' WITH RECOVERY"));
    let query = "select id, len(body), left(body, 1), datalength(blob) from docs2.dbo.d order by id";
    let out = ok(&mut s, query);
    assert_eq!(
        out.result_sets[0].1,
        vec![
            vec![Value::Int(1), Value::Int(70000), Value::str("c"), Value::Int(30000)],
            vec![Value::Int(3), Value::Int(5), Value::str("s"), Value::Int(1)],
        ]
    );
    let out = ok(&mut s, "dbcc checkdb ('docs2')");
    assert!(
        texts(&out).iter().any(|t| t.contains("0 allocation errors and 0 consistency errors")),
        "{:?}",
        texts(&out)
    );
}

#[test]
fn a_backup_to_a_full_disk_fails_and_leaves_the_database_and_its_log_chain_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let media = dir.path().join("small");
    let _disk = tessera_io::faults::SmallDisk::mount(&media, "256k");
    let m = media.display();
    let mut s = session(dir.path());
    ok(&mut s, "create database big; alter database big set recovery full");
    ok(&mut s, "create table big.dbo.t (id int primary key, v varchar(max))");
    ok(
        &mut s,
        "insert big.dbo.t select value, replicate(convert(varchar(max), 'x'), 3000) from generate_series(1, 400)",
    );
    ok(&mut s, &format!("BACKUP DATABASE big TO DISK = '{d}/full.bak'"));
    ok(&mut s, "update big.dbo.t set v = 'changed' where id = 1");

    // The media fill up: the statement fails, as SQL Server's does (a write failure on
    // the device, then 3013), and what it wrote is cut off the file: at most the media
    // header stays, and no backup set.
    let out = run(&mut s, &format!("BACKUP DATABASE big TO DISK = '{m}/full.bak'"));
    let numbers = error_numbers(&out);
    assert_eq!(numbers.last(), Some(&3013), "{:?}", texts(&out));
    assert!(texts(&out).iter().any(|t| t.contains("space") || t.contains("full")), "{:?}", texts(&out));
    assert!(std::fs::metadata(media.join("full.bak")).map_or(0, |m| m.len()) <= 4096, "nothing half-written is left");
    let out = run(&mut s, &format!("RESTORE HEADERONLY FROM DISK = '{m}/full.bak'"));
    assert!(out.result_sets.iter().all(|(_, rows)| rows.is_empty()), "no backup set: {:?}", out.result_sets);
    let out = run(&mut s, &format!("BACKUP DATABASE big TO DISK = '{m}/again.bak'"));
    assert_eq!(error_numbers(&out).last(), Some(&3013), "the full disk is seen again, not left behind");

    // The database serves on, the failed backups are no part of its history or its log
    // chain: a log backup elsewhere follows the first full one and restores with it.
    assert_eq!(scalar(&mut s, "select count(*) from big.dbo.t"), Value::Int(400));
    assert_eq!(
        scalar(&mut s, "select count(*) from msdb.dbo.backupset where database_name = 'big'"),
        Value::Int(1),
        "only the backup that succeeded is in the history"
    );
    ok(&mut s, &format!("BACKUP LOG big TO DISK = '{d}/log.bak'"));
    ok(
        &mut s,
        &format!(
            "RESTORE DATABASE big2 FROM DISK = '{d}/full.bak' WITH NORECOVERY,
               MOVE 'big' TO '{d}/big2.mdf', MOVE 'big_log' TO '{d}/big2.ldf';
             RESTORE LOG big2 FROM DISK = '{d}/log.bak' WITH RECOVERY"
        ),
    );
    assert_eq!(scalar(&mut s, "select v from big2.dbo.t where id = 1"), Value::str("changed"));
    ok(&mut s, "dbcc checkdb (big) with no_infomsgs");
}

/// Backup media that fail (EIO on a write, a sync or a read, through `tessera_io::faults`
/// as the database files can) fail their statement with 3013 and change nothing else: no
/// backup set, no history, the database serving, and a RESTORE that cannot read its
/// media leaves an existing database as it was.
#[test]
fn backup_media_that_fail_fail_the_statement_and_nothing_else() {
    use tessera_io::faults::{self, Fault, Op};
    const EIO: i32 = 5;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let media = dir.path().join("media");
    std::fs::create_dir_all(&media).unwrap();
    let m = media.display();
    let mut s = session(dir.path());
    ok(&mut s, "create database m; alter database m set recovery full");
    ok(&mut s, "create table m.dbo.t (id int primary key, v varchar(max))");
    ok(&mut s, "insert m.dbo.t select value, replicate(convert(varchar(max), 'y'), 2000) from generate_series(1, 300)");
    ok(&mut s, &format!("BACKUP DATABASE m TO DISK = '{d}/good.bak'"));
    for (op, skip, what) in [(Op::Write, 2, "write"), (Op::Sync, 0, "sync")] {
        faults::arm(Fault { skip, ..Fault::new(op, &media, "/bad.bak", EIO) });
        let out = run(&mut s, &format!("BACKUP DATABASE m TO DISK = '{m}/bad.bak' WITH INIT"));
        faults::disarm(&media);
        assert_eq!(error_numbers(&out).last(), Some(&3013), "a failed {what}: {:?}", texts(&out));
        let out = run(&mut s, &format!("RESTORE HEADERONLY FROM DISK = '{m}/bad.bak'"));
        assert!(out.result_sets.iter().all(|(_, rows)| rows.is_empty()), "no backup set after a failed {what}");
    }
    assert_eq!(
        scalar(&mut s, "select count(*) from msdb.dbo.backupset where database_name = 'm'"),
        Value::Int(1),
        "only the backup that succeeded is in the history"
    );
    assert_eq!(scalar(&mut s, "select count(*) from m.dbo.t"), Value::Int(300));

    // A restore over m whose media fail to read: 3013, and m is as it was.
    ok(&mut s, &format!("BACKUP DATABASE m TO DISK = '{m}/read.bak'"));
    ok(&mut s, "update m.dbo.t set v = 'after' where id = 1");
    faults::arm(Fault { skip: 1, ..Fault::new(Op::Read, &media, "/read.bak", EIO) });
    let out = run(&mut s, &format!("RESTORE DATABASE m2 FROM DISK = '{m}/read.bak' WITH MOVE 'm' TO '{d}/m2.mdf', MOVE 'm_log' TO '{d}/m2.ldf'"));
    faults::disarm(&media);
    assert_eq!(error_numbers(&out).last(), Some(&3013), "{:?}", texts(&out));
    assert_eq!(scalar(&mut s, "select v from m.dbo.t where id = 1"), Value::str("after"));
    // Media whose first read fails are unreadable (3203), not foreign media (3241).
    faults::arm(Fault::new(Op::Read, &media, "/read.bak", EIO));
    let out = run(&mut s, &format!("RESTORE HEADERONLY FROM DISK = '{m}/read.bak'"));
    faults::disarm(&media);
    let numbers = error_numbers(&out);
    assert!(numbers.contains(&3203) && numbers.last() == Some(&3013), "{:?}", texts(&out));
    // Once the media read again, the same restore succeeds.
    ok(&mut s, &format!("RESTORE DATABASE m2 FROM DISK = '{m}/read.bak' WITH REPLACE, MOVE 'm' TO '{d}/m2.mdf', MOVE 'm_log' TO '{d}/m2.ldf'"));
    assert_eq!(scalar(&mut s, "select count(*) from m2.dbo.t"), Value::Int(300));
    ok(&mut s, "dbcc checkdb (m) with no_infomsgs");
}
