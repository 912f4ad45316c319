//! BACKUP and RESTORE statements: options as SQL Server spells them, permissions,
//! messages, the RESTORE … ONLY result sets, trace flags 3213/3604/3605, the ERRORLOG
//! lines and the history in `msdb`.

use crate::runtime::{SessionState, Shared};
use std::path::PathBuf;
use std::sync::Arc;
use tessera_backup::{BackupError, BackupOptions, BackupType, Notice, RestoreOptions, SetHeader, Trailer};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::output::{OutputColumn, ResultSink};
use tessera_semantics::types::{SqlType, Value};

/// An evaluated `WITH` option: upper-cased name, value, and for MOVE the target.
pub struct EvaluatedOption {
    pub name: String,
    pub value: Option<(Value, SqlType)>,
    pub to: Option<(Value, SqlType)>,
}

fn notice_sink(sink: &mut dyn ResultSink) -> impl FnMut(Notice) + '_ {
    move |n: Notice| sink.message(&SqlError::informational(n.number, n.text))
}

fn text(v: &Option<(Value, SqlType)>, option: &str) -> SqlResult<String> {
    match v {
        Some((Value::Str(s), _)) => Ok(s.to_string()),
        Some((Value::Int(i), _)) => Ok(i.to_string()),
        _ => Err(msg::BACKUP_OPTION_INVALID.with(&[&option, &"requires a value"])),
    }
}

fn number(v: &Option<(Value, SqlType)>, option: &str) -> SqlResult<u32> {
    let n = match v {
        Some((Value::Int(i), _)) => *i,
        Some((Value::Str(s), _)) => s.trim().parse().unwrap_or(-1),
        Some((Value::Decimal { value, scale: 0 }, _)) => i64::try_from(*value).unwrap_or(-1),
        _ => -1,
    };
    u32::try_from(n)
        .map_err(|_| msg::BACKUP_OPTION_INVALID.with(&[&format!("value for the {option}"), &"is not valid"]))
}

/// `STOPAT`: a datetime in the server's local time, as microseconds since the epoch.
fn stop_at(v: &Option<(Value, SqlType)>, state: &SessionState) -> SqlResult<i64> {
    let Some((value, ty)) = v else {
        return Err(msg::BACKUP_OPTION_INVALID.with(&[&"STOPAT", &"requires a value"]));
    };
    let dt = tessera_semantics::types::cast(value, ty, &SqlType::DateTime2 { scale: 7 }, None)?;
    let Value::DateTime { days, ticks } = dt else {
        return Err(msg::BACKUP_OPTION_INVALID.with(&[&"value for the STOPAT", &"is not a valid datetime"]));
    };
    let epoch = tessera_semantics::types::days_from_civil(1970, 1, 1);
    let local_micros = i64::from(days - epoch) * 86_400_000_000 + (ticks / 10) as i64;
    Ok(local_micros - i64::from(state.functions.utc_offset_minutes) * 60_000_000)
}

/// A time in microseconds since the epoch as a local `datetime` value.
fn datetime(micros: i64, state: &SessionState) -> Value {
    if micros == 0 {
        return Value::Null;
    }
    let local = micros + i64::from(state.functions.utc_offset_minutes) * 60_000_000;
    let epoch = tessera_semantics::types::days_from_civil(1970, 1, 1);
    let v = Value::DateTime {
        days: epoch + local.div_euclid(86_400_000_000) as i32,
        ticks: (local.rem_euclid(86_400_000_000) * 10) as u64,
    };
    tessera_semantics::types::cast(&v, &SqlType::DateTime2 { scale: 7 }, &SqlType::DateTime, None)
        .unwrap_or(Value::Null)
}

fn lsn(v: u64) -> Value {
    Value::Decimal { value: i128::from(v), scale: 0 }
}

fn guid(v: u128) -> Value {
    Value::Guid(v.to_le_bytes())
}

/// `e`, followed by 3013 (`BACKUP DATABASE is terminating abnormally.`).
/// How long a tail-log backup WITH NORECOVERY waits for the statements and
/// transactions in flight in its database to end before it gives up with 3101.
const TAIL_HOLD_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn to_sql(e: impl Into<BackupError>, verb: &str) -> SqlError {
    let e = e.into();
    let first = SqlError::new(e.number, e.message);
    msg::BACKUP_RESTORE_TERMINATED.with(&[&verb]).after(first)
}

