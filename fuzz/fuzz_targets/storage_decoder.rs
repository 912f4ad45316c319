//! Bytes read back from disk into every decoder the engine runs on them: log records and
//! their bodies (checkpoints, page operations, bulk-load notes), a log segment's frames,
//! stored rows (under a schema taken from the input), index keys (under column types and
//! directions taken from the input), page images (page checksum and page id, slotted-page
//! structure, then the records of a page that passes), backup media (chunk headers, chunks,
//! the JSON media and set headers and trailers, a whole stripe file through the set listing
//! RESTORE HEADERONLY uses) and the catalog's JSON object records (with the catalog built
//! from them, and the type names they hold). Any input gives a value or an error — never a
//! panic, a hang or an unbounded allocation.
//!
//! The first byte selects the decoder (its low seven bits, modulo 13). Its high bit asks
//! the harness to seal what a checksum protects (page checksum, log frame and chunk CRCs,
//! JSON block framing; a stripe file is then built as BACKUP writes one), so that the
//! fuzzer reaches the parsing behind the checksums as well as the checks themselves.
//! `storage_decoder.dict` beside this crate lists the media magics and the JSON keys.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use tessera_access::key::KeyReader;
use tessera_access::row::{self, ColumnType, RowSchema, MAX};
use tessera_access::{btree, ops, slotted};
use tessera_backup::media::{self, ChunkHeader, ChunkKind, CHUNK_HEADER_SIZE, CHUNK_MAGIC, MEDIA_MAGIC, SET_MAGIC};
use tessera_backup::{BackupType, MediaHeader, SetHeader, Trailer};
use tessera_buffer::page::{self, PAGE_SIZE};
use tessera_log::recovery::Checkpoint;
use tessera_log::{LogRecord, RecordKind};
use tessera_semantics::catalog::{self, Catalog, Module, ModuleKind, Object};

/// Takes `n` bytes from the front of `data` (fewer at its end).
fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (head, tail) = data.split_at(n.min(data.len()));
    *data = tail;
    head
}

fn byte(data: &mut &[u8]) -> u8 {
    take(data, 1).first().copied().unwrap_or(0)
}

fn u16_le(data: &mut &[u8]) -> u16 {
    u16::from(byte(data)) | u16::from(byte(data)) << 8
}

fn u32_le(data: &mut &[u8]) -> u32 {
    u32::from(u16_le(data)) | u32::from(u16_le(data)) << 16
}

/// A column type, valid or not (RowSchema::new and the key reader see both).
fn column_type(data: &mut &[u8]) -> ColumnType {
    use ColumnType as T;
    let tag = byte(data);
    // Lengths: mostly small, sometimes anything (MAX included).
    let len = |data: &mut &[u8]| match byte(data) {
        0xFF => MAX,
        0xFE => u16_le(data),
        n => u16::from(n),
    };
    match tag % 23 {
        0 => T::Bit,
        1 => T::TinyInt,
        2 => T::SmallInt,
        3 => T::Int,
        4 => T::BigInt,
        5 => T::Real,
        6 => T::Float,
        7 => T::Decimal { precision: byte(data), scale: byte(data) },
        8 => T::Money,
        9 => T::SmallMoney,
        10 => T::Char(len(data)),
        11 => T::VarChar(len(data)),
        12 => T::NChar(len(data)),
        13 => T::NVarChar(len(data)),
        14 => T::Binary(len(data)),
        15 => T::VarBinary(len(data)),
        16 => T::Date,
        17 => T::Time { scale: byte(data) },
        18 => T::DateTime,
        19 => T::DateTime2 { scale: byte(data) },
        20 => T::SmallDateTime,
        21 => T::DateTimeOffset { scale: byte(data) },
        _ => T::UniqueIdentifier,
    }
}

