//! Page accounts (tempdb's per-database quota): an account holds exactly the pages of the
//! trees charged to it through splits, merges, rollbacks and bulk loads, and gets them all
//! back when the trees are dropped.

use std::sync::Arc;

use tessera_access::btree;
use tessera_access::space::{DataConfig, Space};
use tessera_access::{Durability, PageAccount};
use tessera_buffer::page::PageNo;
use tessera_buffer::{BufferPool, PoolConfig};
use tessera_log::{LogConfig, Lsn, Wal};

fn key(i: u32) -> Vec<u8> {
    let mut k = format!("{i:010}").into_bytes();
    k.resize(100, b'k');
    k
}

fn pages(space: &Space, root: PageNo) -> u64 {
    btree::tree_pages(space, root).unwrap().len() as u64
}

#[test]
fn an_account_holds_exactly_its_trees_pages_until_they_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let pool =
        BufferPool::new(PoolConfig { max_bytes: 64 << 20, background_writer: false, ..PoolConfig::default() }).unwrap();
    let wal = Wal::create(&dir.path().join("t.ldf"), "t", LogConfig::default()).unwrap();
    let space = Space::create(&dir.path().join("t.mdf"), pool, wal, &DataConfig::default()).unwrap();
    let account = Arc::new(PageAccount::default());
    let mut setup = space.begin(Durability::Full);
    let (charged, loaded, free) = (
        space.create_tree(&mut setup).unwrap(),
        space.create_tree(&mut setup).unwrap(),
        space.create_tree(&mut setup).unwrap(),
    );
    space.commit(setup).unwrap();

    // Rows before the tree is charged are counted when it is.
    let mut txn = space.begin(Durability::Full);
    for i in 0..300 {
        space.insert(&mut txn, charged, &key(i), &[1u8; 200]).unwrap();
    }
    space.commit(txn).unwrap();
    space.charge_tree_to(charged, account.clone()).unwrap();
    space.charge_tree_to(loaded, account.clone()).unwrap();
    assert_eq!(account.pages(), pages(&space, charged) + 1);

    // Splits, an uncharged tree beside it, a rollback, deletes (merges).
    let mut txn = space.begin(Durability::Full);
    for i in 300..3000 {
        space.insert(&mut txn, charged, &key(i), &[2u8; 200]).unwrap();
        space.insert(&mut txn, free, &key(i), &[2u8; 200]).unwrap();
    }
    space.commit(txn).unwrap();
    let mut txn = space.begin(Durability::Full);
    for i in 3000..4000 {
        space.insert(&mut txn, charged, &key(i), &[3u8; 200]).unwrap();
    }
    space.rollback(txn).unwrap();
    assert_eq!(account.pages(), pages(&space, charged) + 1);
    let mut txn = space.begin(Durability::Full);
    for i in 0..2500 {
        assert!(space.delete(&mut txn, charged, &key(i)).unwrap());
    }
    space.commit(txn).unwrap();
    assert_eq!(account.pages(), pages(&space, charged) + 1, "after merges");

    // A bulk load, then one rolled back (which empties its tree).
    let mut txn = space.begin(Durability::Full);
    let rows: Vec<_> = (0..2000).map(|i| (key(i), vec![4u8; 200])).collect();
    space.bulk_load(&mut txn, loaded, rows.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap().unwrap();
    space.commit(txn).unwrap();
    let held = pages(&space, charged) + pages(&space, loaded);
    assert_eq!(account.pages(), held, "after a bulk load");
    assert!(held > 50, "{held} pages");
    let mut txn = space.begin(Durability::Full);
    let again = space.create_tree(&mut txn).unwrap();
    space.commit(txn).unwrap();
    space.charge_tree_to(again, account.clone()).unwrap();
    let mut txn = space.begin(Durability::Full);
    space.bulk_load(&mut txn, again, rows.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap().unwrap();
    space.rollback(txn).unwrap();
    assert_eq!(pages(&space, again), 1, "the rolled-back load left an empty root");
    assert_eq!(account.pages(), held + 1, "the rollback emptied the tree and settled its account");
    space.free_tree(again, Lsn::NONE).unwrap();
    assert_eq!(account.pages(), held);

    space.free_tree(charged, Lsn::NONE).unwrap();
    assert_eq!(account.pages(), pages(&space, loaded));
    space.free_tree(loaded, Lsn::NONE).unwrap();
    assert_eq!(account.pages(), 0, "every page given back");
    // A new tree on a freed root page is not charged to the old tree's account.
    let mut txn = space.begin(Durability::Full);
    let reused = space.create_tree(&mut txn).unwrap();
    space.commit(txn).unwrap();
    assert!([charged, loaded, again].contains(&reused), "a freed root page serves again, not {reused}");
    for i in 0..500 {
        let mut txn = space.begin(Durability::Full);
        space.insert(&mut txn, reused, &key(i), &[5u8; 200]).unwrap();
        space.commit(txn).unwrap();
    }
    assert_eq!(account.pages(), 0, "a new tree on a freed root is not charged");
    assert!(pages(&space, free) > 50, "the uncharged tree is untouched");
}
