//! The C ABI of `include/timelake_platform.h`.
//!
//! Every entry point catches panics (a panic must never unwind into C++)
//! and reports them as TL_INTERNAL. Free functions accept NULL. Pointers
//! passed in are borrowed for the duration of the call only.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use bytes::Bytes;

use crate::callbacks::{Callbacks, TlCatalogCallbacks, TlSink};
use crate::error::{panic_message, TlCode, TlError, TlResult};
use crate::footers;
use crate::session::Session;
use crate::store::{Listing, Put, Store};
use crate::stream;

/// `TlStore` of the header.
pub struct TlStore {
    store: Arc<Store>,
}

/// `TlSession` of the header.
pub struct TlSession {
    session: Session,
}

/// `TlBytes` of the header.
#[repr(C)]
#[derive(Debug)]
pub struct TlBytes {
    pub data: *mut u8,
    pub len: usize,
}

/// `TlObjectMeta` of the header.
#[repr(C)]
#[derive(Debug)]
pub struct TlObjectMeta {
    pub path: *mut c_char,
    pub size: u64,
    pub last_modified_ms: i64,
}

/// `TlListing` of the header.
#[repr(C)]
#[derive(Debug)]
pub struct TlListing {
    pub objects: *mut TlObjectMeta,
    pub n_objects: usize,
    pub prefixes: *mut *mut c_char,
    pub n_prefixes: usize,
}

// --- helpers ---------------------------------------------------------------

/// Runs `body`, catching panics, and reports a failure through `err`.
fn guard(err: *mut *mut c_char, body: impl FnOnce() -> TlResult<()>) -> TlCode {
    let outcome = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(TlError::internal(panic_message(payload.as_ref()))));
    match outcome {
        Ok(()) => TlCode::Ok,
        Err(e) => {
            if !err.is_null() {
                // SAFETY: a non-NULL `err` points to a writable `char*`.
                unsafe { *err = into_c_string(&e.message) };
            }
            e.code
        }
    }
}

/// A Rust-allocated C string (free with `tl_string_free`). Interior NULs,
/// which C cannot represent, are escaped.
fn into_c_string(s: &str) -> *mut c_char {
    CString::new(s.replace('\0', "\\0"))
        .expect("NULs were escaped")
        .into_raw()
}

/// Borrows a C string argument as UTF-8.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string valid for the call.
unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> TlResult<&'a str> {
    if p.is_null() {
        return Err(TlError::invalid(format!("{name} is NULL")));
    }
    // SAFETY: per this function's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| TlError::invalid(format!("{name} is not valid UTF-8")))
}

/// Borrows an object handle.
///
/// # Safety
/// `p` must be NULL or a live handle of type `T` made by this crate.
unsafe fn handle<'a, T>(p: *const T, name: &str) -> TlResult<&'a T> {
    // SAFETY: per this function's contract.
    unsafe { p.as_ref() }.ok_or_else(|| TlError::invalid(format!("{name} is NULL")))
}

/// Writes `value` to an out-parameter that must be present.
///
/// # Safety
/// `p` must be NULL or valid for writes of `T`.
unsafe fn write_out<T>(p: *mut T, name: &str, value: T) -> TlResult<()> {
    if p.is_null() {
        return Err(TlError::invalid(format!("{name} is NULL")));
    }
    // SAFETY: per this function's contract; the previous content is not a
    // value we own (out-parameters are uninitialised or caller-owned), so it
    // is overwritten without being dropped.
    unsafe { ptr::write(p, value) };
    Ok(())
}

/// Checks an out-parameter before doing any work, so that a NULL one does
/// not lose the work's result (and, for puts, hide a completed write).
fn require<T>(p: *mut T, name: &str) -> TlResult<()> {
    if p.is_null() {
        Err(TlError::invalid(format!("{name} is NULL")))
    } else {
        Ok(())
    }
}

fn into_tl_bytes(bytes: Bytes) -> TlBytes {
    let boxed: Box<[u8]> = Vec::from(bytes).into_boxed_slice();
    let len = boxed.len();
    TlBytes {
        data: Box::into_raw(boxed) as *mut u8,
        len,
    }
}

