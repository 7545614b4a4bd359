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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::Duration;

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
            .on_thread_start(block_sigpipe)
            .build()
            .expect("failed to start the timelake tokio runtime")
    })
}

/// Blocks SIGPIPE on the calling thread. Every socket of the storage client
/// is written from the runtime's threads (workers and blocking pool: all
/// futures run there, see [`run`]); a write to a connection the peer has
/// reset raises SIGPIPE, whose default action ends the whole process, and
/// hyper writes request bodies with `writev`, which has no MSG_NOSIGNAL. Rust
/// and Python programs ignore SIGPIPE, but the host of this library may not
/// (the `timelake` CLI did not: a storage endpoint that reset a connection
/// in the middle of an upload killed it). Blocked, the signal stays pending
/// on the thread and the write fails with EPIPE, an error the client
/// retries; the process's own disposition is left alone.
fn block_sigpipe() {
    #[cfg(unix)]
    // SAFETY: `set` is a local sigset_t initialised by sigemptyset before
    // use; pthread_sigmask only changes the calling thread's mask, and a
    // null old-set pointer is allowed.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
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

/// How often a caller waiting in [`run_interruptible`] looks at its flag. A
/// signal handler can only store to an atomic, which nothing can wait on, so
/// the waiting thread polls; a few wake-ups per second cost nothing beside a
/// running query and keep Ctrl-C prompt.
const INTERRUPT_POLL: Duration = Duration::from_millis(10);

/// Like [`run`], but returns TL_CANCELLED as soon as `interrupted` is true
/// (also when it already is), whatever the future is doing: the caller's
/// thread watches the flag, not the future, so a plan that computes for
/// minutes without yielding cannot delay the answer. The task is aborted;
/// it is dropped, and with it the DataFusion stream and the tasks that
/// stream spawned, at its next yield point.
pub fn run_interruptible<F>(fut: F, interrupted: &AtomicBool) -> TlResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if interrupted.load(Ordering::SeqCst) {
        return Err(TlError::cancelled());
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let task = handle().spawn(async move {
        let result = AssertUnwindSafe(fut).catch_unwind().await;
        // As in `run`; the receiver is also gone after an interrupt.
        let _ = tx.send(result);
    });
    loop {
        match rx.recv_timeout(INTERRUPT_POLL) {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(payload)) => return Err(TlError::internal(panic_message(payload.as_ref()))),
            Err(RecvTimeoutError::Timeout) => {
                if interrupted.load(Ordering::SeqCst) {
                    task.abort();
                    return Err(TlError::cancelled());
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(TlError::internal(
                    "the runtime dropped a task before it completed",
                ))
            }
        }
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

    /// Whether SIGPIPE is blocked on the calling thread.
    #[cfg(unix)]
    fn sigpipe_blocked() -> bool {
        // SAFETY: `mask` is a local sigset_t that pthread_sigmask fills (a
        // null new set only reads the mask); sigismember reads it.
        unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
            libc::sigismember(&mask, libc::SIGPIPE) == 1
        }
    }

    #[cfg(unix)]
    #[test]
    fn runtime_threads_block_sigpipe() {
        assert!(run(async { sigpipe_blocked() }).unwrap(), "worker thread");
        let blocking = run(async { tokio::task::spawn_blocking(sigpipe_blocked).await }).unwrap();
        assert!(blocking.unwrap(), "blocking-pool thread");
    }

    #[test]
    fn run_returns_value_and_catches_panics() {
        assert_eq!(run(async { 41 + 1 }).unwrap(), 42);
        let err = run(async { panic!("kaboom") }).map(|_: ()| ()).unwrap_err();
        assert_eq!(err.code, TlCode::Internal);
        assert!(err.message.contains("kaboom"), "{}", err.message);
    }

    #[test]
    fn run_interruptible_stops_a_future_that_never_ends() {
        let interrupted = AtomicBool::new(false);
        let err = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                interrupted.store(true, Ordering::SeqCst);
            });
            run_interruptible(std::future::pending::<()>(), &interrupted).unwrap_err()
        });
        assert_eq!(err.code, TlCode::Cancelled);
        // A set flag refuses to start; a clear one runs to the end.
        let err = run_interruptible(async { 1 }, &interrupted).unwrap_err();
        assert_eq!(err.code, TlCode::Cancelled);
        interrupted.store(false, Ordering::SeqCst);
        assert_eq!(run_interruptible(async { 2 }, &interrupted).unwrap(), 2);
    }

    #[test]
    fn run_works_from_blocking_pool_threads() {
        // C++ callbacks run on blocking threads and call back into run().
        let nested = run(async { call_blocking(|| run(async { 7 }).unwrap()).await.unwrap() });
        assert_eq!(nested.unwrap(), 7);
    }
}
