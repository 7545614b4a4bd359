//! The crate's process-global tokio runtime and the bridges between
//! synchronous callers (C++ threads, C++ callbacks) and async code.
//!
//! A synchronous entry point called from a thread outside the runtime (the
//! host's own thread: a query, a storage call of the C++ engine) drives its
//! future on that thread with `Handle::block_on`. The future's own work then
//! costs no thread switch. TSBS `lastpoint` (it plans, calls the C++ catalog
//! and returns one batch) used to switch threads 15 times per query, 0.07
//! now (`perf stat`, 601 queries; C++ catalog callbacks also run on the
//! caller's thread, see [`call_blocking`]), and its CPU time per query fell
//! from 2.8 to 1.9 ms: waking a parked worker and then the waiting caller is
//! slow. Tasks the future spawns still run on the workers.
//!
//! `block_on` panics on a thread that is already inside a runtime, which is
//! where C++ catalog callbacks run when they call back into `tl_store_*`
//! (on the caller's thread inside its `block_on`, or on a worker thread).
//! There the future is spawned onto the runtime instead, and the caller
//! waits on a plain channel.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::Duration;

use futures::future::Either;
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
    // SAFETY: pthread_sigmask only changes the calling thread's mask, and a
    // null old-set pointer is allowed.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &sigpipe_set(), std::ptr::null_mut());
    }
}