/// Moves a vector to C as a pointer (NULL when empty) and a length.
fn into_c_array<T>(items: Vec<T>) -> (*mut T, usize) {
    if items.is_empty() {
        return (ptr::null_mut(), 0);
    }
    let boxed = items.into_boxed_slice();
    let len = boxed.len();
    (Box::into_raw(boxed) as *mut T, len)
}

/// Takes back an array made by [`into_c_array`].
///
/// # Safety
/// `(data, len)` must come from `into_c_array::<T>` and not be freed yet.
unsafe fn from_c_array<T>(data: *mut T, len: usize) -> Vec<T> {
    if data.is_null() {
        return Vec::new();
    }
    // SAFETY: per this function's contract, this is the boxed slice leaked
    // by `into_c_array`.
    unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(data, len)) }.into_vec()
}

/// Copies `(data, len)` into `Bytes`.
///
/// # Safety
/// `data` must point to `len` readable bytes, or be NULL with `len` 0.
unsafe fn bytes_arg(data: *const u8, len: usize, name: &str) -> TlResult<Bytes> {
    if len == 0 {
        return Ok(Bytes::new());
    }
    if data.is_null() {
        return Err(TlError::invalid(format!("{name} is NULL")));
    }
    // SAFETY: per this function's contract.
    Ok(Bytes::copy_from_slice(unsafe {
        std::slice::from_raw_parts(data, len)
    }))
}

/// Memory the caller lends instead of copying (`TlLent` in the header):
/// `release(owner)` runs once, on any thread, when the last `Bytes` made of
/// it is dropped, or at once when the call fails first.
#[repr(C)]
pub struct TlLent {
    pub data: *const u8,
    pub len: usize,
    pub release: Option<unsafe extern "C" fn(owner: *mut c_void)>,
    pub owner: *mut c_void,
}

struct Lent(TlLent);

// SAFETY: the header requires `release` to be callable from any thread, and
// the bytes are not written while lent.
unsafe impl Send for Lent {}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        if self.0.len == 0 || self.0.data.is_null() {
            return &[];
        }
        // SAFETY: `data` points to `len` bytes until released (header).
        unsafe { std::slice::from_raw_parts(self.0.data, self.0.len) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: called once, with the owner given (header).
            unsafe { release(self.0.owner) };
        }
    }
}

impl Lent {
    fn into_bytes(self, name: &str) -> TlResult<Bytes> {
        if self.0.len == 0 {
            return Ok(Bytes::new());
        }
        if self.0.data.is_null() {
            return Err(TlError::invalid(format!("{name} is NULL")));
        }
        Ok(Bytes::from_owner(self))
    }
}

// --- strings and bytes -------------------------------------------------------

/// Frees a string returned by this library.
///
/// # Safety
/// `s` must be NULL or a string returned by this library, not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_string_free(s: *mut c_char) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !s.is_null() {
            // SAFETY: per this function's contract, `s` came from
            // `CString::into_raw`.
            drop(unsafe { CString::from_raw(s) });
        }
    }));
}

/// Frees the data of `bytes` and resets it.
///
/// # Safety
/// `bytes` must be NULL or point to a `TlBytes` filled by this library (or
/// zeroed).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_bytes_free(bytes: *mut TlBytes) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        if let Some(b) = unsafe { bytes.as_mut() } {
            // SAFETY: `data`/`len` were produced by `into_tl_bytes`.
            drop(unsafe { from_c_array(b.data, b.len) });
            b.data = ptr::null_mut();
            b.len = 0;
        }
    }));
}

// --- storage -----------------------------------------------------------------

