//! Database ids as SQL Server numbers them: its system databases have fixed ids (master
//! 1, tempdb 2, model 3, msdb 4) and user databases start at 5, so that tools listing user
//! databases as `database_id > 4` find every one. tessera has no `model` but keeps its
//! id free. An instance made before this numbering keeps the ids it gave (its msdb may
//! be 3, its first user database 4); new databases there still start past the highest.

use super::Inner;

/// The system databases' fixed ids.
const SYSTEM_DATABASE_IDS: [(&str, u32); 4] = [("master", 1), ("tempdb", 2), ("model", 3), ("msdb", 4)];

/// The first id a user database gets.
const FIRST_USER_DATABASE_ID: u32 = 5;

impl Inner {
    /// The id a new database named `name` gets: its system id if it is a system database
    /// and no database has that id yet, else the next free id past the system ones.
    pub(super) fn new_id(&self, name: &str) -> u32 {
        let system = SYSTEM_DATABASE_IDS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, id)| id);
        match system {
            Some(id) if self.slots.by_id(id).is_none() => id,
            _ => self.next_id.max(FIRST_USER_DATABASE_ID),
        }
    }

    /// `id` was given to a database: later ones get higher ids.
    pub(super) fn id_taken(&mut self, id: u32) {
        self.next_id = self.next_id.max(id + 1);
    }
}
