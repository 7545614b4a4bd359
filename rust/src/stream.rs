//! Export of a DataFusion result stream through the Arrow C stream
//! interface.
//!
//! The callbacks are our own rather than arrow's `FFI_ArrowArrayStream::new`
//! so that each one catches panics (they are called from C++) and so that
//! every `get_next` drives the DataFusion stream on the crate's runtime from
//! whatever thread C++ reads on.

use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow::array::{Array, StructArray};
use arrow::datatypes::SchemaRef;
use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;

use crate::error::{from_datafusion, panic_message, Phase, TlCode};
use crate::runtime;
use crate::store::redact;

// errno values used by the Arrow C stream interface (POSIX).
const EIO: c_int = 5;
const EINVAL: c_int = 22;

struct StreamState {
    schema: SchemaRef,
    /// None once the stream has ended or failed.
    stream: Option<SendableRecordBatchStream>,
    last_error: Option<CString>,
    /// The TlCode of the last failure (`tl_stream_error_code`).
    last_code: TlCode,
    /// Credentials to scrub from error messages (storage errors raised while
    /// scanning may quote requests).
    secrets: Arc<Vec<String>>,
    /// The session's interrupt flag: a set flag fails `get_next` with
    /// TL_CANCELLED and drops the plan.
    interrupted: Arc<AtomicBool>,
}

/// Wraps `stream` into an Arrow C stream that owns it; `interrupted` is the
/// flag of the session it comes from.
pub fn export(
    stream: SendableRecordBatchStream,
    secrets: Arc<Vec<String>>,
    interrupted: Arc<AtomicBool>,
) -> FFI_ArrowArrayStream {
    let state = Box::new(StreamState {
        schema: stream.schema(),
        stream: Some(stream),
        last_error: None,
        last_code: TlCode::Ok,
        secrets,
        interrupted,
    });
    FFI_ArrowArrayStream {
        get_schema: Some(get_schema),
        get_next: Some(get_next),
        get_last_error: Some(get_last_error),
        release: Some(release),
        private_data: Box::into_raw(state) as *mut c_void,
    }
}

/// A failure of a stream callback: the errno it returns, the TlCode kept
/// for `tl_stream_error_code` and the message for `get_last_error`.
type Failure = (c_int, TlCode, String);

/// Runs one callback body against the stream's state, turning errors and
/// panics into an errno plus `last_error` and `last_code`.
///
/// # Safety
/// `stream` must be NULL or a stream made by [`export`] and not released.
unsafe fn with_state(
    stream: *mut FFI_ArrowArrayStream,
    body: impl FnOnce(&mut StreamState) -> Result<(), Failure>,
) -> c_int {
    // SAFETY: per this function's contract, a non-NULL `stream` is ours and
    // `private_data` is the `StreamState` leaked by `export`; the C stream
    // interface forbids concurrent calls on one stream, so the exclusive
    // borrow is unique.
    let state = match unsafe { stream.as_mut() } {
        // SAFETY: see above.
        Some(s) if !s.private_data.is_null() => unsafe {
            &mut *(s.private_data as *mut StreamState)
        },
        _ => return EINVAL,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&mut *state)))
        .unwrap_or_else(|payload| Err((EIO, TlCode::Internal, panic_message(payload.as_ref()))));
    match outcome {
        Ok(()) => 0,
        Err((errno, code, message)) => {
            state.last_error = CString::new(message.replace('\0', "\\0")).ok();
            state.last_code = code;
            errno
        }
    }
}

unsafe extern "C" fn get_schema(
    stream: *mut FFI_ArrowArrayStream,
    out: *mut FFI_ArrowSchema,
) -> c_int {
    // SAFETY: the consumer passes the stream we exported.
    unsafe {
        with_state(stream, |state| {
            if out.is_null() {
                return Err((
                    EINVAL,
                    TlCode::Invalid,
                    "get_schema: out is NULL".to_string(),
                ));
            }
            let schema = FFI_ArrowSchema::try_from(state.schema.as_ref())
                .map_err(|e| (EINVAL, TlCode::Internal, e.to_string()))?;
            // SAFETY: `out` is a valid, writable ArrowSchema slot; the
            // consumer owns (and later releases) what we move into it.
            std::ptr::write(out, schema);
            Ok(())
        })
    }
}