/// See the header.
///
/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_open(
    url: *const c_char,
    option_keys: *const *const c_char,
    option_values: *const *const c_char,
    n_options: usize,
    out: *mut *mut TlStore,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out, "out")?;
        // SAFETY: the caller passes valid strings and arrays (header).
        let url = unsafe { str_arg(url, "url") }?;
        let mut options = Vec::with_capacity(n_options);
        if n_options > 0 {
            if option_keys.is_null() || option_values.is_null() {
                return Err(TlError::invalid("option arrays are NULL"));
            }
            for i in 0..n_options {
                // SAFETY: both arrays hold `n_options` string pointers.
                let (k, v) = unsafe { (*option_keys.add(i), *option_values.add(i)) };
                // SAFETY: each entry is a valid C string (header).
                let key = unsafe { str_arg(k, "option key") }?;
                // SAFETY: as for the key.
                let value = unsafe { str_arg(v, "option value") }?;
                options.push((key.to_string(), value.to_string()));
            }
        }
        let store = Store::open(url, &options)?;
        let handle = Box::into_raw(Box::new(TlStore {
            store: Arc::new(store),
        }));
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", handle) }
    })
}

/// # Safety
/// `store` must be NULL or a handle from `tl_store_open`, not used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_free(store: *mut TlStore) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !store.is_null() {
            // SAFETY: per this function's contract, the box leaked by
            // `tl_store_open`. Sessions keep their own reference.
            drop(unsafe { Box::from_raw(store) });
        }
    }));
}

/// # Safety
/// `store` must be NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_root_url(store: *const TlStore) -> *mut c_char {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        match unsafe { store.as_ref() } {
            Some(s) => into_c_string(s.store.root_url()),
            None => ptr::null_mut(),
        }
    }))
    .unwrap_or(ptr::null_mut())
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_get(
    store: *mut TlStore,
    path: *const c_char,
    out: *mut TlBytes,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out, "out")?;
        // SAFETY: valid handle and string (header).
        let (store, path) = unsafe { (handle(store, "store")?, str_arg(path, "path")?) };
        let bytes = store.store.get(path)?;
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", into_tl_bytes(bytes)) }
    })
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_get_range(
    store: *mut TlStore,
    path: *const c_char,
    offset: u64,
    length: u64,
    out: *mut TlBytes,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out, "out")?;
        // SAFETY: valid handle and string (header).
        let (store, path) = unsafe { (handle(store, "store")?, str_arg(path, "path")?) };
        let bytes = store.store.get_range(path, offset, length)?;
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", into_tl_bytes(bytes)) }
    })
}

/// # Safety
/// Pointer arguments must be valid as described in the header; `size` and
/// `etag` may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_head(
    store: *mut TlStore,
    path: *const c_char,
    size: *mut u64,
    etag: *mut *mut c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        // SAFETY: valid handle and string (header).
        let (store, path) = unsafe { (handle(store, "store")?, str_arg(path, "path")?) };
        let head = store.store.head(path)?;
        if !size.is_null() {
            // SAFETY: a non-NULL `size` is writable.
            unsafe { *size = head.size };
        }
        if !etag.is_null() {
            let value = head.etag.as_deref().map_or(ptr::null_mut(), into_c_string);
            // SAFETY: a non-NULL `etag` is writable.
            unsafe { *etag = value };
        }
        Ok(())
    })
}

/// # Safety
/// Pointer arguments must be valid as described in the header; `data` may
/// be NULL when `len` is 0.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tl_store_put(
    store: *mut TlStore,
    path: *const c_char,
    data: *const u8,
    len: usize,
    mode: c_int,
    etag: *const c_char,
    out_etag: *mut *mut c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        // SAFETY: `data` points to `len` readable bytes for the call (header).
        let payload = unsafe { bytes_arg(data, len, "data") }?;
        // SAFETY: the caller's pointers (header).
        unsafe { put(store, path, payload, mode, etag, out_etag) }
    })
}

