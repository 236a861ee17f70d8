//! `NativeCoordination`: the calls grelmicro's coordination adapters make
//! (`raftlock.grelmicro`), on a client's connection: a hold with a lease
//! of its own, read-write lock steps, lead records and schedule fires.
//! Each blocks or, with `aio=True`, answers an awaitable.

use std::collections::HashMap;

use pyo3::prelude::*;
use raftlock_client::Client;

use crate::convert::{read_write_op, ttl_secs, LeadRecord};
use crate::node_link::NodeLink;
use crate::run::Reply;

/// The coordination calls of one client (`NativeClient.coordination`).
#[pyclass(module = "raftlock._native", frozen)]
pub struct NativeCoordination {
    client: Client,
    /// The client's node in this process, if any: calls end when it stops.
    link: NodeLink,
}

impl NativeCoordination {
    pub(crate) fn new(client: Client, link: NodeLink) -> Self {
        Self { client, link }
    }
}

// Keyword arguments in Python; Rust sees them as parameters.
#[allow(clippy::too_many_arguments)]
#[pymethods]
impl NativeCoordination {
    /// Takes `name` alone for `owner` on a lease of its own of `ttl`, or
    /// renews the hold `owner` has: `(fence, lease)`, `None` when another
    /// owner holds it.
    #[pyo3(signature = (name, owner, ttl, *, aio=false))]
    fn hold<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        ttl: f64,
        aio: bool,
    ) -> Reply<'py> {
        let ttl = ttl_secs("ttl", ttl)?;
        self.link.run_on(py, aio, &self.client, |c| async move {
            let held = c.hold(&name, &owner, ttl).await?;
            Ok(held.map(|h| (h.fence, h.lease)))
        })
    }

    /// Ends `owner`'s hold of `name` with its lease; `False` if none.
    #[pyo3(signature = (name, owner, *, aio=false))]
    fn unhold<'py>(&self, py: Python<'py>, name: String, owner: String, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            c.unhold(&name, &owner).await
        })
    }

    /// One read-write step (`op`: read, write, release_read, release_write,
    /// cancel_intent, downgrade): `(granted, generation, poisoned)`.
    #[pyo3(signature = (name, owner, op, ttl, intent, *, aio=false))]
    fn read_write<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        op: &str,
        ttl: f64,
        intent: bool,
        aio: bool,
    ) -> Reply<'py> {
        let op = read_write_op(op)?;
        let ttl = ttl_secs("ttl", ttl)?;
        self.link.run_on(py, aio, &self.client, |c| async move {
            let step = c.read_write(&name, &owner, op, ttl, intent).await?;
            Ok((step.granted, step.generation, step.poisoned))
        })
    }

    /// Read-write lock `name`: `(generation, writing, readers,
    /// waiting_writers)`.
    #[pyo3(signature = (name, *, aio=false))]
    fn read_write_state<'py>(&self, py: Python<'py>, name: String, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            let s = c.read_write_state(&name).await?;
            Ok((s.generation, s.writing, s.readers, s.waiting_writers))
        })
    }

    /// Leads election `name` as `owner` for `ttl`, or renews its lead:
    /// the record, whoever leads (see `LeadRecord`).
    #[pyo3(signature = (name, owner, ttl, metadata, *, aio=false))]
    fn lead<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        ttl: f64,
        metadata: HashMap<String, String>,
        aio: bool,
    ) -> Reply<'py> {
        let ttl = ttl_secs("ttl", ttl)?;
        self.link.run_on(py, aio, &self.client, |c| async move {
            Ok(LeadRecord::from(
                c.lead(&name, &owner, ttl, metadata).await?,
            ))
        })
    }

    /// The record of election `name` while someone leads it.
    #[pyo3(signature = (name, *, aio=false))]
    fn leader_record<'py>(&self, py: Python<'py>, name: String, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            Ok(c.leader_record(&name).await?.map(LeadRecord::from))
        })
    }

    /// Claims schedule `name`'s fire at `due` (seconds since the epoch).
    #[pyo3(signature = (name, due, *, aio=false))]
    fn claim_fire<'py>(&self, py: Python<'py>, name: String, due: f64, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            c.claim_fire(&name, due).await
        })
    }

    /// The last fire claimed for schedule `name`, `None` if none.
    #[pyo3(signature = (name, *, aio=false))]
    fn last_fired<'py>(&self, py: Python<'py>, name: String, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            c.last_fired(&name).await
        })
    }
}