fn check_permission(shared: &Shared, state: &SessionState, database: &str, verb: &str) -> SqlResult<()> {
    let allowed = shared.session_in_role(state, "sysadmin")
        || (verb.starts_with("RESTORE") && shared.session_in_role(state, "dbcreator"));
    if allowed {
        return Ok(());
    }
    // BACKUP DATABASE / BACKUP LOG are database permissions (db_owner and
    // db_backupoperator hold them).
    if verb.starts_with("BACKUP") && shared.engine.exists(database) {
        if let Ok((security, token)) = shared.access(state, database) {
            let on = tessera_security::principals::check::On::Database;
            if tessera_security::principals::check::allowed(&security, &token, verb, on) {
                return Ok(());
            }
        }
    }
    // Refused as SQL Server refuses it: the permission error, then 3013.
    let denied = if verb.starts_with("RESTORE") {
        msg::RESTORE_PERMISSION_DENIED.with(&[&database])
    } else {
        msg::DATABASE_PERMISSION_DENIED.with(&[&verb, &database])
    };
    Err(msg::BACKUP_RESTORE_TERMINATED.with(&[&verb]).after(denied))
}

fn not_in_transaction(state: &SessionState) -> SqlResult<()> {
    if state.txns.count > 0 {
        return Err(msg::BACKUP_IN_TRANSACTION.err());
    }
    Ok(())
}

/// Lines that trace flag 3213 prints: to ERRORLOG with 3605, to the client with 3604.
fn trace(shared: &Shared, state: &SessionState, sink: &mut dyn ResultSink, lines: &[String]) {
    if !state.has_trace_flag(shared, 3213) {
        return;
    }
    for line in lines {
        if state.has_trace_flag(shared, 3605) {
            shared.write_errorlog(state.spid, line);
        }
        if state.has_trace_flag(shared, 3604) {
            sink.message(&SqlError::informational(0, line.clone()));
        }
    }
}

fn sql_string(s: &str) -> String {
    format!("N'{}'", s.replace('\'', "''"))
}

fn sql_time(micros: i64) -> String {
    // Written as UTC-free local text through DATEADD on the epoch, so the server's
    // own conversion applies the time zone consistently with GETDATE().
    format!("DATEADD(ms, {}, DATEADD(minute, DATEDIFF(minute, GETUTCDATE(), GETDATE()), '19700101'))", micros / 1000)
}

/// The msdb tables SQL Server's tools read after a backup or restore.
pub const MSDB_TABLES: &str = "
IF OBJECT_ID('dbo.backupmediaset') IS NULL
CREATE TABLE dbo.backupmediaset (media_set_id int IDENTITY PRIMARY KEY, media_uuid uniqueidentifier NULL,
  media_family_count tinyint NULL, name nvarchar(128) NULL, description nvarchar(255) NULL,
  software_name nvarchar(128) NULL, software_vendor_id int NULL, MTF_major_version tinyint NULL,
  mirror_count tinyint NULL, is_password_protected bit NULL, is_compressed bit NULL, is_encrypted bit NULL);
IF OBJECT_ID('dbo.backupmediafamily') IS NULL
CREATE TABLE dbo.backupmediafamily (media_set_id int NOT NULL, family_sequence_number tinyint NOT NULL,
  media_family_id uniqueidentifier NULL, media_count int NULL, logical_device_name nvarchar(128) NULL,
  physical_device_name nvarchar(260) NULL, device_type tinyint NULL, physical_block_size int NULL,
  mirror tinyint NOT NULL, PRIMARY KEY (media_set_id, family_sequence_number, mirror));