/// A log record and what its body holds for its kind.
fn log_record(bytes: &[u8]) {
    let Ok(rec) = LogRecord::decode(bytes) else { return };
    let _ = (rec.commit_time(), rec.prepared_decision());
    match rec.kind {
        RecordKind::Checkpoint => {
            let _ = Checkpoint::decode(&rec.body);
        }
        RecordKind::Update | RecordKind::Compensation | RecordKind::System => {
            let _ = ops::decode(&rec.body);
            let _ = ops::bulk_note_pages(&rec.body);
        }
        _ => {}
    }
}

/// A stored row under a schema of up to 31 columns read from the front of the input.
fn stored_row(mut data: &[u8]) {
    let n = byte(&mut data) % 32;
    let columns: Vec<ColumnType> = (0..n).map(|_| column_type(&mut data)).collect();
    let Ok(schema) = RowSchema::new(columns) else { return };
    let _ = row::has_off_row(data);
    let decoded = row::decode(&schema, data);
    if let Ok(values) = &decoded {
        // What the whole-row check accepts, the one-column readers read the same.
        assert_eq!(values.len(), schema.len());
        for (i, v) in values.iter().enumerate() {
            assert_eq!(row::column(&schema, data, i).ok().as_ref(), Some(v), "column {i} reads otherwise alone");
            assert_eq!(row::is_null(&schema, data, i).ok(), Some(v.is_null()), "column {i}'s NULL bit");
        }
    }
    let all: Vec<usize> = (0..schema.len() + 1).collect();
    let mut spans = Vec::new();
    let _ = row::locate(&schema, data, &all, &mut spans);
    let _ = row::locate(&schema, data, &all[..schema.len()], &mut spans);
    for i in 0..=schema.len() {
        let _ = row::column(&schema, data, i);
        let _ = row::is_null(&schema, data, i);
    }
}

/// An index key read back under up to 15 column types and directions from the input.
fn index_key(mut data: &[u8]) {
    let n = byte(&mut data) % 16;
    let columns: Vec<(ColumnType, bool)> = (0..n)
        .map(|_| {
            let desc = byte(&mut data) & 1 == 1;
            (column_type(&mut data), desc)
        })
        .collect();
    let mut reader = KeyReader::new(data);
    for (ty, desc) in &columns {
        let _ = reader.is_null(*desc);
        if reader.read_value(ty, *desc).is_err() {
            break;
        }
    }
    let _ = (reader.at_end(), reader.position(), reader.remaining());
    // The typed readers the layers above use on their own keys.
    let mut reader = KeyReader::new(data);
    for (i, (_, desc)) in columns.iter().enumerate() {
        let ok = match i % 8 {
            0 => reader.read_bytes(*desc).is_ok(),
            1 => reader.read_utf16(*desc).is_ok(),
            2 => reader.read_i64(*desc).is_ok(),
            3 => reader.read_fixed(i, *desc).is_ok(),
            4 => reader.read_null(*desc).is_ok(),
            5 => reader.read_bool(*desc).is_ok(),
            6 => reader.read_f64(*desc).is_ok(),
            _ => reader.read_i128(*desc).is_ok(),
        };
        if !ok {
            break;
        }
    }
}

/// A page image built from the input, zero-padded: the checks a page read from disk goes
/// through, then its records when its structure is sound. A u16 says how many bytes go at
/// the start of the page (header, slot directory); the rest go at its end, where the
/// record heap is, so that short inputs reach both.
fn page_image(mut data: &[u8], seal: bool) {
    let mut p = vec![0u8; PAGE_SIZE];
    let split = usize::from(u16_le(&mut data)) % (PAGE_SIZE + 1);
    let head = take(&mut data, split);
    p[..head.len()].copy_from_slice(head);
    let tail = &data[..data.len().min(PAGE_SIZE - head.len())];
    p[PAGE_SIZE - tail.len()..].copy_from_slice(tail);
    if seal {
        page::seal(&mut p);
    }
    let _ = page::verify(&p, page::page_no(&p));
    let _ = (page::page_type(&p), page::lsn(&p), page::prev(&p), page::next(&p), page::aux(&p));
    if slotted::check(&p).is_err() {
        return;
    }
    let _ = (slotted::free_space(&p), slotted::used_bytes(&p), slotted::contiguous_free(&p));
    for rec in slotted::records(&p) {
        if btree::is_leaf(&p) {
            if let Some(key) = btree::leaf_key_checked(rec) {
                let mut reader = KeyReader::new(key);
                let _ = reader.read_bytes(false);
            }
        }
    }
    // Every record is a row of a one-column varbinary(max) table, as far as the bytes go.
    if let Ok(schema) = RowSchema::new(vec![ColumnType::VarBinary(MAX)]) {
        for rec in slotted::records(&p) {
            let _ = row::decode(&schema, rec);
        }
    }
}

