//! Storage request tracing (`TIMELAKE_TRACE=storage`).
//!
//! [`TracingStore`] wraps the store's client and prints one line per request
//! to stderr: `timelake storage: <METHOD> <key> <bytes> bytes <ms> ms`. It is
//! an `ObjectStore` itself, so the requests DataFusion makes during scans are
//! traced exactly like the ones made through the C API.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    Result, UploadPart,
};

/// Whether `TIMELAKE_TRACE` asks for storage tracing.
pub fn storage_tracing_enabled() -> bool {
    std::env::var("TIMELAKE_TRACE")
        .map(|v| v.contains("storage"))
        .unwrap_or(false)
}

/// `location` relative to `prefix` ('/'-separated), or the whole location
/// when it is not below the prefix.
pub fn relative_key(prefix: &Path, location: &Path) -> String {
    match location.prefix_match(prefix) {
        Some(parts) => parts
            .map(|p| p.as_ref().to_string())
            .collect::<Vec<_>>()
            .join("/"),
        None => location.to_string(),
    }
}

/// Prints one trace line when dropped (so streamed bodies are timed until
/// they are fully consumed or abandoned).
struct TraceLine {
    method: &'static str,
    key: String,
    bytes: u64,
    start: Instant,
}

impl TraceLine {
    fn new(method: &'static str, key: String) -> Self {
        Self {
            method,
            key,
            bytes: 0,
            start: Instant::now(),
        }
    }
}

impl Drop for TraceLine {
    fn drop(&mut self) {
        eprintln!(
            "timelake storage: {} {} {} bytes {} ms",
            self.method,
            self.key,
            self.bytes,
            self.start.elapsed().as_millis()
        );
    }
}

/// An `ObjectStore` that delegates to `inner` and traces every request.
#[derive(Debug)]
pub struct TracingStore {
    inner: Arc<dyn ObjectStore>,
    /// Keys are printed relative to the warehouse prefix, like the C API's.
    prefix: Path,
}

impl TracingStore {
    pub fn new(inner: Arc<dyn ObjectStore>, prefix: Path) -> Self {
        Self { inner, prefix }
    }

    fn key(&self, location: &Path) -> String {
        relative_key(&self.prefix, location)
    }

    /// A listed prefix; the store root shows as "/".
    fn prefix_key(&self, prefix: Option<&Path>) -> String {
        match prefix.map(|p| self.key(p)) {
            Some(key) if !key.is_empty() => key,
            _ => "/".to_string(),
        }
    }
}

impl fmt::Display for TracingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tracing({})", self.inner)
    }
}

/// Traces a multipart upload as one MULTIPART line when it completes.
#[derive(Debug)]
struct TracingUpload {
    inner: Box<dyn MultipartUpload>,
    key: String,
    bytes: u64,
    start: Instant,
}

#[async_trait]
impl MultipartUpload for TracingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.bytes += data.content_length() as u64;
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let mut line = TraceLine::new("MULTIPART", self.key.clone());
        line.start = self.start;
        line.bytes = self.bytes;
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

#[async_trait]
impl ObjectStore for TracingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let method = match opts.mode {
            PutMode::Overwrite => "PUT",
            PutMode::Create => "PUT_IF_ABSENT",
            PutMode::Update(_) => "PUT_IF_MATCH",
        };
        let mut line = TraceLine::new(method, self.key(location));
        line.bytes = payload.content_length() as u64;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let start = Instant::now();
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(TracingUpload {
            inner,
            key: self.key(location),
            bytes: 0,
            start,
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let method = if options.head {
            "HEAD"
        } else if options.range.is_some() {
            "GET_RANGE"
        } else {
            "GET"
        };
        let mut line = TraceLine::new(method, self.key(location));
        let mut result = self.inner.get_opts(location, options).await?;
        if method == "HEAD" {
            return Ok(result);
        }
        line.bytes = result.range.end - result.range.start;
        // A streamed body is timed until it has been consumed: the line moves
        // into the stream and is printed when the stream is dropped.
        if let GetResultPayload::Stream(stream) = result.payload {
            result.payload = GetResultPayload::Stream(
                stream
                    .map(move |chunk| {
                        let _keep_until_stream_dropped = &line;
                        chunk
                    })
                    .boxed(),
            );
        }
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let mut line = TraceLine::new("GET_RANGE", self.key(location));
        let result = self.inner.get_ranges(location, ranges).await?;
        line.bytes = result.iter().map(|b| b.len() as u64).sum();
        Ok(result)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let prefix = self.prefix.clone();
        // Each yielded path is one completed delete; the time reported is the
        // time since the previous one (deletes may be batched by the backend).
        let mut last = Instant::now();
        self.inner
            .delete_stream(locations)
            .map(move |res| {
                if let Ok(path) = &res {
                    let mut line = TraceLine::new("DELETE", relative_key(&prefix, path));
                    line.start = last;
                    last = Instant::now();
                }
                res
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let line = TraceLine::new("LIST", self.prefix_key(prefix));
        self.inner
            .list(prefix)
            .map(move |item| {
                let _keep_until_stream_dropped = &line;
                item
            })
            .boxed()
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let line = TraceLine::new("LIST", self.prefix_key(prefix));
        self.inner
            .list_with_offset(prefix, offset)
            .map(move |item| {
                let _keep_until_stream_dropped = &line;
                item
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let _line = TraceLine::new("LIST", self.prefix_key(prefix));
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let _line = TraceLine::new("COPY", format!("{} {}", self.key(from), self.key(to)));
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let _line = TraceLine::new("RENAME", format!("{} {}", self.key(from), self.key(to)));
        self.inner.rename_opts(from, to, options).await
    }
}
