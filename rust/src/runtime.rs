//! The crate's process-global tokio runtime and the bridges between
//! synchronous callers (C++ threads, C++ callbacks) and async code.
//!
//! Synchronous entry points never use `Runtime::block_on`: it panics when
//! called from a thread that is already inside a runtime, which is exactly
//! where C++ catalog callbacks run (tokio blocking-pool threads) when they
//! call back into `tl_store_*`. Instead the future is spawned onto the
//! runtime and the caller waits on a plain channel, which works from any
//! thread that is not a runtime worker.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::OnceLock;

use futures::FutureExt;
use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use crate::error::{panic_message, TlError, TlResult};

/// The runtime lives for the whole process: statics are never dropped, so
/// there is no shutdown ordering to get wrong at exit.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("timelake-rt")
            .build()
            .expect("failed to start the timelake tokio runtime")
    })
}

/// A handle to the crate's runtime.
pub fn handle() -> &'static Handle {
    runtime().handle()
}

/// Runs `fut` to completion on the crate's runtime and waits for it on the
/// calling thread. A panic inside the future is caught and reported as
/// TL_INTERNAL instead of being lost with the task.
pub fn run<F>(fut: F) -> TlResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    handle().spawn(async move {
        let result = AssertUnwindSafe(fut).catch_unwind().await;
        // The receiver only disappears if the waiting thread itself died;
        // there is nobody left to tell then.
        let _ = tx.send(result);
    });
    match rx.recv() {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(payload)) => Err(TlError::internal(panic_message(payload.as_ref()))),
        Err(_) => Err(TlError::internal(
            "the runtime dropped a task before it completed",
        )),
    }
}

/// Calls blocking code (a C++ callback) from a synchronous DataFusion trait
/// method. On a runtime worker thread the worker is handed over to another
/// thread for the duration (`block_in_place`) so the runtime keeps making
/// progress; elsewhere the code simply runs.
pub fn call_blocking_sync<R>(f: impl FnOnce() -> R) -> R {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Calls blocking code (a C++ callback) from async code: it runs on the
/// runtime's blocking pool while the calling task yields.
pub async fn call_blocking<R, F>(f: F) -> TlResult<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match handle().spawn_blocking(f).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => Err(TlError::internal(panic_message(e.into_panic().as_ref()))),
        Err(e) => Err(TlError::internal(format!("blocking task failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::TlCode;

    #[test]
    fn run_returns_value_and_catches_panics() {
        assert_eq!(run(async { 41 + 1 }).unwrap(), 42);
        let err = run(async { panic!("kaboom") }).map(|_: ()| ()).unwrap_err();
        assert_eq!(err.code, TlCode::Internal);
        assert!(err.message.contains("kaboom"), "{}", err.message);
    }

    #[test]
    fn run_works_from_blocking_pool_threads() {
        // C++ callbacks run on blocking threads and call back into run().
        let nested = run(async { call_blocking(|| run(async { 7 }).unwrap()).await.unwrap() });
        assert_eq!(nested.unwrap(), 7);
    }
}