/// A log segment's frames: raw (the CRCs as the input has them), or sealed: the input cut
/// into payloads (u16 length, bytes) framed as the log writes them.
fn log_frames(mut data: &[u8], seal: bool) {
    let seq = u32_le(&mut data);
    let framed;
    let bytes = if seal {
        let mut out = Vec::new();
        while !data.is_empty() {
            let len = usize::from(u16_le(&mut data)) % 512;
            let payload = take(&mut data, len);
            if !payload.is_empty() {
                tessera_log::encode_frame(seq, payload, &mut out);
            }
        }
        framed = out;
        &framed[..]
    } else {
        data
    };
    let mut end = 0;
    for (at, payload) in tessera_log::split_frames(seq, bytes) {
        assert!(at >= end && at + payload.len() <= bytes.len(), "frame out of order or out of bounds");
        end = at + payload.len();
        log_record(payload);
    }
}

/// A chunk header (48 bytes), sealed or not.
fn chunk_header(data: &[u8], seal: bool) {
    let mut h = [0u8; CHUNK_HEADER_SIZE];
    let n = data.len().min(CHUNK_HEADER_SIZE);
    h[..n].copy_from_slice(&data[..n]);
    if seal {
        h[0..4].copy_from_slice(CHUNK_MAGIC);
        let crc = crc32c::crc32c(&h[0..44]);
        h[44..48].copy_from_slice(&crc.to_le_bytes());
    }
    if let Some(c) = ChunkHeader::decode(&h) {
        assert!(c.stored_len as usize <= media::MAX_CHUNK && c.raw_len as usize <= media::MAX_CHUNK);
        assert_eq!(ChunkHeader::decode(&c.encode()), Some(c), "a decoded chunk header encodes to itself");
    }
}

/// A sequence of chunks read as a restore reads them; sealed: each chunk's header gets
/// the magic, a stored length that fits what follows, and both CRCs.
fn chunks(data: &[u8], seal: bool) {
    let bytes;
    let stream = if seal {
        let mut out = Vec::new();
        let mut rest = data;
        while rest.len() >= CHUNK_HEADER_SIZE {
            let mut h = [0u8; CHUNK_HEADER_SIZE];
            h.copy_from_slice(take(&mut rest, CHUNK_HEADER_SIZE));
            let len = (u32::from_le_bytes(h[20..24].try_into().unwrap()) as usize % 1024).min(rest.len());
            let body = take(&mut rest, len);
            h[0..4].copy_from_slice(CHUNK_MAGIC);
            h[20..24].copy_from_slice(&(len as u32).to_le_bytes());
            h[24..28].copy_from_slice(&crc32c::crc32c(body).to_le_bytes());
            let crc = crc32c::crc32c(&h[0..44]);
            h[44..48].copy_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&h);
            out.extend_from_slice(body);
        }
        out.extend_from_slice(rest);
        bytes = out;
        &bytes[..]
    } else {
        data
    };
    let path = std::path::Path::new("fuzz-stripe.bak");
    let mut r = stream;
    let mut buf = Vec::new();
    while let Ok(Some((header, data))) = media::read_chunk(&mut r, path, std::mem::take(&mut buf)) {
        assert_eq!(data.len(), header.stored_len as usize);
        if header.kind == ChunkKind::Trailer {
            let _ = serde_json::from_slice::<Trailer>(&data);
        }
        buf = data;
    }
}