/// # Safety
/// As `tl_store_put`; `data` is released exactly once, whatever the outcome.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_put_lent(
    store: *mut TlStore,
    path: *const c_char,
    data: TlLent,
    mode: c_int,
    etag: *const c_char,
    out_etag: *mut *mut c_char,
    err: *mut *mut c_char,
) -> TlCode {
    let lent = Lent(data);
    guard(err, || {
        let payload = lent.into_bytes("data")?;
        // SAFETY: the caller's pointers (header).
        unsafe { put(store, path, payload, mode, etag, out_etag) }
    })
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
unsafe fn put(
    store: *mut TlStore,
    path: *const c_char,
    payload: Bytes,
    mode: c_int,
    etag: *const c_char,
    out_etag: *mut *mut c_char,
) -> TlResult<()> {
    // SAFETY: valid handle and string (header).
    let (store, path) = unsafe { (handle(store, "store")?, str_arg(path, "path")?) };
    let mode = match mode {
        0 => Put::Overwrite,
        1 => Put::Create,
        2 => Put::Update {
            // SAFETY: a valid string when given (header).
            etag: unsafe { str_arg(etag, "etag (required by TL_PUT_UPDATE)") }?.to_string(),
        },
        other => return Err(TlError::invalid(format!("invalid put mode {other}"))),
    };
    let new_etag = store.store.put(path, payload, mode)?;
    if !out_etag.is_null() {
        let value = new_etag.as_deref().map_or(ptr::null_mut(), into_c_string);
        // SAFETY: a non-NULL `out_etag` is writable.
        unsafe { *out_etag = value };
    }
    Ok(())
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_delete(
    store: *mut TlStore,
    path: *const c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        // SAFETY: valid handle and string (header).
        let (store, path) = unsafe { (handle(store, "store")?, str_arg(path, "path")?) };
        store.store.delete(path)
    })
}

fn into_tl_listing(listing: Listing) -> TlListing {
    let objects = listing
        .objects
        .into_iter()
        .map(|o| TlObjectMeta {
            path: into_c_string(&o.key),
            size: o.size,
            last_modified_ms: o.last_modified_ms,
        })
        .collect();
    let prefixes = listing.prefixes.iter().map(|p| into_c_string(p)).collect();
    let (objects, n_objects) = into_c_array(objects);
    let (prefixes, n_prefixes) = into_c_array(prefixes);
    TlListing {
        objects,
        n_objects,
        prefixes,
        n_prefixes,
    }
}

/// # Safety
/// Pointer arguments must be valid as described in the header; a NULL
/// `prefix` means the root.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_list(
    store: *mut TlStore,
    prefix: *const c_char,
    delimiter: c_int,
    out: *mut TlListing,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out, "out")?;
        // SAFETY: valid handle and string (header).
        let store = unsafe { handle(store, "store") }?;
        let prefix = if prefix.is_null() {
            ""
        } else {
            // SAFETY: a valid string when given.
            unsafe { str_arg(prefix, "prefix") }?
        };
        let listing = store.store.list(prefix, delimiter != 0)?;
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", into_tl_listing(listing)) }
    })
}

/// # Safety
/// `listing` must be NULL or filled by `tl_store_list` (or zeroed).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_listing_free(listing: *mut TlListing) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        let Some(l) = (unsafe { listing.as_mut() }) else {
            return;
        };
        // SAFETY: the arrays and strings were made by `into_tl_listing`.
        unsafe {
            for object in from_c_array(l.objects, l.n_objects) {
                tl_string_free(object.path);
            }
            for prefix in from_c_array(l.prefixes, l.n_prefixes) {
                tl_string_free(prefix);
            }
        }
        *l = TlListing {
            objects: ptr::null_mut(),
            n_objects: 0,
            prefixes: ptr::null_mut(),
            n_prefixes: 0,
        };
    }));
}