IF OBJECT_ID('dbo.backupset') IS NULL
CREATE TABLE dbo.backupset (backup_set_id int IDENTITY PRIMARY KEY, backup_set_uuid uniqueidentifier NOT NULL,
  media_set_id int NOT NULL, first_family_number tinyint NULL, first_media_number smallint NULL,
  last_family_number tinyint NULL, last_media_number smallint NULL, catalog_family_number tinyint NULL,
  catalog_media_number smallint NULL, position int NULL, expiration_date datetime NULL,
  software_vendor_id int NULL, name nvarchar(128) NULL, description nvarchar(255) NULL,
  user_name nvarchar(128) NULL, software_major_version tinyint NULL, software_minor_version tinyint NULL,
  software_build_version smallint NULL, time_zone smallint NULL, mtf_minor_version tinyint NULL,
  first_lsn numeric(25,0) NULL, last_lsn numeric(25,0) NULL, checkpoint_lsn numeric(25,0) NULL,
  database_backup_lsn numeric(25,0) NULL, database_creation_date datetime NULL,
  backup_start_date datetime NULL, backup_finish_date datetime NULL, type char(1) NULL,
  sort_order smallint NULL, code_page smallint NULL, compatibility_level tinyint NULL,
  database_version int NULL, backup_size numeric(20,0) NULL, database_name nvarchar(128) NULL,
  server_name nvarchar(128) NULL, machine_name nvarchar(128) NULL, flags int NULL,
  unicode_locale int NULL, unicode_compare_style int NULL, collation_name nvarchar(128) NULL,
  is_password_protected bit NULL, recovery_model nvarchar(60) NULL, has_bulk_logged_data bit NULL,
  is_snapshot bit NULL, is_readonly bit NULL, is_single_user bit NULL, has_backup_checksums bit NULL,
  is_damaged bit NULL, begins_log_chain bit NULL, has_incomplete_metadata bit NULL,
  is_force_offline bit NULL, is_copy_only bit NULL, first_recovery_fork_guid uniqueidentifier NULL,
  last_recovery_fork_guid uniqueidentifier NULL, fork_point_lsn numeric(25,0) NULL,
  database_guid uniqueidentifier NULL, family_guid uniqueidentifier NULL,
  differential_base_lsn numeric(25,0) NULL, differential_base_guid uniqueidentifier NULL,
  compressed_backup_size numeric(20,0) NULL, key_algorithm nvarchar(32) NULL,
  encryptor_thumbprint varbinary(20) NULL, encryptor_type nvarchar(32) NULL);
IF OBJECT_ID('dbo.restorehistory') IS NULL
CREATE TABLE dbo.restorehistory (restore_history_id int IDENTITY PRIMARY KEY, restore_date datetime NULL,
  destination_database_name nvarchar(128) NULL, user_name nvarchar(128) NULL, backup_set_id int NOT NULL,
  restore_type char(1) NULL, replace bit NULL, recovery bit NULL, restart bit NULL, stop_at datetime NULL,
  device_count tinyint NULL, stop_at_mark_name nvarchar(128) NULL, stop_before bit NULL);
";

/// The msdb history rows of a backup (`backupmediaset`, `backupmediafamily`, `backupset`).
fn backup_history(devices: &[PathBuf], r: &tessera_backup::BackupReport) -> String {
    let h = &r.header;
    let t = &r.trailer;
    let m = &r.media[0];
    let mut sql = format!(
        "DECLARE @m int = (SELECT media_set_id FROM dbo.backupmediaset WHERE media_uuid = '{}');
IF @m IS NULL BEGIN
  INSERT dbo.backupmediaset (media_uuid, media_family_count, name, description, software_name, software_vendor_id, MTF_major_version, mirror_count, is_password_protected, is_compressed, is_encrypted)
  VALUES ('{}', {}, {}, {}, N'tessera', 4608, 1, 1, 0, {}, 0);
  SET @m = SCOPE_IDENTITY();\n",
        uuid(m.media_set_guid),
        uuid(m.media_set_guid),
        m.family_count,
        sql_string(&m.media_name),
        sql_string(&m.media_description),
        u8::from(h.compressed)
    );
    for (i, d) in devices.iter().enumerate() {
        sql.push_str(&format!(
            "  INSERT dbo.backupmediafamily VALUES (@m, {}, '{}', 1, NULL, {}, 2, 512, 0);\n",
            r.media[i].family_sequence,
            uuid(r.media[i].media_set_guid ^ u128::from(r.media[i].family_sequence)),
            sql_string(&d.display().to_string())
        ));
    }
    sql.push_str("END\n");
    sql.push_str(&format!(
        "INSERT dbo.backupset (backup_set_uuid, media_set_id, first_family_number, first_media_number, last_family_number, last_media_number, position, software_vendor_id, name, description, user_name, first_lsn, last_lsn, checkpoint_lsn, database_backup_lsn, backup_start_date, backup_finish_date, type, backup_size, database_name, server_name, machine_name, recovery_model, has_bulk_logged_data, is_snapshot, is_readonly, is_single_user, has_backup_checksums, is_damaged, begins_log_chain, has_incomplete_metadata, is_force_offline, is_copy_only, differential_base_lsn, differential_base_guid, compressed_backup_size)
VALUES ('{}', @m, 1, 1, {}, 1, {}, 4608, {}, {}, {}, {}, {}, {}, {}, {}, {}, '{}', {}, {}, {}, {}, {}, {}, 0, 0, 0, {}, 0, {}, 0, 0, {}, {}, {}, {});",
        uuid(h.backup_set_guid),
        h.family_count,
        h.position,
        if h.name.is_empty() { "NULL".into() } else { sql_string(&h.name) },
        if h.description.is_empty() { "NULL".into() } else { sql_string(&h.description) },
        sql_string(&h.user_name),
        h.first_lsn,
        t.last_lsn,
        h.checkpoint_lsn,
        h.differential_base_lsn,
        sql_time(h.start_unix_micros),
        sql_time(t.finish_unix_micros),
        h.backup_type.letter(),
        t.backup_size,
        sql_string(&h.database_name),
        sql_string(&h.server_name),
        sql_string(&h.server_name),
        sql_string(&h.recovery_model),
        u8::from(t.has_bulk_logged_data),
        u8::from(h.checksums),
        u8::from(h.begins_log_chain),
        u8::from(h.copy_only),
        if h.differential_base_lsn == 0 { "NULL".into() } else { h.differential_base_lsn.to_string() },
        if h.differential_base_guid == 0 { "NULL".into() } else { format!("'{}'", uuid(h.differential_base_guid)) },
        t.compressed_size
    ));
    sql
}