/// A JSON block (media header, set header: raw, or sealed: the input framed with the
/// magic, its length and its CRC), or a trailer chunk's JSON.
fn json_block(mut data: &[u8], seal: bool) {
    let which = byte(&mut data) % 3;
    if which == 2 {
        let _ = serde_json::from_slice::<Trailer>(data);
        return;
    }
    let magic = if which == 0 { MEDIA_MAGIC } else { SET_MAGIC };
    let framed;
    let mut r = if seal {
        let mut out = Vec::with_capacity(16 + data.len());
        out.extend_from_slice(magic);
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
        out.extend_from_slice(data);
        framed = out;
        &framed[..]
    } else {
        data
    };
    if which == 0 {
        let _ = media::read_json_block::<MediaHeader>(&mut r, magic);
    } else {
        let _ = media::read_json_block::<SetHeader>(&mut r, magic);
    }
}

/// A whole stripe file, listed as RESTORE HEADERONLY and RESTORE list it (backwards
/// through the footers, else forwards through the chunks): raw, or sealed: built from the
/// input as BACKUP writes one (see `stripe_image`), then damaged where the input says.
fn stripe_file(data: &[u8], seal: bool) {
    let file = if seal { stripe_image(data) } else { data.to_vec() };
    let path = std::env::temp_dir().join(format!("tessera-fuzz-stripe-{}.bak", std::process::id()));
    std::fs::write(&path, &file).expect("write the stripe file");
    let _ = media::read_media_header(&path);
    let _ = media::list_sets(&path);
    let _ = std::fs::remove_file(&path);
}

/// A stripe file: a media header, then sets while the input lasts. Per set, a flags byte
/// (bit 0: a trailer chunk, bit 1: a footer after it, bit 2: chunks of another set) and a
/// set id, then up to three chunks (kind, length, bytes). What input is left damages the
/// image: (offset u16, xor byte) pairs.
fn stripe_image(mut data: &[u8]) -> Vec<u8> {
    let mut file = media::encode_media_header(&MediaHeader {
        media_set_guid: 1,
        family_count: 1,
        family_sequence: 1,
        media_name: String::new(),
        media_description: String::new(),
        created_unix_micros: 0,
    });
    let chunk = |file: &mut Vec<u8>, kind: ChunkKind, seq: u64, set_guid: u128, body: &[u8]| {
        let len = body.len() as u32;
        let h = ChunkHeader {
            kind,
            compressed: false,
            seq,
            raw_len: len,
            stored_len: len,
            data_crc: crc32c::crc32c(body),
            set_guid,
        };
        file.extend_from_slice(&h.encode());
        file.extend_from_slice(body);
    };
    let mut position = 0;
    while data.len() >= 8 && position < 4 {
        position += 1;
        let flags = byte(&mut data);
        let guid = u128::from(u32_le(&mut data));
        let start = file.len() as u64;
        let header = SetHeader {
            backup_set_guid: guid,
            position,
            backup_type: BackupType::Database,
            name: String::new(),
            description: String::new(),
            database_name: "db".into(),
            server_name: String::new(),
            user_name: String::new(),
            recovery_model: "FULL".into(),
            first_lsn: 0,
            checkpoint_lsn: 0,
            differential_base_lsn: 0,
            differential_base_guid: 0,
            begins_log_chain: false,
            copy_only: false,
            compressed: false,
            checksums: false,
            data_pages: 0,
            files: Vec::new(),
            family_count: 1,
            family_sequence: 1,
            max_transfer_size: 65536,
            block_size: 512,
            start_unix_micros: 0,
        };
        file.extend_from_slice(&media::encode_json_block(SET_MAGIC, &header));
        let chunk_guid = if flags & 4 != 0 { guid + 1 } else { guid };
        let chunks = byte(&mut data) % 4;
        for seq in 0..u64::from(chunks) {
            let kind = if byte(&mut data) & 1 == 0 { ChunkKind::Pages } else { ChunkKind::Log };
            let len = usize::from(byte(&mut data));
            chunk(&mut file, kind, seq, chunk_guid, take(&mut data, len));
        }
        if flags & 1 != 0 {
            let trailer_at = file.len() as u64;
            let trailer = Trailer {
                chunks_total: u64::from(chunks) + 1,
                chunks_in_family: u64::from(chunks) + 1,
                ..Trailer::default()
            };
            let body = serde_json::to_vec(&trailer).expect("a trailer serialises");
            chunk(&mut file, ChunkKind::Trailer, u64::from(chunks), chunk_guid, &body);
            if flags & 2 != 0 {
                file.extend_from_slice(&media::encode_footer(start, trailer_at));
            }
        }
    }
    while data.len() >= 3 {
        let at = usize::from(u16_le(&mut data));
        let x = byte(&mut data);
        let n = file.len();
        file[at % n] ^= x;
    }
    file
}

