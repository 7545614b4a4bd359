//! Error codes of the C ABI and the crate's error type.
//!
//! Every failure that crosses the C boundary becomes a [`TlError`]: a
//! [`TlCode`] the C++ side can branch on plus a human-readable message. The
//! classification of object_store and DataFusion errors lives here so that
//! the storage and SQL layers agree on it.

use std::error::Error as StdError;
use std::fmt;

use datafusion::error::DataFusionError;

/// Mirrors `enum TlCode` of `timelake_platform.h` (same values).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlCode {
    Ok = 0,
    NotFound = 1,
    AlreadyExists = 2,
    Precondition = 3,
    Invalid = 4,
    Storage = 5,
    StorageRetryable = 6,
    Unsupported = 7,
    Internal = 8,
    Execution = 9,
    Corrupt = 10,
    Cancelled = 11,
}

impl TlCode {
    /// The code of a C `int` (`tl_sink_set_code`); None for TL_OK and for
    /// values the header does not define.
    pub fn from_raw(code: i32) -> Option<Self> {
        use TlCode as C;
        Some(match code {
            1 => C::NotFound,
            2 => C::AlreadyExists,
            3 => C::Precondition,
            4 => C::Invalid,
            5 => C::Storage,
            6 => C::StorageRetryable,
            7 => C::Unsupported,
            8 => C::Internal,
            9 => C::Execution,
            10 => C::Corrupt,
            11 => C::Cancelled,
            _ => return None,
        })
    }
}

/// An error with the code reported to C and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlError {
    pub code: TlCode,
    pub message: String,
}

pub type TlResult<T> = Result<T, TlError>;

impl TlError {
    pub fn new(code: TlCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(TlCode::Invalid, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(TlCode::Internal, message)
    }

    /// The error of a call that `tl_session_interrupt` stopped.
    pub fn cancelled() -> Self {
        Self::new(TlCode::Cancelled, "cancelled: the session was interrupted")
    }

    /// Wraps this error so that it can travel through DataFusion and be
    /// recognised again (with its code) by [`from_datafusion`].
    pub fn into_datafusion(self) -> DataFusionError {
        DataFusionError::External(Box::new(self))
    }
}

impl fmt::Display for TlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for TlError {}

/// Turns a caught panic payload into a readable message.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panic: {s}")
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// Classifies an object_store error. The message is built by the caller (it
/// knows the operation and the key); only the code is decided here.
pub fn object_store_code(err: &object_store::Error) -> TlCode {
    use object_store::Error as E;
    match err {
        E::NotFound { .. } => TlCode::NotFound,
        E::AlreadyExists { .. } => TlCode::AlreadyExists,
        E::Precondition { .. } => TlCode::Precondition,
        E::NotImplemented { .. } | E::NotSupported { .. } => TlCode::Unsupported,
        E::InvalidPath { .. } | E::UnknownConfigurationKey { .. } => TlCode::Invalid,
        other if looks_transient(other) => TlCode::StorageRetryable,
        _ => TlCode::Storage,
    }
}

/// Whether the request never reached a server: the connection could not be
/// made (refused, no route, name not resolved, connect timeout).
pub fn is_unreachable(err: &(dyn StdError + 'static)) -> bool {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<object_store::client::HttpError>() {
            return http.kind() == object_store::client::HttpErrorKind::Connect;
        }
        current = e.source();
    }
    false
}

/// What went wrong on the wire, when an error's chain holds a transport
/// failure: object_store words them all "error sending request", which does
/// not tell a timeout (a slow endpoint, or a `timeout` set too short) from a
/// connection the endpoint closed.
pub fn transport_cause(err: &(dyn StdError + 'static)) -> Option<&'static str> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as K;
            return match http.kind() {
                K::Timeout => Some(
                    "timed out waiting for an answer: see the storage options `timeout`, \
                     default 30s, and `connect_timeout`, default 5s",
                ),
                K::Interrupted | K::Request => {
                    Some("the connection was closed or reset before the answer arrived")
                }
                _ => None,
            };
        }
        current = e.source();
    }
    None
}

/// Whether an error (or anything in its source chain) looks like a transient
/// failure that is worth retrying: timeouts, connection resets, throttling
/// and 5xx answers. object_store already retries these internally, so seeing
/// one here means its retry budget ran out; the caller may still retry the
/// whole operation later (e.g. an Iceberg commit).
fn looks_transient(err: &(dyn StdError + 'static)) -> bool {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as K;
            if matches!(
                http.kind(),
                K::Connect | K::Request | K::Timeout | K::Interrupted
            ) {
                return true;
            }
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            if matches!(
                io.kind(),
                K::TimedOut
                    | K::ConnectionReset
                    | K::ConnectionAborted
                    | K::BrokenPipe
                    | K::Interrupted
                    | K::UnexpectedEof
            ) {
                return true;
            }
        }
        if message_looks_transient(&e.to_string()) {
            return true;
        }
        current = e.source();
    }
    false
}

/// Heuristics on an error's text for causes that are only visible there
/// (object_store's retry error is not public, so the HTTP status is only
/// known from its message "Server returned non-2xx status code: 503 ...").
fn message_looks_transient(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    const NEEDLES: [&str; 10] = [
        "timed out",
        "timeout",
        "connection reset",
        "connection closed",
        "connection aborted",
        "broken pipe",
        "slowdown",
        "slow down",
        "too many requests",
        "temporarily unavailable",
    ];
    if NEEDLES.iter().any(|n| lower.contains(n)) {
        return true;
    }
    // "status code: 503 Service Unavailable" and similar.
    if let Some(pos) = lower.find("status code: ") {
        let digits: String = lower[pos + "status code: ".len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if let Ok(status) = digits.parse::<u16>() {
            return status == 429 || (500..600).contains(&status);
        }
    }
    false
}

/// Finds a [`TlError`] that a callback or the storage layer put into a
/// DataFusion error chain, so that its code survives the trip.
fn find_tl_error<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a TlError> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(tl) = e.downcast_ref::<TlError>() {
            return Some(tl);
        }
        current = e.source();
    }
    None
}