/// The msdb history row of a restore (`restorehistory`).
fn restore_history(
    database: &str,
    user: &str,
    r: &tessera_backup::RestoreReport,
    replace: bool,
    stop_at: Option<i64>,
    devices: usize,
) -> String {
    let h = &r.header;
    format!(
        "INSERT dbo.restorehistory (restore_date, destination_database_name, user_name, backup_set_id, restore_type, replace, recovery, restart, stop_at, device_count)
VALUES (GETDATE(), {}, {}, ISNULL((SELECT MAX(backup_set_id) FROM dbo.backupset WHERE backup_set_uuid = '{}'), 0), '{}', {}, {}, 0, {}, {});",
        sql_string(database),
        sql_string(user),
        uuid(h.backup_set_guid),
        h.backup_type.letter(),
        u8::from(replace),
        u8::from(r.recovered),
        stop_at.map_or("NULL".into(), sql_time),
        devices
    )
}

/// A GUID in SQL Server's text form.
fn uuid(v: u128) -> String {
    let b = v.to_le_bytes();
    let h = |r: std::ops::Range<usize>, rev: bool| {
        let mut s: Vec<u8> = b[r].to_vec();
        if rev {
            s.reverse();
        }
        s.iter().map(|x| format!("{x:02X}")).collect::<String>()
    };
    format!("{}-{}-{}-{}-{}", h(0..4, true), h(4..6, true), h(6..8, true), h(8..10, false), h(10..16, false))
}

