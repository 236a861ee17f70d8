//! An election's leader changes, one `next` at a time.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use pyo3::prelude::*;
use raftlock_client::Error;
use tokio::sync::Mutex as AsyncMutex;

use crate::convert::LeaderInfo;
use crate::run::finish;

type LeaderStream =
    Pin<Box<dyn Stream<Item = Result<Option<raftlock_client::LeaderInfo>, Error>> + Send>>;

/// The changes of one election's leader (`Election.observe`).
#[pyclass(module = "raftlock._native", frozen)]
pub struct NativeObserver {
    stream: Arc<AsyncMutex<LeaderStream>>,
}

impl NativeObserver {
    pub fn new(
        stream: impl Stream<Item = Result<Option<raftlock_client::LeaderInfo>, Error>> + Send + 'static,
    ) -> Self {
        NativeObserver {
            stream: Arc::new(AsyncMutex::new(Box::pin(stream))),
        }
    }
}

#[pymethods]
impl NativeObserver {
    /// The next change: `(True, leader or None)`, or `(False, None)` when
    /// the stream has ended. `aio=True`: an awaitable; otherwise blocks.
    #[pyo3(signature = (*, aio=false))]
    fn next<'py>(&self, py: Python<'py>, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.stream.clone();
        finish(py, aio, async move {
            match stream.lock().await.next().await {
                Some(item) => Ok((true, item?.map(LeaderInfo::from))),
                None => Ok((false, None)),
            }
        })
    }
}