// --- footers -----------------------------------------------------------------

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_footer_from_tail(
    store: *mut TlStore,
    path: *const c_char,
    tail: *const u8,
    tail_len: usize,
    file_size: u64,
    out: *mut TlBytes,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out, "out")?;
        // SAFETY: valid handle, string and buffer (header).
        let (store, path, tail) = unsafe {
            (
                handle(store, "store")?,
                str_arg(path, "path")?,
                bytes_arg(tail, tail_len, "tail")?,
            )
        };
        let location = store.store.location(path)?;
        let blob =
            footers::blob_from_tail(store.store.footers().as_ref(), location, tail, file_size)?
                .unwrap_or_default();
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", into_tl_bytes(Bytes::from(blob))) }
    })
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_footer_remember(
    store: *mut TlStore,
    path: *const c_char,
    file_size: u64,
    blob: *const u8,
    blob_len: usize,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        // SAFETY: valid handle, string and buffer (header).
        let (store, path, blob) = unsafe {
            (
                handle(store, "store")?,
                str_arg(path, "path")?,
                bytes_arg(blob, blob_len, "blob")?,
            )
        };
        let location = store.store.location(path)?;
        footers::decode_blob(store.store.footers().as_ref(), location, file_size, blob)
    })
}

// --- streaming uploads -------------------------------------------------------

/// `TlUpload` of the header.
pub struct TlUpload {
    upload: crate::store::Upload,
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_upload_begin(
    store: *mut TlStore,
    path: *const c_char,
    out: *mut *mut TlUpload,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out, "out")?;
        // SAFETY: valid handle and string (header).
        let (store, path) = unsafe { (handle(store, "store")?, str_arg(path, "path")?) };
        let upload = crate::store::Upload::begin(Arc::clone(&store.store), path)?;
        let handle = Box::into_raw(Box::new(TlUpload { upload }));
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", handle) }
    })
}

/// # Safety
/// `upload` must be a live handle from `tl_store_upload_begin`, not used
/// from another thread during the call; `data` must point to `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_upload_part(
    upload: *mut TlUpload,
    data: *const u8,
    len: usize,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        if len == 0 || data.is_null() {
            return Err(TlError::invalid("an upload part must not be empty"));
        }
        // SAFETY: `data` points to `len` readable bytes for the call; they are
        // copied because the part is sent after the call returns.
        let part = Bytes::copy_from_slice(unsafe { std::slice::from_raw_parts(data, len) });
        // SAFETY: a live handle used by this thread only (header).
        unsafe { upload_part(upload, part) }
    })
}

/// # Safety
/// As `tl_store_upload_part`; `data` is released exactly once, whatever the
/// outcome.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_upload_part_lent(
    upload: *mut TlUpload,
    data: TlLent,
    err: *mut *mut c_char,
) -> TlCode {
    let lent = Lent(data);
    guard(err, || {
        let part = lent.into_bytes("an upload part")?;
        if part.is_empty() {
            return Err(TlError::invalid("an upload part must not be empty"));
        }
        // SAFETY: a live handle used by this thread only (header).
        unsafe { upload_part(upload, part) }
    })
}

/// # Safety
/// `upload` is NULL or a live handle used by this thread only.
unsafe fn upload_part(upload: *mut TlUpload, part: Bytes) -> TlResult<()> {
    // SAFETY: per this function's contract.
    let upload = unsafe { upload.as_mut() }.ok_or_else(|| TlError::invalid("upload is NULL"))?;
    upload.upload.put_part(part)
}

/// # Safety
/// `upload` must be a live handle from `tl_store_upload_begin`; it is freed
/// by this call whatever the outcome. `out_etag` may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_upload_finish(
    upload: *mut TlUpload,
    out_etag: *mut *mut c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        if upload.is_null() {
            return Err(TlError::invalid("upload is NULL"));
        }
        // SAFETY: per this function's contract, the box leaked by
        // `tl_store_upload_begin`; the caller does not use it again.
        let upload = unsafe { Box::from_raw(upload) };
        let etag = upload.upload.finish()?;
        if !out_etag.is_null() {
            let value = etag.as_deref().map_or(ptr::null_mut(), into_c_string);
            // SAFETY: a non-NULL `out_etag` is writable.
            unsafe { *out_etag = value };
        }
        Ok(())
    })
}