/// BACKUP DATABASE | LOG; returns the msdb history to record (none under trace flag 3001).
pub fn backup(
    shared: &Arc<Shared>,
    state: &mut SessionState,
    log: bool,
    database: &str,
    devices: Vec<PathBuf>,
    options: &[EvaluatedOption],
    sink: &mut dyn ResultSink,
) -> SqlResult<Option<String>> {
    let verb = if log { "BACKUP LOG" } else { "BACKUP DATABASE" };
    check_permission(shared, state, database, verb)?;
    not_in_transaction(state)?;
    if !shared.engine.exists(database) {
        return Err(to_sql(tessera_semantics::catalog::database_not_found(database), verb));
    }
    let mut o = BackupOptions {
        devices: devices.clone(),
        kind: Some(if log { BackupType::Log } else { BackupType::Database }),
        server_name: shared.server_name.clone(),
        user_name: state.login.clone(),
        ..Default::default()
    };
    let mut tail = false;
    for opt in options {
        match opt.name.as_str() {
            "INIT" => o.init = true,
            "NOINIT" => o.init = false,
            "FORMAT" => {
                o.format = true;
                o.skip = true;
            }
            "NOFORMAT" => o.format = false,
            "SKIP" => o.skip = true,
            "NOSKIP" => o.skip = false,
            "NAME" => o.name = Some(text(&opt.value, "NAME")?),
            "DESCRIPTION" => o.description = Some(text(&opt.value, "DESCRIPTION")?),
            "MEDIANAME" => o.media_name = Some(text(&opt.value, "MEDIANAME")?),
            "MEDIADESCRIPTION" => o.media_description = Some(text(&opt.value, "MEDIADESCRIPTION")?),
            "STATS" => o.stats = Some(if opt.value.is_some() { number(&opt.value, "STATS")? } else { 10 }),
            "BUFFERCOUNT" => o.buffer_count = Some(number(&opt.value, "BUFFERCOUNT")?),
            "MAXTRANSFERSIZE" => o.max_transfer_size = Some(number(&opt.value, "MAXTRANSFERSIZE")?),
            "BLOCKSIZE" => o.block_size = Some(number(&opt.value, "BLOCKSIZE")?),
            "COMPRESSION" => o.compression = true,
            "NO_COMPRESSION" => o.compression = false,
            "CHECKSUM" => o.checksum = true,
            "NO_CHECKSUM" => o.checksum = false,
            "COPY_ONLY" => o.copy_only = true,
            "NO_TRUNCATE" if log => o.copy_only = true,
            "DIFFERENTIAL" if !log => o.kind = Some(BackupType::Differential),
            "NORECOVERY" if log => tail = true,
            "NOREWIND"
            | "REWIND"
            | "NOUNLOAD"
            | "UNLOAD"
            | "STOP_ON_ERROR"
            | "CONTINUE_AFTER_ERROR"
            | "RETAINDAYS"
            | "EXPIREDATE"
            | "RESTART" => {}
            other => return Err(msg::UNRECOGNIZED_OPTION.with(&[&other, &"BACKUP"]).with_severity(15)),
        }
    }
    if state.txns.open.iter().any(|t| t.database().name().eq_ignore_ascii_case(database)) {
        return Err(msg::BACKUP_IN_TRANSACTION.err());
    }
    // A tail-log backup WITH NORECOVERY holds the database alone from before it starts
    // until it is RESTORING: a commit in between would be in neither the backup nor the
    // database restored from it.
    let hold = if tail {
        Some(shared.engine.hold_exclusive(database, TAIL_HOLD_WAIT).map_err(|e| to_sql(e, verb))?)
    } else {
        None
    };
    let report = {
        let mut notify = notice_sink(sink);
        match &hold {
            Some(hold) => tessera_backup::backup_database(hold.database(), &o, &mut notify),
            None => tessera_backup::backup(&shared.engine, database, &o, &mut notify),
        }
        .map_err(|e| to_sql(e, verb))?
    };
    trace(shared, state, sink, &report.buffers.trace_lines());
    if !state.has_trace_flag(shared, 3226) {
        let what = if log { "Log was backed up" } else { "Database backed up" };
        shared.write_errorlog(
            state.spid,
            &format!(
                "{what}. Database: {}, pages dumped: {}, first LSN: {}, last LSN: {}, number of dump devices: {}, device information: (FILE={}, TYPE=DISK: {{{}}}).",
                report.header.database_name,
                report.pages,
                tessera_log::Lsn::from_raw(report.header.first_lsn),
                tessera_log::Lsn::from_raw(report.trailer.last_lsn),
                devices.len(),
                report.header.position,
                devices.iter().map(|d| format!("'{}'", d.display())).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    let history = (!state.has_trace_flag(shared, 3001)).then(|| backup_history(&devices, &report));
    if let Some(hold) = hold {
        // A tail-log backup WITH NORECOVERY leaves the database RESTORING.
        shared.forget(database);
        tessera_backup::restoring_after_tail(&shared.engine, hold).map_err(|e| to_sql(e, verb))?;
        if let Some(id) = shared.engine.database_id(database) {
            shared.plans.forget_database(database, id);
        }
    }
    Ok(history)
}

fn columns(spec: &[(&str, SqlType)]) -> Vec<OutputColumn> {
    spec.iter().map(|(n, t)| OutputColumn { name: (*n).into(), ty: *t, nullable: true }).collect()
}

fn headeronly_row(h: &SetHeader, t: &Option<Trailer>, state: &SessionState) -> Vec<Value> {
    let t = t.clone().unwrap_or_default();
    let s = |v: &str| Value::Str(v.into());
    let desc = match h.backup_type {
        BackupType::Database => "Database",
        BackupType::Differential => "Database Differential",
        BackupType::Log => "Transaction Log",
    };
    vec![
        if h.name.is_empty() { Value::Null } else { s(&h.name) },
        if h.description.is_empty() { Value::Null } else { s(&h.description) },
        Value::Int(i64::from(h.backup_type.code())),
        Value::Null,
        Value::Int(i64::from(h.compressed)),
        Value::Int(i64::from(h.position)),
        Value::Int(2),
        s(&h.user_name),
        s(&h.server_name),
        s(&h.database_name),
        Value::Int(1),
        Value::Decimal { value: i128::from(t.backup_size), scale: 0 },
        lsn(h.first_lsn),
        lsn(t.last_lsn),
        lsn(h.checkpoint_lsn),
        lsn(h.differential_base_lsn),
        datetime(h.start_unix_micros, state),
        datetime(t.finish_unix_micros, state),
        Value::Int(160),
        Value::Int(4608),
        s(&h.server_name),
        Value::Int(i64::from(t.has_bulk_logged_data)),
        Value::Bit(t.has_bulk_logged_data),
        Value::Bit(h.checksums),
        Value::Bit(t.finish_unix_micros == 0),
        Value::Bit(h.begins_log_chain),
        Value::Bit(h.copy_only),
        s(&h.recovery_model),
        if h.differential_base_lsn == 0 { Value::Null } else { lsn(h.differential_base_lsn) },
        if h.differential_base_guid == 0 { Value::Null } else { guid(h.differential_base_guid) },
        s(desc),
        guid(h.backup_set_guid),
        Value::Int(t.compressed_size as i64),
    ]
}

const HEADERONLY: &[(&str, SqlType)] = &[
    ("BackupName", SqlType::NVarChar(128)),
    ("BackupDescription", SqlType::NVarChar(255)),
    ("BackupType", SqlType::SmallInt),
    ("ExpirationDate", SqlType::DateTime),
    ("Compressed", SqlType::TinyInt),
    ("Position", SqlType::SmallInt),
    ("DeviceType", SqlType::TinyInt),
    ("UserName", SqlType::NVarChar(128)),
    ("ServerName", SqlType::NVarChar(128)),
    ("DatabaseName", SqlType::NVarChar(128)),
    ("DatabaseVersion", SqlType::Int),
    ("BackupSize", SqlType::Decimal { precision: 20, scale: 0 }),
    ("FirstLSN", SqlType::Decimal { precision: 25, scale: 0 }),
    ("LastLSN", SqlType::Decimal { precision: 25, scale: 0 }),
    ("CheckpointLSN", SqlType::Decimal { precision: 25, scale: 0 }),
    ("DatabaseBackupLSN", SqlType::Decimal { precision: 25, scale: 0 }),
    ("BackupStartDate", SqlType::DateTime),
    ("BackupFinishDate", SqlType::DateTime),
    ("CompatibilityLevel", SqlType::TinyInt),
    ("SoftwareVendorId", SqlType::Int),
    ("MachineName", SqlType::NVarChar(128)),
    ("Flags", SqlType::Int),
    ("HasBulkLoggedData", SqlType::Bit),
    ("HasBackupChecksums", SqlType::Bit),
    ("IsDamaged", SqlType::Bit),
    ("BeginsLogChain", SqlType::Bit),
    ("IsCopyOnly", SqlType::Bit),
    ("RecoveryModel", SqlType::NVarChar(60)),
    ("DifferentialBaseLSN", SqlType::Decimal { precision: 25, scale: 0 }),
    ("DifferentialBaseGUID", SqlType::UniqueIdentifier),
    ("BackupTypeDescription", SqlType::NVarChar(60)),
    ("BackupSetGUID", SqlType::UniqueIdentifier),
    ("CompressedBackupSize", SqlType::BigInt),
];

const FILELISTONLY: &[(&str, SqlType)] = &[
    ("LogicalName", SqlType::NVarChar(128)),
    ("PhysicalName", SqlType::NVarChar(260)),
    ("Type", SqlType::Char(1)),
    ("FileGroupName", SqlType::NVarChar(128)),
    ("Size", SqlType::Decimal { precision: 20, scale: 0 }),
    ("MaxSize", SqlType::Decimal { precision: 20, scale: 0 }),
    ("FileId", SqlType::BigInt),
    ("CreateLSN", SqlType::Decimal { precision: 25, scale: 0 }),
    ("DropLSN", SqlType::Decimal { precision: 25, scale: 0 }),
    ("BackupSizeInBytes", SqlType::BigInt),
    ("SourceBlockSize", SqlType::Int),
    ("FileGroupId", SqlType::Int),
    ("IsReadOnly", SqlType::Bit),
    ("IsPresent", SqlType::Bit),
];

const LABELONLY: &[(&str, SqlType)] = &[
    ("MediaName", SqlType::NVarChar(128)),
    ("MediaSetId", SqlType::UniqueIdentifier),
    ("FamilyCount", SqlType::Int),
    ("FamilySequenceNumber", SqlType::Int),
    ("MediaFamilyId", SqlType::UniqueIdentifier),
    ("MediaSequenceNumber", SqlType::Int),
    ("MediaLabelPresent", SqlType::TinyInt),
    ("MediaDescription", SqlType::NVarChar(255)),
    ("SoftwareName", SqlType::NVarChar(128)),
    ("SoftwareVendorId", SqlType::Int),
    ("MediaDate", SqlType::DateTime),
    ("MirrorCount", SqlType::Int),
    ("IsCompressed", SqlType::Bit),
];

fn result_set(sink: &mut dyn ResultSink, spec: &[(&str, SqlType)], rows: &[Vec<Value>]) {
    sink.columns(&columns(spec));
    for r in rows {
        sink.row(r);
    }
    sink.done(Some(rows.len() as u64), tessera_semantics::output::Command::Select);
}

/// The RESTORE family; returns the msdb history to record (none under trace flag 3001, or
/// for RESTORE VERIFYONLY / HEADERONLY and other statements that restore nothing).
#[allow(clippy::too_many_arguments)]
pub fn restore(
    shared: &Arc<Shared>,
    state: &mut SessionState,
    kind: tessera_syntax::ast::RestoreKind,
    database: Option<&str>,
    devices: Vec<PathBuf>,
    options: &[EvaluatedOption],
    sink: &mut dyn ResultSink,
) -> SqlResult<Option<String>> {
    use tessera_syntax::ast::RestoreKind as K;
    let verb = match kind {
        K::Database => "RESTORE DATABASE",
        K::Log => "RESTORE LOG",
        K::HeaderOnly => "RESTORE HEADERONLY",
        K::FileListOnly => "RESTORE FILELISTONLY",
        K::VerifyOnly => "RESTORE VERIFYONLY",
        K::LabelOnly => "RESTORE LABELONLY",
    };
    check_permission(shared, state, database.unwrap_or("master"), verb)?;
    not_in_transaction(state)?;
    let mut o = RestoreOptions { devices: devices.clone(), log: kind == K::Log, recovery: true, ..Default::default() };
    let mut standby = false;
    for opt in options {
        match opt.name.as_str() {
            "RECOVERY" => o.recovery = true,
            "NORECOVERY" => o.recovery = false,
            "STANDBY" => standby = true,
            "REPLACE" => o.replace = true,
            "FILE" => o.file = Some(number(&opt.value, "FILE")?),
            "STATS" => o.stats = Some(if opt.value.is_some() { number(&opt.value, "STATS")? } else { 10 }),
            "STOPAT" => o.stop_at = Some(stop_at(&opt.value, state)?),
            "BUFFERCOUNT" => o.buffer_count = Some(number(&opt.value, "BUFFERCOUNT")?),
            "MAXTRANSFERSIZE" => o.max_transfer_size = Some(number(&opt.value, "MAXTRANSFERSIZE")?),
            "CHECKSUM" => o.checksum = true,
            "MOVE" => o.moves.push((text(&opt.value, "MOVE")?, PathBuf::from(text(&opt.to, "MOVE")?))),
            "NO_CHECKSUM"
            | "NOREWIND"
            | "REWIND"
            | "NOUNLOAD"
            | "UNLOAD"
            | "STOP_ON_ERROR"
            | "CONTINUE_AFTER_ERROR"
            | "KEEP_REPLICATION"
            | "KEEP_CDC"
            | "RESTRICTED_USER"
            | "LOADHISTORY"
            | "BLOCKSIZE"
            | "MEDIANAME"
            | "MEDIAPASSWORD"
            | "PASSWORD" => {}
            other => return Err(msg::UNRECOGNIZED_OPTION.with(&[&other, &"RESTORE"]).with_severity(15)),
        }
    }
    if standby {
        return Err(to_sql(msg::RESTORE_STANDBY_UNSUPPORTED.err(), verb));
    }
    let position = o.file.unwrap_or(1);
    match kind {
        K::HeaderOnly => {
            let sets = tessera_backup::headers(&devices).map_err(|e| to_sql(e, verb))?;
            let rows: Vec<Vec<Value>> = sets.iter().map(|(h, t)| headeronly_row(h, t, state)).collect();
            result_set(sink, HEADERONLY, &rows);
            Ok(None)
        }
        K::FileListOnly => {
            let h = tessera_backup::file_list(&devices, position).map_err(|e| to_sql(e, verb))?;
            let rows: Vec<Vec<Value>> = h
                .files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    vec![
                        Value::Str(f.logical_name.as_str().into()),
                        Value::Str(f.physical_name.as_str().into()),
                        Value::Str(f.kind.to_string().into()),
                        if f.kind == 'D' { Value::Str("PRIMARY".into()) } else { Value::Null },
                        Value::Decimal { value: i128::from(f.size_bytes), scale: 0 },
                        Value::Decimal { value: 35_184_372_080_640, scale: 0 },
                        Value::Int(i as i64 + 1),
                        lsn(0),
                        lsn(0),
                        Value::Int(if f.kind == 'D' { i64::from(h.data_pages) * 8192 } else { 0 }),
                        Value::Int(512),
                        Value::Int(if f.kind == 'D' { 1 } else { 0 }),
                        Value::Bit(false),
                        Value::Bit(true),
                    ]
                })
                .collect();
            result_set(sink, FILELISTONLY, &rows);
            Ok(None)
        }
        K::LabelOnly => {
            let h = tessera_backup::media::read_media_header(&devices[0])
                .map_err(|e| to_sql(e, verb))?
                .ok_or_else(|| to_sql(tessera_backup::media::not_media(&devices[0]), verb))?;
            let row = vec![
                if h.media_name.is_empty() { Value::Null } else { Value::Str(h.media_name.as_str().into()) },
                guid(h.media_set_guid),
                Value::Int(i64::from(h.family_count)),
                Value::Int(i64::from(h.family_sequence)),
                guid(h.media_set_guid ^ u128::from(h.family_sequence)),
                Value::Int(1),
                Value::Int(1),
                if h.media_description.is_empty() {
                    Value::Null
                } else {
                    Value::Str(h.media_description.as_str().into())
                },
                Value::Str("tessera".into()),
                Value::Int(4608),
                datetime(h.created_unix_micros, state),
                Value::Int(1),
                Value::Bit(false),
            ];
            result_set(sink, LABELONLY, &[row]);
            Ok(None)
        }
        K::VerifyOnly => {
            let mut notify = notice_sink(sink);
            tessera_backup::verify(&devices, position, &mut notify).map_err(|e| to_sql(e, verb))?;
            Ok(None)
        }
        K::Database | K::Log => {
            let name = database.expect("RESTORE DATABASE and LOG name a database");
            for system in ["master", "msdb", "tempdb", "model"] {
                if name.eq_ignore_ascii_case(system) {
                    return Err(to_sql(msg::RESTORE_SYSTEM_DATABASE.with(&[&system]), verb));
                }
            }
            if state.database.eq_ignore_ascii_case(name) {
                return Err(to_sql(msg::RESTORE_DATABASE_IN_USE.with(&[&name]), verb));
            }
            shared.forget(name);
            if let Some(id) = shared.engine.database_id(name) {
                shared.plans.forget_database(name, id);
            }
            if devices.is_empty() {
                if !o.recovery {
                    return Ok(None);
                }
                let mut notify = notice_sink(sink);
                tessera_backup::recover_only(&shared.engine, name, &mut notify).map_err(|e| to_sql(e, verb))?;
                return Ok(None);
            }
            let report = {
                let mut notify = notice_sink(sink);
                tessera_backup::restore(&shared.engine, name, &o, &mut notify).map_err(|e| to_sql(e, verb))?
            };
            shared.forget(name);
            trace(shared, state, sink, &report.buffers.trace_lines());
            if !state.has_trace_flag(shared, 3226) {
                shared.write_errorlog(
                    state.spid,
                    &format!(
                        "{} was restored: Database: {name}, creation date(time): (n/a), first LSN: {}, last LSN: {}, number of dump devices: {}, device information: (FILE={position}, TYPE=DISK: {{{}}}).",
                        if kind == K::Log { "Log" } else { "Database" },
                        tessera_log::Lsn::from_raw(report.header.first_lsn),
                        tessera_log::Lsn::from_raw(report.trailer.last_lsn),
                        devices.len(),
                        devices.iter().map(|d| format!("'{}'", d.display())).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
            let history = (!state.has_trace_flag(shared, 3001))
                .then(|| restore_history(name, &state.login, &report, o.replace, o.stop_at, devices.len()));
            Ok(history)
        }
    }
}