/// Catalog object records as the catalog loads them: JSON objects one after the other,
/// then the catalog built from those that parse.
fn catalog_json(data: &[u8]) {
    let objects: Vec<Object> =
        serde_json::Deserializer::from_slice(data).into_iter::<Object>().map_while(Result::ok).collect();
    let _ = Catalog::from_objects(1, objects);
    let _ = catalog::parse_type_text(&String::from_utf8_lossy(data));
}

/// Catalog records whose fields come from the input (ids, trigger parents, names), as
/// they come back from their JSON: what `Catalog::from_objects` does with values a
/// damaged catalog may hold.
fn catalog_records(mut data: &[u8]) {
    let kinds = [
        ModuleKind::View,
        ModuleKind::Procedure,
        ModuleKind::ScalarFunction,
        ModuleKind::TableFunction,
        ModuleKind::Trigger,
        ModuleKind::MultiStatementFunction,
        ModuleKind::Synonym,
        ModuleKind::TableType,
    ];
    let mut objects = Vec::new();
    while data.len() >= 6 && objects.len() < 16 {
        let flags = byte(&mut data);
        let id = u32_le(&mut data) as i32;
        let parent = (flags & 0x10 != 0).then(|| u32_le(&mut data) as i32);
        let name_len = usize::from(byte(&mut data) % 8);
        let name = String::from_utf8_lossy(take(&mut data, name_len)).into_owned();
        let module = Module {
            id,
            schema: if flags & 0x20 != 0 { "dbo".into() } else { "s".into() },
            name,
            kind: kinds[usize::from(flags & 7)],
            text: String::new(),
            created: 0,
            modified: 0,
            altered_by: None,
            properties: Vec::new(),
            parent,
            disabled: flags & 0x40 != 0,
            instead_of: flags & 0x80 != 0,
        };
        let json = serde_json::to_vec(&Object::Module(Arc::new(module))).expect("a module serialises");
        objects.push(serde_json::from_slice::<Object>(&json).expect("a module's JSON reads back"));
    }
    let _ = Catalog::from_objects(1, objects);
}

fuzz_target!(|input: &[u8]| {
    let Some((&selector, data)) = input.split_first() else { return };
    let seal = selector & 0x80 != 0;
    match (selector & 0x7F) % 13 {
        0 => log_record(data),
        1 => {
            let _ = Checkpoint::decode(data);
        }
        2 => {
            let _ = ops::decode(data);
            let _ = ops::bulk_note_pages(data);
        }
        3 => log_frames(data, seal),
        4 => stored_row(data),
        5 => index_key(data),
        6 => page_image(data, seal),
        7 => chunk_header(data, seal),
        8 => chunks(data, seal),
        9 => json_block(data, seal),
        10 => stripe_file(data, seal),
        11 => catalog_json(data),
        _ => catalog_records(data),
    }
});