/// # Safety
/// `upload` must be NULL or a live handle from `tl_store_upload_begin`; it is
/// freed by this call whatever the outcome.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_store_upload_abort(
    upload: *mut TlUpload,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        if upload.is_null() {
            return Ok(());
        }
        // SAFETY: as for `tl_store_upload_finish`.
        let upload = unsafe { Box::from_raw(upload) };
        upload.upload.abort()
    })
}

// --- sinks -------------------------------------------------------------------

/// # Safety
/// `sink` must be NULL or the sink passed to the running callback; `data`
/// must hold `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_sink_write(sink: *mut TlSink, data: *const c_char, len: usize) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        let Some(sink) = (unsafe { sink.as_mut() }) else {
            return;
        };
        if len > 0 && !data.is_null() {
            // SAFETY: `data` holds `len` readable bytes.
            let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, len) };
            sink.bytes.extend_from_slice(bytes);
        }
    }));
}

/// # Safety
/// `sink` must be NULL or the sink passed to the running callback; `schema`
/// must be NULL or a valid Arrow C schema, which is moved into the sink.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_sink_set_schema(sink: *mut TlSink, schema: *mut FFI_ArrowSchema) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        let Some(sink) = (unsafe { sink.as_mut() }) else {
            return;
        };
        // SAFETY: `schema` is NULL or a valid ArrowSchema.
        match unsafe { schema.as_ref() } {
            // An already released schema has nothing to move.
            Some(s) if s.release.is_some() => {}
            _ => return,
        }
        // SAFETY: a valid, unreleased schema: `from_raw` moves it out and
        // leaves a released one behind, as the C data interface's "move"
        // requires. The sink now owns (and eventually releases) it.
        sink.schema = Some(unsafe { FFI_ArrowSchema::from_raw(schema) });
    }));
}

/// # Safety
/// `sink` must be NULL or the sink passed to the running callback; `schema`
/// and `array` must be NULL or a valid Arrow C schema and an array of that
/// (struct) type, which are moved into the sink.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_sink_set_batch(
    sink: *mut TlSink,
    schema: *mut FFI_ArrowSchema,
    array: *mut FFI_ArrowArray,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        let live_schema = matches!(unsafe { schema.as_ref() }, Some(s) if s.release.is_some());
        // SAFETY: per this function's contract.
        let live_array = matches!(unsafe { array.as_ref() }, Some(a) if !a.is_released());
        // Both are taken, released or not, so that the caller never owns
        // half of a batch: what is not moved into the sink is released here.
        // SAFETY: valid, unreleased structs (checked above): `from_raw`
        // moves each out and leaves a released one behind, as the C data
        // interface's "move" requires; dropping a moved struct releases it.
        let taken_schema = live_schema.then(|| unsafe { FFI_ArrowSchema::from_raw(schema) });
        // SAFETY: as for the schema.
        let taken_array = live_array.then(|| unsafe { FFI_ArrowArray::from_raw(array) });
        // SAFETY: per this function's contract.
        let Some(sink) = (unsafe { sink.as_mut() }) else {
            return;
        };
        if let (Some(s), Some(a)) = (taken_schema, taken_array) {
            sink.batch = Some((s, a));
        }
    }));
}

/// # Safety
/// `sink` must be NULL or the sink passed to the running callback.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_sink_set_code(sink: *mut TlSink, code: c_int) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        if let Some(sink) = unsafe { sink.as_mut() } {
            sink.code = TlCode::from_raw(code);
        }
    }));
}

// --- result streams ----------------------------------------------------------

/// # Safety
/// `stream` must be NULL or a valid (possibly released) Arrow C stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_stream_error_code(stream: *mut FFI_ArrowArrayStream) -> TlCode {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        unsafe { stream::last_code(stream) }
    }))
    .unwrap_or(TlCode::Internal)
}

// --- sessions ----------------------------------------------------------------