/// The phase in which a DataFusion error happened decides the default code:
/// parse and plan failures are the caller's fault (TL_INVALID), failures
/// while running a plan are TL_EXECUTION.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Planning,
    Execution,
}

/// The code of a storage or Parquet failure in a DataFusion error chain,
/// e.g. of a data file read while a plan runs: object_store errors are
/// classified as for the C API ([`object_store_code`]); a Parquet file that
/// does not decode is TL_CORRUPT.
fn storage_code(err: &(dyn StdError + 'static), phase: Phase) -> Option<TlCode> {
    use parquet::errors::ParquetError as P;
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(os) = e.downcast_ref::<object_store::Error>() {
            return Some(object_store_code(os));
        }
        match e.downcast_ref::<P>() {
            // External carries its cause (often an object_store error).
            Some(P::External(_)) | None => {}
            Some(P::NYI(_)) => return Some(TlCode::Unsupported),
            Some(_) if phase == Phase::Execution => return Some(TlCode::Corrupt),
            Some(_) => {}
        }
        current = e.source();
    }
    None
}

/// Converts a DataFusion error into a [`TlError`] with DataFusion's message.
pub fn from_datafusion(err: &DataFusionError, phase: Phase) -> TlError {
    if let Some(tl) = find_tl_error(err) {
        return tl.clone();
    }
    let code = match err.find_root() {
        DataFusionError::NotImplemented(_) => TlCode::Unsupported,
        DataFusionError::Internal(_) => TlCode::Internal,
        _ => storage_code(err, phase).unwrap_or(match phase {
            Phase::Planning => TlCode::Invalid,
            Phase::Execution => TlCode::Execution,
        }),
    };
    TlError::new(code, err.strip_backtrace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_causes_tell_a_timeout_from_a_reset() {
        use object_store::client::{HttpError, HttpErrorKind as K};
        let cause = |kind| {
            let err = HttpError::new(kind, std::io::Error::other("error sending request"));
            transport_cause(&err)
        };
        assert!(cause(K::Timeout).unwrap().starts_with("timed out"));
        assert!(cause(K::Interrupted).unwrap().contains("closed or reset"));
        assert!(cause(K::Request).unwrap().contains("closed or reset"));
        // A refused connection has its own hint (Store::error); a body that
        // does not decode is no transport failure.
        assert_eq!(cause(K::Connect), None);
        assert_eq!(cause(K::Decode), None);
        assert_eq!(transport_cause(&std::io::Error::other("x")), None);
    }

    #[test]
    fn transient_messages() {
        assert!(message_looks_transient(
            "Error performing GET in 1s - Server returned non-2xx status code: 503 Service Unavailable: "
        ));
        assert!(message_looks_transient("operation timed out"));
        assert!(!message_looks_transient(
            "Server returned non-2xx status code: 403 Forbidden"
        ));
        assert!(!message_looks_transient("No such file or directory"));
    }

    #[test]
    fn tl_error_survives_datafusion() {
        let err = TlError::new(TlCode::StorageRetryable, "boom").into_datafusion();
        let err = DataFusionError::Context("planning".into(), Box::new(err));
        let tl = from_datafusion(&err, Phase::Planning);
        assert_eq!(tl.code, TlCode::StorageRetryable);
        assert_eq!(tl.message, "boom");
    }

    #[test]
    fn storage_errors_keep_their_kind() {
        let missing = object_store::Error::NotFound {
            path: "d/x.parquet".into(),
            source: "gone".into(),
        };
        let err = DataFusionError::ObjectStore(Box::new(missing));
        assert_eq!(
            from_datafusion(&err, Phase::Execution).code,
            TlCode::NotFound
        );
        let busy = object_store::Error::Generic {
            store: "S3",
            source: "Server returned non-2xx status code: 503 Service Unavailable".into(),
        };
        let err = DataFusionError::ParquetError(Box::new(parquet::errors::ParquetError::External(
            Box::new(busy),
        )));
        let tl = from_datafusion(&err, Phase::Execution);
        assert_eq!(tl.code, TlCode::StorageRetryable);
        assert!(tl.message.contains("503"), "{}", tl.message);
        let corrupt = DataFusionError::ParquetError(Box::new(
            parquet::errors::ParquetError::General("Invalid Parquet file. Corrupt footer".into()),
        ));
        assert_eq!(
            from_datafusion(&corrupt, Phase::Execution).code,
            TlCode::Corrupt
        );
        assert_eq!(TlCode::from_raw(10), Some(TlCode::Corrupt));
        assert_eq!(TlCode::from_raw(0), None);
        assert_eq!(TlCode::from_raw(11), Some(TlCode::Cancelled));
        assert_eq!(TlCode::from_raw(12), None);
    }

    #[test]
    fn datafusion_codes() {
        let plan = DataFusionError::Plan("bad".into());
        assert_eq!(
            from_datafusion(&plan, Phase::Planning).code,
            TlCode::Invalid
        );
        let exec = DataFusionError::Execution("bad".into());
        assert_eq!(
            from_datafusion(&exec, Phase::Execution).code,
            TlCode::Execution
        );
        let ni = DataFusionError::NotImplemented("x".into());
        assert_eq!(
            from_datafusion(&ni, Phase::Planning).code,
            TlCode::Unsupported
        );
    }
}
