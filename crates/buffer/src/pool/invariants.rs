//! The pool's structural invariants as one callable checker (README, "Invariants"): the
//! slot table and the registry agree, every radix belongs to one file or is a spare,
//! every mapped frame is Valid or Loading and mapped once, the resident and dirty
//! counters add up, the free list holds Free frames below the limit and has no cycle.
//! The pool's own tests run it after every scenario; the engine's model and crash tests
//! through `BufferPool::check_invariants`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::frame::{Kind, State, DIRTY, NIL};
use super::table::{key_file, key_page};
use super::Inner;

/// How long a quiescent check waits for read-ahead and the background writer.
const BACKGROUND_WAIT: Duration = Duration::from_secs(30);

impl Inner {
    /// See [`BufferPool::check_invariants`].
    pub(crate) fn check_invariants(&self, quiescent: bool) {
        // Holding every shard mutex (in order; only this checker takes more than one)
        // freezes every translation. A quiescent check also waits for the pool's own
        // threads: a read-ahead worker or the background writer holds a pin while it
        // reads or writes a frame, and a pin they hold is not a leak. Neither can take a
        // new pin while the shard mutexes are held, so idle then stays idle.
        let deadline = Instant::now() + BACKGROUND_WAIT;
        let _shards = loop {
            let shards: Vec<_> = self.shards.iter().map(|s| s.0.lock()).collect();
            if !quiescent || (self.read_ahead.is_idle() && !self.is_writing()) {
                break shards;
            }
            drop(shards);
            assert!(Instant::now() < deadline, "the pool's background threads did not go idle");
            std::thread::sleep(Duration::from_millis(1));
        };
        let hwm = self.hwm.load(Ordering::Acquire);
        let limit = self.limit.load(Ordering::Acquire);
        assert!(hwm <= self.initialized.load(Ordering::Acquire));
        assert!(limit <= self.reserve);
        let files = self.files.read();
        // The slot table: every registered file, and nothing else, in its own slot.
        let table = self.slot_table();
        assert!(std::ptr::eq(table, files.table()), "Inner::slots is not the current table");
        assert!(files.map.len() * 2 <= table.len(), "slot table over half full");
        assert_eq!(table.occupied().len(), files.map.len(), "slot table and registry disagree");
        for (&id, e) in files.map.iter() {
            assert_eq!(e.id.0, id);
            assert!(!e.closed.load(Ordering::Relaxed), "registered file {id} is closed");
            let r = table.radix(id).unwrap_or_else(|| panic!("file {id} missing from the slot table"));
            assert!(std::ptr::eq(r, e.radix.get()), "file {id}: slot and registry radix differ");
        }
        // Every radix is in use by exactly one file or spare, and spares are empty.
        assert_eq!(files.map.len() + files.spare.len(), files.radixes.len(), "radix accounting");
        for r in files.spare.iter() {
            assert!(r.get().resident().is_empty(), "spare radix not empty");
            assert!(files.map.values().all(|e| e.radix != *r), "spare radix in use");
        }
        let mut mapped = vec![false; hwm];
        let mut resident = 0u64;
        for (&id, e) in files.map.iter() {
            let own = e.radix.get().resident();
            assert_eq!(own.len(), e.quota.resident_pages.load(Ordering::Relaxed), "file {id}: resident counter");
            for (no, i) in own {
                assert!((i as usize) < hwm, "mapped frame {i} beyond hwm {hwm}");
                let f = self.frame(i);
                let k = f.key.load(Ordering::Relaxed);
                assert_eq!((key_file(k), key_page(k)), (id, no), "page table and frame {i} disagree");
                let kind = State(f.state.load(Ordering::Relaxed)).kind();
                assert!(matches!(kind, Kind::Valid | Kind::Loading), "mapped frame {i} is {kind:?}");
                assert!(!mapped[i as usize], "frame {i} mapped twice");
                mapped[i as usize] = true;
                resident += 1;
            }
        }
        assert_eq!(resident, self.resident.load(Ordering::Relaxed), "resident counter");
        let mut dirty = 0;
        for (i, &is_mapped) in mapped.iter().enumerate() {
            let f = self.frame(i as u32);
            let s = State(f.state.load(Ordering::Relaxed));
            if quiescent {
                let k = f.key.load(Ordering::Relaxed);
                assert_eq!(
                    s.pins(),
                    0,
                    "frame {i} (file {}, page {}, {:?}) still pinned",
                    key_file(k),
                    key_page(k),
                    s.kind()
                );
                assert!(matches!(s.kind(), Kind::Free | Kind::Valid), "frame {i} is {:?}", s.kind());
            }
            if s.kind() == Kind::Valid {
                assert!(is_mapped, "valid frame {i} not in the page table");
            }
            if f.dirty.load(Ordering::Relaxed) & DIRTY != 0 {
                dirty += 1;
                assert!(is_mapped || s.kind() == Kind::Orphan, "dirty frame {i} is {:?}", s.kind());
            }
        }
        if quiescent {
            assert_eq!(dirty, self.dirty_pages.load(Ordering::Relaxed), "dirty counter");
        }
        let fl = self.free.lock();
        let (mut cur, mut n) = (fl.head, 0);
        while cur != NIL {
            assert!((cur as usize) < limit.min(hwm), "free frame {cur} beyond limit/hwm");
            assert_eq!(State(self.frame(cur).state.load(Ordering::Relaxed)).kind(), Kind::Free);
            assert!(!mapped[cur as usize]);
            n += 1;
            assert!(n <= hwm, "free list cycle");
            cur = self.frame(cur).next_free.load(Ordering::Relaxed);
        }
        assert_eq!(n, fl.len, "free list length");
    }
}
