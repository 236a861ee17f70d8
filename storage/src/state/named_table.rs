//! Records kept by name beyond any hold: election records, the last fire
//! claimed per schedule, and read-write lock records (generation, the
//! writer that has not released, intents). Bounded cluster-wide by
//! [`MAX_NAMED_RECORDS`] and per account by the lease quota.

use std::collections::{BTreeMap, BTreeSet};

use super::lease_table::check_quota;
use super::records::{Kept, NamedRecords, ReadWriteRecord};
use crate::account::Account;
use crate::command::ElectionRecord;
use crate::command::{CommandError, LeaseId};
use crate::limits::{Quota, Quotas, MAX_NAMED_RECORDS};

/// Every named record, with what is derived from them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct NamedTable {
    elections: BTreeMap<String, Kept<ElectionRecord>>,
    schedules: BTreeMap<String, Kept<u64>>,
    read_write: BTreeMap<String, Kept<ReadWriteRecord>>,
    /// Derived: records per account.
    per_account: BTreeMap<Account, usize>,
    /// Derived: the read-write lock each intent lease waits on.
    intent_leases: BTreeMap<LeaseId, String>,
}

impl NamedTable {
    /// The table holding `records`.
    pub(super) fn from_records(records: NamedRecords) -> Self {
        let mut table = Self {
            elections: records.elections.into_iter().collect(),
            schedules: records.schedules.into_iter().collect(),
            read_write: records.read_write.into_iter().collect(),
            ..Self::default()
        };
        let accounts: Vec<Option<Account>> = table
            .elections
            .values()
            .map(|k| k.account.clone())
            .chain(table.schedules.values().map(|k| k.account.clone()))
            .chain(table.read_write.values().map(|k| k.account.clone()))
            .collect();
        for account in accounts.into_iter().flatten() {
            *table.per_account.entry(account).or_default() += 1;
        }
        for (name, kept) in &table.read_write {
            for intent in &kept.record.intents {
                table.intent_leases.insert(intent.lease, name.clone());
            }
        }
        table
    }

    /// The records, for a snapshot.
    pub(super) fn to_records(&self) -> NamedRecords {
        NamedRecords {
            elections: cloned(&self.elections),
            schedules: cloned(&self.schedules),
            read_write: cloned(&self.read_write),
        }
    }

    /// How many records there are.
    fn len(&self) -> usize {
        self.elections.len() + self.schedules.len() + self.read_write.len()
    }

    /// Refuses a new record for `account` past the cluster's or the
    /// account's bound; changes nothing.
    pub(super) fn admit(
        &self,
        account: Option<&Account>,
        quotas: &Quotas,
    ) -> Result<(), CommandError> {
        if self.len() >= MAX_NAMED_RECORDS {
            return Err(CommandError::TooManyRecords(MAX_NAMED_RECORDS));
        }
        if let Some(account) = account {
            let kept = self.per_account.get(account).copied().unwrap_or(0);
            check_quota(Quota::Records, account, kept as u64, quotas.leases)?;
        }
        Ok(())
    }

    fn charge(&mut self, account: &Option<Account>) {
        if let Some(account) = account {
            *self.per_account.entry(account.clone()).or_default() += 1;
        }
    }

    fn refund(&mut self, account: &Option<Account>) {
        if let Some(account) = account {
            if let Some(kept) = self.per_account.get_mut(account) {
                *kept -= 1;
                if *kept == 0 {
                    self.per_account.remove(account);
                }
            }
        }
    }

    /// The election record of `name`, whether or not its holder leads.
    pub(super) fn election(&self, name: &str) -> Option<&ElectionRecord> {
        self.elections.get(name).map(|k| &k.record)
    }

    /// Stores `record` for `name`, charged to `account` if it is new
    /// (admitted already).
    pub(super) fn set_election(
        &mut self,
        name: &str,
        account: Option<Account>,
        record: ElectionRecord,
    ) {
        match self.elections.get_mut(name) {
            Some(kept) => kept.record = record,
            None => {
                self.charge(&account);
                self.elections
                    .insert(name.to_owned(), Kept { account, record });
            }
        }
    }

    /// Forgets the election record of `name`.
    pub(super) fn remove_election(&mut self, name: &str) {
        if let Some(kept) = self.elections.remove(name) {
            self.refund(&kept.account);
        }
    }

    /// The last fire claimed for schedule `name` (as `f64::to_bits`).
    pub(super) fn last_fired(&self, name: &str) -> Option<u64> {
        self.schedules.get(name).map(|k| k.record)
    }

    /// Records `due` as the last fire of `name`, charged to `account` if
    /// it is new (admitted already).
    pub(super) fn set_fired(&mut self, name: &str, account: Option<Account>, due: u64) {
        match self.schedules.get_mut(name) {
            Some(kept) => kept.record = due,
            None => {
                self.charge(&account);
                self.schedules.insert(
                    name.to_owned(),
                    Kept {
                        account,
                        record: due,
                    },
                );
            }
        }
    }

    /// The read-write record of `name`.
    pub(super) fn read_write(&self, name: &str) -> Option<&ReadWriteRecord> {
        self.read_write.get(name).map(|k| &k.record)
    }

    /// The read-write record of `name`, made (charged to `account`,
    /// admitted already) if there is none.
    pub(super) fn read_write_mut(
        &mut self,
        name: &str,
        account: Option<Account>,
    ) -> &mut ReadWriteRecord {
        if !self.read_write.contains_key(name) {
            self.charge(&account);
            self.read_write.insert(
                name.to_owned(),
                Kept {
                    account,
                    record: ReadWriteRecord::default(),
                },
            );
        }
        &mut self
            .read_write
            .get_mut(name)
            .expect("inserted above when missing")
            .record
    }

    /// Indexes a new intent of `name` on `lease`.
    pub(super) fn index_intent(&mut self, lease: LeaseId, name: &str) {
        self.intent_leases.insert(lease, name.to_owned());
    }

    /// Drops the intents that lived on `ids`, leases that just ended.
    pub(super) fn leases_ended(&mut self, ids: &BTreeSet<LeaseId>) {
        for id in ids {
            let Some(name) = self.intent_leases.remove(id) else {
                continue;
            };
            if let Some(kept) = self.read_write.get_mut(&name) {
                kept.record.intents.retain(|i| i.lease != *id);
            }
        }
    }

    /// How many records `account` keeps.
    pub(super) fn count_of(&self, account: &Account) -> usize {
        self.per_account.get(account).copied().unwrap_or(0)
    }
}

/// The pairs of `map`, copied, in name order.
fn cloned<T: Clone>(map: &BTreeMap<String, T>) -> Vec<(String, T)> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}
