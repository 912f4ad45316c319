//! Client bytes into every decoder the server runs on them: packet framing (whole
//! messages, with limits), PRELOGIN, LOGIN7, SQL batch, RPC, transaction manager requests,
//! BULK_LOAD messages, and the T-SQL parser that every batch's text goes through (INSERT
//! BULK announcements included). Any input must give a value or an error —
//! never a panic, a hang or an allocation beyond the limits.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_server::packet::{self, Limits};
use tessera_server::tokens::Version;
use tessera_server::{bulk, login7, prelogin, request};

fuzz_target!(|input: &[u8]| {
    let Some((&selector, data)) = input.split_first() else { return };
    let version = if selector & 0x80 != 0 { Version::V7_1 } else { Version::V7_4 };
    match selector & 0x07 {
        0 => {
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
            let limits = Limits { max_packet: packet::MAX_PACKET_SIZE + 1, max_message: 1 << 20 };
            let mut reader = data;
            runtime.block_on(async { while let Ok(Some(_)) = packet::read_message(&mut reader, &limits).await {} });
        }
        1 => {
            let _ = prelogin::parse(data);
        }
        2 => {
            let _ = login7::parse(data);
        }
        3 => {
            let _ = request::decode_batch(data, version);
        }
        4 => {
            let _ = request::decode_rpc(data, version);
        }
        5 => {
            let _ = request::decode_tm(data, version);
        }
        6 => {
            let _ = bulk::decode(data, version);
        }
        _ => {
            let _ = tessera_syntax::parser::parse_batch(&String::from_utf8_lossy(data));
        }
    }
});