/// The signal set holding SIGPIPE alone.
#[cfg(unix)]
fn sigpipe_set() -> libc::sigset_t {
    // SAFETY: `set` is a local sigset_t that sigemptyset initialises before
    // sigaddset adds to it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        set
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
    let fut = AssertUnwindSafe(fut).catch_unwind();
    let result = if Handle::try_current().is_err() {
        block_on_here(fut)
    } else {
        let (tx, rx) = mpsc::sync_channel(1);
        handle().spawn(async move {
            // The receiver only disappears if the waiting thread itself
            // died; there is nobody left to tell then.
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .map_err(|_| TlError::internal("the runtime dropped a task before it completed"))?
    };
    result.map_err(|payload| TlError::internal(panic_message(payload.as_ref())))
}

/// Drives `fut` on the calling thread, which must be outside the runtime.
/// SIGPIPE is blocked meanwhile, as on the runtime's own threads (see
/// [`block_sigpipe`]): a connection the future writes to may have been reset.
fn block_on_here<F: Future>(fut: F) -> F::Output {
    let _sigpipe = SigpipeBlocked::new();
    handle().block_on(fut)
}

/// SIGPIPE blocked on the calling thread while this lives. On drop, a SIGPIPE
/// raised meanwhile is taken (the write that raised it failed with EPIPE,
/// which the storage client handles), then the caller's mask is restored.
struct SigpipeBlocked {
    #[cfg(unix)]
    old: libc::sigset_t,
}

impl SigpipeBlocked {
    fn new() -> Self {
        #[cfg(unix)]
        // SAFETY: `old` is a local sigset_t that pthread_sigmask fills
        // before use; pthread_sigmask only changes the calling thread's mask.
        unsafe {
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &sigpipe_set(), &mut old);
            Self { old }
        }
        #[cfg(not(unix))]
        Self {}
    }
}

impl Drop for SigpipeBlocked {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: as in `new`; sigtimedwait with a zero timeout never blocks
        // and only takes a signal that is pending and blocked.
        unsafe {
            if libc::sigismember(&self.old, libc::SIGPIPE) == 1 {
                return; // The caller had it blocked: nothing changed.
            }
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut pending);
            if libc::sigpending(&mut pending) == 0
                && libc::sigismember(&pending, libc::SIGPIPE) == 1
            {
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::sigtimedwait(&sigpipe_set(), std::ptr::null_mut(), &zero);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

/// How often a caller waiting in [`run_interruptible`] looks at its flag. A
/// signal handler can only store to an atomic, which nothing can wait on, so
/// the waiting thread polls; a few wake-ups per second cost nothing beside a
/// running query and keep Ctrl-C prompt.
const INTERRUPT_POLL: Duration = Duration::from_millis(10);

/// Like [`run`], but returns TL_CANCELLED once `interrupted` is true (at
/// once when it already is). A signal handler can only store to the flag, so
/// it is polled: on the calling thread, between the future's polls (DataFusion
/// streams yield regularly: their scans spend the task's budget); in the
/// runtime, by the waiting caller, whatever the task is doing. The future is
/// dropped, and with it the DataFusion stream and the tasks it spawned.
pub fn run_interruptible<F>(fut: F, interrupted: &AtomicBool) -> TlResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if interrupted.load(Ordering::SeqCst) {
        return Err(TlError::cancelled());
    }
    if Handle::try_current().is_err() {
        let watch = async {
            let mut tick = tokio::time::interval(INTERRUPT_POLL);
            loop {
                tick.tick().await;
                if interrupted.load(Ordering::SeqCst) {
                    return;
                }
            }
        };
        let work = std::pin::pin!(AssertUnwindSafe(fut).catch_unwind());
        let watch = std::pin::pin!(watch);
        return match block_on_here(futures::future::select(work, watch)) {
            Either::Left((Ok(value), _)) => Ok(value),
            Either::Left((Err(payload), _)) => {
                Err(TlError::internal(panic_message(payload.as_ref())))
            }
            Either::Right(_) => Err(TlError::cancelled()),
        };
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

/// Calls blocking code (a C++ callback) from async code. On the caller's
/// own thread (a query's future driven by [`run`]) it runs right there: a
/// catalog callback costs no hop to the blocking pool and back, which was
/// two thread switches per table per query. On a runtime worker the worker
/// is handed over for the duration, as in [`call_blocking_sync`]. A panic in
/// `f` is reported as TL_INTERNAL.
///
/// The callback runs to its end before the caller sees an interrupt
/// ([`run_interruptible`] checks its flag at the future's yields). Catalog
/// callbacks read table metadata: a few storage requests at most, each with
/// its timeout.
pub async fn call_blocking<R>(f: impl FnOnce() -> R) -> TlResult<R> {
    std::panic::catch_unwind(AssertUnwindSafe(|| call_blocking_sync(f)))
        .map_err(|payload| TlError::internal(panic_message(payload.as_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::TlCode;
    use std::sync::atomic::AtomicUsize;

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
        let worker = run(async { tokio::spawn(async { sigpipe_blocked() }).await }).unwrap();
        assert!(worker.unwrap(), "worker thread");
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
    fn run_works_inside_blocking_calls() {
        // C++ callbacks run inside the runtime's context and call back into
        // run().
        let nested = run(async { call_blocking(|| run(async { 7 }).unwrap()).await.unwrap() });
        assert_eq!(nested.unwrap(), 7);
    }

    #[test]
    fn blocking_calls_run_on_the_callers_thread_and_report_panics() {
        let caller = std::thread::current().id();
        let here = run(async { call_blocking(|| std::thread::current().id()).await }).unwrap();
        assert_eq!(here.unwrap(), caller);
        // On a worker the call still completes (the worker is handed over).
        let on_worker = run(async {
            tokio::spawn(async { call_blocking(|| 3).await.unwrap() })
                .await
                .unwrap()
        });
        assert_eq!(on_worker.unwrap(), 3);
        let err = run(async { call_blocking(|| -> i32 { panic!("in a callback") }).await })
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, TlCode::Internal);
        assert!(err.message.contains("in a callback"), "{}", err.message);
    }

    #[cfg(unix)]
    #[test]
    fn futures_run_on_the_calling_thread_with_sigpipe_blocked() {
        let caller = std::thread::current().id();
        let (thread, blocked) =
            run(async { (std::thread::current().id(), sigpipe_blocked()) }).unwrap();
        assert_eq!(thread, caller);
        assert!(blocked);
        assert!(!sigpipe_blocked(), "the caller's mask is restored");
        // A SIGPIPE raised meanwhile stays pending while blocked and is taken
        // before the mask is restored: unblocked, it would be delivered, and
        // end a host that does not ignore it. A counting handler stands in
        // for such a host (it ignores the signal as well, for other tests).
        static DELIVERED: AtomicUsize = AtomicUsize::new(0);
        extern "C" fn count(_: libc::c_int) {
            DELIVERED.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: `action` is a zeroed sigaction given a handler that only
        // touches an atomic; the previous action is put back below.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = count as extern "C" fn(libc::c_int) as usize;
            let mut previous: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPIPE, &action, &mut previous);
            run(async { libc::raise(libc::SIGPIPE) }).unwrap();
            let taken = DELIVERED.load(Ordering::SeqCst);
            libc::raise(libc::SIGPIPE); // the handler works: unblocked, it counts
            let delivered = DELIVERED.load(Ordering::SeqCst);
            libc::sigaction(libc::SIGPIPE, &previous, std::ptr::null_mut());
            assert_eq!((taken, delivered), (0, 1));
        }
        assert!(!sigpipe_blocked());
        // Inside the runtime (a callback inside the query's future) the future
        // goes to the runtime, and interrupting it still works.
        let flag = AtomicBool::new(false);
        let inner = run(async move {
            call_blocking(move || {
                let here = std::thread::current().id();
                let (there, value) =
                    run_interruptible(async { (std::thread::current().id(), 5) }, &flag).unwrap();
                flag.store(true, Ordering::SeqCst);
                let stopped = run_interruptible(std::future::pending::<()>(), &flag).unwrap_err();
                (here != there, value, stopped.code)
            })
            .await
            .unwrap()
        });
        assert_eq!(inner.unwrap(), (true, 5, TlCode::Cancelled));
    }
}
