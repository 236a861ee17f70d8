//! `client.election(name)`: campaign for leadership on the session lease,
//! read the leader, and observe every change (including "no leader") as a
//! stream that survives the loss of the node it reads from.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use uuid::Uuid;

use super::loss::{confirm_held, Tripwire};
use super::session::{Registration, Session};
use super::{Client, LeaderInfo, LeaseId};
use crate::error::Error;

/// An election; made by [`Client::election`].
#[derive(Debug, Clone)]
pub struct Election {
    client: Client,
    name: String,
    timeout: Option<Duration>,
}

impl Client {
    /// The election `name`.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let election = client.election("scheduler");
    /// let leadership = election.campaign("node-a:8080").await?;
    /// println!("leading with fence {}", leadership.fence());
    /// let lost = leadership.lost();
    /// tokio::select! {
    ///     err = lost => eprintln!("no longer leader: {err}"),
    ///     _ = tokio::signal::ctrl_c() => leadership.resign().await?,
    /// }
    /// # Ok(()) }
    /// ```
    pub fn election(&self, name: impl Into<String>) -> Election {
        Election {
            client: self.clone(),
            name: name.into(),
            timeout: None,
        }
    }
}

impl Election {
    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Campaign for at most this long; then [`Error::Timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Waits (FIFO behind earlier candidates) until elected, publishing
    /// `value`; the leadership lives on the client's session lease.
    pub async fn campaign(&self, value: impl Into<Vec<u8>>) -> Result<Leadership, Error> {
        let name = &self.name;
        self.run(value.into(), true).await?.ok_or_else(|| {
            Error::Internal(format!("a waiting campaign of {name:?} was answered busy"))
        })
    }

    /// One try: leads (publishing `value`) if the election has no leader
    /// now, else `Ok(None)` at once, keeping no place in the queue.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// match client.election("scheduler").try_campaign("node-a").await? {
    ///     Some(leadership) => println!("leading with fence {}", leadership.fence()),
    ///     None => println!("another node leads"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_campaign(
        &self,
        value: impl Into<Vec<u8>>,
    ) -> Result<Option<Leadership>, Error> {
        self.run(value.into(), false).await
    }

    async fn run(&self, value: Vec<u8>, wait: bool) -> Result<Option<Leadership>, Error> {
        let owner = Uuid::new_v4().to_string();
        // A timeout bounds the whole campaign, granting the session too.
        let bounded = self.client.until_waited(wait, self.timeout);
        let mut retried = false;
        loop {
            let session = bounded.session().await?;
            let lease = session.lease;
            let campaign = match wait {
                true => bounded
                    .campaign(&self.name, &owner, lease, &value, self.timeout)
                    .await
                    .map(Some),
                false => {
                    bounded
                        .try_campaign(&self.name, &owner, lease, &value)
                        .await
                }
            };
            match campaign {
                Ok(fence) => {
                    return Ok(fence.map(|fence| {
                        Leadership::new(
                            self.client.clone(),
                            self.name.clone(),
                            owner,
                            fence,
                            session,
                        )
                    }))
                }
                Err(Error::LeaseExpired(why))
                    if !retried && self.client.options().lease.is_none() =>
                {
                    session.lost.trip(format!("the server says: {why}"));
                    retried = true;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The current leader (a linearizable read); `None` when there is none.
    pub async fn leader(&self) -> Result<Option<LeaderInfo>, Error> {
        let info = self.client.leader(&self.name).await?;
        Ok(info.has_leader.then_some(info))
    }

    /// Every change of leader or value, starting with the current state;
    /// `None` items mean "no leader". If the node serving the stream goes
    /// away, the stream reconnects to another one and skips an item equal
    /// to the last one it gave. It ends after an error it cannot retry.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// use futures::StreamExt;
    ///
    /// let mut changes = std::pin::pin!(client.election("scheduler").observe());
    /// while let Some(change) = changes.next().await {
    ///     match change? {
    ///         Some(leader) => println!("leader: {}", String::from_utf8_lossy(&leader.value)),
    ///         None => println!("no leader"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn observe(
        &self,
    ) -> impl Stream<Item = Result<Option<LeaderInfo>, Error>> + Send + 'static {
        let state = Observer {
            client: self.client.clone(),
            name: self.name.clone(),
            stream: None,
            last: None,
        };
        futures::stream::unfold(Some(state), |state| async move {
            let mut state = state?;
            let item = state.next().await;
            let keep_going = item.is_ok();
            Some((item, keep_going.then_some(state)))
        })
    }
}

/// What the observe stream carries between items.
struct Observer {
    client: Client,
    name: String,
    stream: Option<BoxStream<'static, Result<LeaderInfo, Error>>>,
    /// The last item given, without its header, to skip repeats.
    last: Option<LeaderInfo>,
}

impl Observer {
    async fn next(&mut self) -> Result<Option<LeaderInfo>, Error> {
        loop {
            let stream = match self.stream.as_mut() {
                Some(stream) => stream,
                None => {
                    let stream = self.client.observe(&self.name).await?;
                    self.stream.insert(stream.boxed())
                }
            };
            match stream.next().await {
                Some(Ok(info)) => {
                    let plain = LeaderInfo {
                        header: None,
                        ..info.clone()
                    };
                    if self.last.as_ref() == Some(&plain) {
                        continue;
                    }
                    self.last = Some(plain);
                    return Ok(info.has_leader.then_some(info));
                }
                Some(Err(e)) if !e.is_retryable() => return Err(e),
                Some(Err(_)) | None => {
                    tracing::debug!(name = %self.name, "observe stream broke; reconnecting");
                    self.stream = None;
                    self.client.skip_current_endpoint();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// Leadership of an election, held on the session lease until
/// [`resign`](Self::resign) or drop (which resigns in the background).
#[derive(Debug)]
#[must_use = "dropping a leadership resigns it at once"]
pub struct Leadership {
    client: Client,
    name: String,
    owner: String,
    fence: u64,
    lease: LeaseId,
    lost: Tripwire,
    session_lost: Tripwire,
    /// `None` once resigned.
    hold: Option<(Arc<Session>, Registration)>,
}

impl Leadership {
    fn new(client: Client, name: String, owner: String, fence: u64, session: Arc<Session>) -> Self {
        let lost = Tripwire::new();
        let registration = session.register(&name, fence, lost.clone());
        Leadership {
            client,
            owner,
            fence,
            lease: session.lease,
            lost,
            session_lost: session.lost.clone(),
            name,
            hold: Some((session, registration)),
        }
    }

    /// The leadership's fencing token (its term).
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The candidate's owner token.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The lease the leadership lives on.
    pub fn lease(&self) -> LeaseId {
        self.lease
    }

    /// Checks, with no call, that the leadership can still be trusted as
    /// far as this process knows (see
    /// [`LockGuard::ensure_valid`](super::LockGuard::ensure_valid));
    /// [`ensure_owned`](Self::ensure_owned) asks the cluster.
    pub fn ensure_valid(&self) -> Result<(), Error> {
        let name = &self.name;
        if let Some(why) = self.lost.reason() {
            return Err(Error::LockLost(format!("leadership of {name:?}: {why}")));
        }
        match &self.hold {
            Some((session, _)) => session
                .check_trusted()
                .map_err(|why| Error::LockLost(format!("leadership of {name:?}: {why}"))),
            None => Err(Error::NotHeld(format!(
                "leadership of {name:?} was resigned"
            ))),
        }
    }

    /// Proves, with one round trip, that this still leads (see
    /// [`LockGuard::ensure_owned`](super::LockGuard::ensure_owned)): a
    /// force-release, revoke or expiry applied before the call is seen,
    /// marks the leadership lost and answers [`Error::LockLost`].
    pub async fn ensure_owned(&self) -> Result<(), Error> {
        self.ensure_valid()?;
        confirm_held(&self.client, &self.name, self.fence, &self.lost).await?;
        self.ensure_valid()
    }

    /// Publishes a new value while leading.
    pub async fn proclaim(&self, value: impl Into<Vec<u8>>) -> Result<(), Error> {
        let value = value.into();
        match self.client.proclaim(&self.name, &self.owner, &value).await {
            Err(Error::NotHeld(why)) => Err(Error::LockLost(format!(
                "leadership of {:?} was lost: {why}",
                self.name
            ))),
            other => other,
        }
    }

    /// Whether [`lost`](Self::lost) has resolved.
    pub fn is_lost(&self) -> bool {
        self.lost.reason().is_some() || self.session_lost.reason().is_some()
    }

    /// Resolves once the leadership can no longer be trusted (see
    /// [`LockGuard::lost`](super::LockGuard::lost)).
    pub fn lost(&self) -> impl Future<Output = Error> + Send + 'static {
        let (own, session) = (self.lost.clone(), self.session_lost.clone());
        let name = self.name.clone();
        async move {
            let why = tokio::select! {
                why = own.tripped() => why,
                why = session.tripped() => why,
            };
            Error::LockLost(format!("leadership of {name:?}: {why}"))
        }
    }

    /// Steps down; the next candidate in line is elected.
    pub async fn resign(mut self) -> Result<(), Error> {
        let Some((_session, registration)) = self.hold.take() else {
            return Ok(());
        };
        drop(registration);
        match self.client.resign(&self.name, &self.owner).await {
            Err(Error::NotHeld(why) | Error::LeaseExpired(why)) => Err(Error::LockLost(format!(
                "leadership of {:?} was lost before resigning: {why}",
                self.name
            ))),
            other => other,
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        let Some(hold) = self.hold.take() else {
            return;
        };
        let client = self.client.clone();
        let (name, owner) = (self.name.clone(), self.owner.clone());
        self.client.home().spawn(async move {
            if let Err(e) = client.resign(&name, &owner).await {
                tracing::debug!("resign of {name:?} on drop failed: {e}");
            }
            drop(hold);
        });
    }
}