unsafe extern "C" fn get_next(
    stream: *mut FFI_ArrowArrayStream,
    out: *mut FFI_ArrowArray,
) -> c_int {
    // SAFETY: the consumer passes the stream we exported.
    unsafe {
        with_state(stream, |state| {
            if out.is_null() {
                return Err((EINVAL, TlCode::Invalid, "get_next: out is NULL".to_string()));
            }
            let next = match state.stream.take() {
                None => None,
                Some(mut batches) => {
                    // An interrupt leaves `state.stream` empty: the plan is
                    // dropped with the aborted task, and the stream has ended.
                    let (batches, item) = runtime::run_interruptible(
                        async move {
                            let item = batches.next().await;
                            (batches, item)
                        },
                        &state.interrupted,
                    )
                    .map_err(|e| (EIO, e.code, e.message))?;
                    match item {
                        Some(Ok(batch)) => {
                            state.stream = Some(batches);
                            Some(batch)
                        }
                        Some(Err(e)) => {
                            let error = from_datafusion(&e, Phase::Execution);
                            let message = redact(&error.message, &state.secrets);
                            return Err((EIO, error.code, message));
                        }
                        None => None,
                    }
                }
            };
            let array = match next {
                Some(batch) => FFI_ArrowArray::new(&StructArray::from(batch).to_data()),
                // A released array marks the end of the stream.
                None => FFI_ArrowArray::empty(),
            };
            // SAFETY: `out` is a valid, writable ArrowArray slot; the consumer
            // owns what we move into it.
            std::ptr::write(out, array);
            Ok(())
        })
    }
}

/// The TlCode of the last failed call on `stream` (TL_OK when none failed);
/// TL_INVALID for a stream that [`export`] did not make or that is released.
///
/// # Safety
/// `stream` must be NULL or a valid (possibly released) Arrow C stream.
pub unsafe fn last_code(stream: *mut FFI_ArrowArrayStream) -> TlCode {
    // SAFETY: per this function's contract.
    let Some(s) = (unsafe { stream.as_ref() }) else {
        return TlCode::Invalid;
    };
    let ours = s
        .get_next
        .is_some_and(|f| std::ptr::fn_addr_eq(f, get_next as GetNextFn));
    if !ours || s.private_data.is_null() {
        return TlCode::Invalid;
    }
    // SAFETY: a stream of ours: `private_data` is the `StreamState` of
    // `export`, and the C stream interface forbids concurrent calls.
    unsafe { &*(s.private_data as *const StreamState) }.last_code
}

type GetNextFn = unsafe extern "C" fn(*mut FFI_ArrowArrayStream, *mut FFI_ArrowArray) -> c_int;

unsafe extern "C" fn get_last_error(stream: *mut FFI_ArrowArrayStream) -> *const c_char {
    let result = catch_unwind(|| {
        // SAFETY: the consumer passes the stream we exported; the returned
        // pointer stays valid until the next call on the stream.
        match unsafe { stream.as_ref() } {
            Some(s) if !s.private_data.is_null() => {
                // SAFETY: `private_data` is the `StreamState` of `export`.
                let state = unsafe { &*(s.private_data as *const StreamState) };
                state
                    .last_error
                    .as_ref()
                    .map_or(std::ptr::null(), |e| e.as_ptr())
            }
            _ => std::ptr::null(),
        }
    });
    result.unwrap_or(std::ptr::null())
}

unsafe extern "C" fn release(stream: *mut FFI_ArrowArrayStream) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the consumer passes the stream we exported, once; we take
        // back the box leaked by `export` and mark the stream released.
        if let Some(s) = unsafe { stream.as_mut() } {
            if !s.private_data.is_null() {
                // SAFETY: the box leaked by `export`, taken back once (the
                // pointer is cleared right after).
                drop(unsafe { Box::from_raw(s.private_data as *mut StreamState) });
            }
            s.private_data = std::ptr::null_mut();
            s.release = None;
        }
    }));
}