/// # Safety
/// Pointer arguments must be valid as described in the header; the
/// callbacks must behave as documented there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_session_new(
    store: *mut TlStore,
    callbacks: TlCatalogCallbacks,
    target_partitions: u32,
    out: *mut *mut TlSession,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        // First of all: from here on the callbacks' ctx is ours and released
        // exactly once, whatever fails below.
        let callbacks = Callbacks::new(callbacks)?;
        require(out, "out")?;
        // SAFETY: a valid handle (header).
        let store = unsafe { handle(store, "store") }?;
        let session = Session::new(Arc::clone(&store.store), callbacks, target_partitions)?;
        let handle = Box::into_raw(Box::new(TlSession { session }));
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", handle) }
    })
}

/// # Safety
/// `session` must be NULL or a handle from `tl_session_new`, not used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_session_free(session: *mut TlSession) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !session.is_null() {
            // SAFETY: per this function's contract, the box leaked by
            // `tl_session_new`.
            drop(unsafe { Box::from_raw(session) });
        }
    }));
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_session_set_option(
    session: *mut TlSession,
    key: *const c_char,
    value: *const c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        // SAFETY: valid handle and strings (header).
        let (session, key, value) = unsafe {
            (
                handle(session, "session")?,
                str_arg(key, "key")?,
                str_arg(value, "value")?,
            )
        };
        session.session.set_option(key, value)
    })
}

/// # Safety
/// `session` must be NULL or a live handle from `tl_session_new`, not used
/// by another thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_session_bypass_cache(session: *mut TlSession) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        if let Some(session) = unsafe { session.as_ref() } {
            session.session.bypass_cache();
        }
    }));
}

/// # Safety
/// `session` must be NULL or a live handle from `tl_session_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_session_interrupt(session: *const TlSession) {
    // No `guard` (it allocates on failure) and no catch_unwind: this runs in
    // signal handlers, and an atomic store cannot panic.
    // SAFETY: per this function's contract.
    if let Some(session) = unsafe { session.as_ref() } {
        session.session.interrupt();
    }
}

/// # Safety
/// Pointer arguments must be valid as described in the header; `out` is
/// overwritten without being released.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_session_sql(
    session: *mut TlSession,
    sql: *const c_char,
    out: *mut FFI_ArrowArrayStream,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out, "out")?;
        // SAFETY: valid handle and string (header).
        let (session, sql) = unsafe { (handle(session, "session")?, str_arg(sql, "sql")?) };
        let stream = session.session.sql(sql)?;
        // SAFETY: `out` was checked above.
        unsafe { write_out(out, "out", stream) }
    })
}

/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_session_explain_analyze(
    session: *mut TlSession,
    sql: *const c_char,
    out_text: *mut *mut c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out_text, "out_text")?;
        // SAFETY: valid handle and string (header).
        let (session, sql) = unsafe { (handle(session, "session")?, str_arg(sql, "sql")?) };
        let text = session.session.explain_analyze(sql)?;
        // SAFETY: `out_text` was checked above.
        unsafe { write_out(out_text, "out_text", into_c_string(&text)) }
    })
}

/// See `tl_sql_tables` in the header.
///
/// # Safety
/// Pointer arguments must be valid as described in the header.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tl_sql_tables(
    sql: *const c_char,
    out_names: *mut *mut c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out_names, "out_names")?;
        // SAFETY: a valid string (header).
        let sql = unsafe { str_arg(sql, "sql") }?;
        let names = crate::session::statement_tables(sql).join("\n");
        // SAFETY: `out_names` was checked above.
        unsafe { write_out(out_names, "out_names", into_c_string(&names)) }
    })
}

/// See `tl_session_describe_rollup` in the header.
#[no_mangle]
pub unsafe extern "C" fn tl_session_describe_rollup(
    session: *mut TlSession,
    select: *const c_char,
    out_json: *mut *mut c_char,
    err: *mut *mut c_char,
) -> TlCode {
    guard(err, || {
        require(out_json, "out_json")?;
        // SAFETY: valid handle and string (header).
        let (session, select) =
            unsafe { (handle(session, "session")?, str_arg(select, "select")?) };
        let text = session.session.describe_rollup(select)?;
        // SAFETY: `out_json` was checked above.
        unsafe { write_out(out_json, "out_json", into_c_string(&text)) }
    })
}
