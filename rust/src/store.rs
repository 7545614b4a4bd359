//! The storage layer: one object_store client per warehouse.
//!
//! A [`Store`] keeps the client for the whole bucket (or file-system root)
//! plus the object_store path of the warehouse inside it. Keys of the C API
//! are relative to that prefix. DataFusion is given the very same client for
//! the bucket's base URL, so scans and the C API share connections, retries
//! and tracing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use datafusion::execution::cache::cache_manager::{
    FileMetadataCache, DEFAULT_METADATA_CACHE_LIMIT,
};
use datafusion::execution::cache::default_cache::DefaultCache;
use futures::{StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutMode, PutOptions, PutPayload, UpdateVersion,
};
use url::Url;

use crate::cache::{CacheOptions, CachingStore};
use crate::error::{is_unreachable, object_store_code, transport_cause, TlCode, TlError, TlResult};
use crate::runtime;
use crate::trace::{relative_key, storage_tracing_enabled, TracingStore};

/// Payloads larger than this are uploaded in parts (overwrite mode only:
/// conditional puts need the single-request semantics).
pub const MULTIPART_THRESHOLD: usize = 8 * 1024 * 1024;
/// Part size of multipart uploads (S3 wants at least 5 MiB per part).
const PART_SIZE: usize = 8 * 1024 * 1024;
/// Parts uploaded concurrently.
const PART_CONCURRENCY: usize = 4;

/// How an object is written (mirrors `TlPutMode`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Put {
    Overwrite,
    Create,
    Update { etag: String },
}

/// Size and etag of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub size: u64,
    pub etag: Option<String>,
}

/// One listed object, with its key relative to the store root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    pub size: u64,
    pub last_modified_ms: i64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    pub objects: Vec<Listed>,
    /// Sub-"directories" (with a delimiter only), relative, no trailing '/'.
    pub prefixes: Vec<String>,
}

/// A warehouse location and its client.
#[derive(Debug)]
pub struct Store {
    /// The client every request goes through: the block cache
    /// ([`crate::cache`]) when one is configured, over `uncached`.
    client: Arc<dyn ObjectStore>,
    /// The client below the cache (tracing, when on, included).
    uncached: Arc<dyn ObjectStore>,
    prefix: Path,
    root_url: String,
    /// Scheme and authority ("file://", "s3://bucket", "memory://"): the URL
    /// DataFusion's object store registry knows the client by.
    base_url: Url,
    /// Option values that must never appear in a message.
    secrets: Vec<String>,
    /// Parquet footers of data files (with page indexes), shared by every
    /// session on this store: see [`crate::footers`].
    footers: Arc<FileMetadataCache>,
    /// Whether the storage endpoint has answered a request of this store
    /// (see [`Store::error`]).
    answered: AtomicBool,
}

impl Store {
    /// Option values that must never appear in a message (for redacting
    /// errors raised elsewhere, e.g. by DataFusion during a scan).
    pub fn secrets(&self) -> Arc<Vec<String>> {
        Arc::new(self.secrets.clone())
    }

    /// Opens the store rooted at `url` (see `tl_store_open`).
    pub fn open(url: &str, options: &[(String, String)]) -> TlResult<Self> {
        // Unparsable URLs are not echoed: they might carry credentials.
        let url = parse_location(url).map_err(|e| TlError::invalid(format!("open: {e}")))?;
        let shown = display_url(url.as_str());
        // The block cache's options are ours, not object_store's.
        let mut options = options.to_vec();
        let remote = !matches!(url.scheme(), "file" | "memory");
        let cache = CacheOptions::take_from(&mut options, remote)
            .map_err(|e| TlError::invalid(format!("open {shown}: {}", e.message)))?;
        let options = options.as_slice();
        let mut secrets: Vec<String> = options
            .iter()
            .filter(|(k, v)| is_secret(k, v))
            .map(|(_, v)| v.clone())
            .chain(url.password().map(str::to_string))
            .collect();

        if url.scheme() == "file" {
            let dir = url
                .to_file_path()
                .map_err(|_| TlError::invalid(format!("open {shown}: not a local path")))?;
            std::fs::create_dir_all(&dir).map_err(|e| {
                TlError::new(
                    TlCode::Storage,
                    format!("open {shown}: cannot create {}: {e}", dir.display()),
                )
            })?;
        }

        let (client, prefix): (Arc<dyn ObjectStore>, Path) = if url.scheme() == "memory" {
            // A fresh, private in-memory store (useful for tests).
            let prefix = Path::parse(url.path().trim_matches('/'))
                .map_err(|e| TlError::invalid(format!("open {shown}: {e}")))?;
            (Arc::new(InMemory::new()), prefix)
        } else {
            // Environment credentials first so that explicit options win.
            let environment = environment_options(&url);
            secrets.extend(
                environment
                    .iter()
                    .filter(|(k, v)| secret_key(k) && !v.is_empty())
                    .map(|(_, v)| v.clone()),
            );
            // object_store ignores keys it does not know: a misspelt option
            // would silently not apply.
            let options = checked_options(&url, options)?;
            let merged = environment.into_iter().chain(options);
            let (client, prefix) = object_store::parse_url_opts(&url, merged).map_err(|e| {
                // object_store may quote the URL it was given.
                let message = format!("open {shown}: {e}").replace(url.as_str(), &shown);
                TlError::new(object_store_code(&e), redact(&message, &secrets))
            })?;
            (Arc::from(client), prefix)
        };

        let client: Arc<dyn ObjectStore> = if storage_tracing_enabled() {
            Arc::new(TracingStore::new(client, prefix.clone()))
        } else {
            client
        };

        let base_url = Url::parse(&format!(
            "{}://{}",
            url.scheme(),
            &url[url::Position::BeforeHost..url::Position::AfterPort]
        ))
        .map_err(|e| TlError::invalid(format!("open {shown}: {e}")))?;

        // Above the tracing, so that a trace shows what reached storage.
        let uncached = Arc::clone(&client);
        let client: Arc<dyn ObjectStore> = if cache.enabled() {
            Arc::new(CachingStore::new(client, &base_url, &cache))
        } else {
            client
        };

        let root_url = if url.scheme() == "memory" && prefix.as_ref().is_empty() {
            "memory:///".to_string()
        } else {
            shown.trim_end_matches('/').to_string()
        };

        Ok(Self {
            client,
            uncached,
            prefix,
            root_url,
            base_url,
            secrets,
            footers: Arc::new(
                DefaultCache::new(DEFAULT_METADATA_CACHE_LIMIT).with_name("TimelakeFooters"),
            ),
            answered: AtomicBool::new(false),
        })
    }

    pub fn root_url(&self) -> &str {
        &self.root_url
    }

    pub fn base_url(&self) -> &Url {
        &self.base_url
    }

    /// The footer cache every session on this store reads (DataFusion's
    /// file metadata cache).
    pub fn footers(&self) -> &Arc<FileMetadataCache> {
        &self.footers
    }

    /// The (possibly caching and tracing) client, shared with DataFusion.
    pub fn client(&self) -> &Arc<dyn ObjectStore> {
        &self.client
    }

    /// The client without the block cache, for reads of files that are
    /// read once and then replaced (a compaction's inputs).
    pub fn uncached_client(&self) -> &Arc<dyn ObjectStore> {
        &self.uncached
    }

    /// The object_store path of a key relative to the store root.
    pub fn location(&self, key: &str) -> TlResult<Path> {
        if key.is_empty() || key.starts_with('/') {
            return Err(TlError::invalid(format!(
                "invalid key {key:?}: keys are relative to the store root and must not be empty or start with '/'"
            )));
        }
        self.join(key)
    }

    fn join(&self, relative: &str) -> TlResult<Path> {
        let rel = Path::parse(relative)
            .map_err(|e| TlError::invalid(format!("invalid key {relative:?}: {e}")))?;
        Ok(self.prefix.parts().chain(rel.parts()).collect())
    }

    /// The URL of a key, for messages ("memory:///" already ends in '/').
    fn url_of(&self, key: &str) -> String {
        let root = self.root_url.trim_end_matches('/');
        if root.ends_with(':') {
            format!("{}{key}", self.root_url)
        } else {
            format!("{root}/{key}")
        }
    }

    /// The result of a request, noting that the endpoint answered.
    fn done<T>(&self, op: &str, key: &str, result: object_store::Result<T>) -> TlResult<T> {
        match result {
            Ok(v) => {
                self.answered.store(true, Ordering::Relaxed);
                Ok(v)
            }
            Err(e) => Err(self.error(op, key, e)),
        }
    }

    /// A request's error. A connection that cannot be made is transient
    /// (the caller retries) once the endpoint has answered before; until
    /// then it is most likely a wrong endpoint or port, reported at once
    /// (after the client's own retries) instead of after every retry of
    /// every caller.
    fn error(&self, op: &str, key: &str, err: object_store::Error) -> TlError {
        let mut message = condense(&format!("{op} {}: {err}", self.url_of(key)));
        let mut code = object_store_code(&err);
        if asked_instance_metadata(&message) {
            // Without credentials object_store asks the metadata service
            // of cloud machines; its failure names an address that tells a
            // user nothing about what to do.
            return TlError::new(
                TlCode::Storage,
                format!(
                    "{op} {}: no S3 credentials found: set AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY (or --storage-option aws_access_key_id=... and \
                     aws_secret_access_key=...), or aws_skip_signature=true for a public \
                     bucket (the instance metadata service that cloud machines offer did \
                     not answer either)",
                    self.url_of(key)
                ),
            );
        }
        if let Some(cause) = transport_cause(&err) {
            message.push_str(&format!(" ({cause})"));
        }
        if !is_unreachable(&err) {
            self.answered.store(true, Ordering::Relaxed);
        } else if !self.answered.load(Ordering::Relaxed) {
            code = TlCode::Storage;
            message.push_str(
                " (no request to this storage endpoint has succeeded yet: check the endpoint \
                 URL, its port and the network)",
            );
        }
        TlError::new(code, redact(&message, &self.secrets))
    }

    /// Reads a whole object.
    pub fn get(&self, key: &str) -> TlResult<Bytes> {
        let location = self.location(key)?;
        let client = Arc::clone(&self.client);
        let result = runtime::run(async move { client.get(&location).await?.bytes().await })?;
        self.done("get", key, result)
    }

    /// Reads `[offset, offset + length)`, clamped at the end of the object.
    pub fn get_range(&self, key: &str, offset: u64, length: u64) -> TlResult<Bytes> {
        let location = self.location(key)?;
        let client = Arc::clone(&self.client);
        let end = offset.saturating_add(length);
        let result = runtime::run(async move {
            if length > 0 {
                match client.get_range(&location, offset..end).await {
                    Ok(bytes) => return Ok(bytes),
                    Err(e @ object_store::Error::NotFound { .. }) => return Err(e),
                    Err(e) => {
                        // Ranges that start at or past the end are an error
                        // for object stores but an empty read for us.
                        match client.head(&location).await {
                            Ok(meta) if offset >= meta.size => return Ok(Bytes::new()),
                            _ => return Err(e),
                        }
                    }
                }
            }
            // An empty range still reports a missing object.
            client.head(&location).await.map(|_| Bytes::new())
        })?;
        self.done("get_range", key, result)
    }

    pub fn head(&self, key: &str) -> TlResult<Head> {
        let location = self.location(key)?;
        let client = Arc::clone(&self.client);
        let result = runtime::run(async move { client.head(&location).await })?;
        let meta = self.done("head", key, result)?;
        Ok(Head {
            size: meta.size,
            etag: meta.e_tag,
        })
    }

    /// Writes an object atomically and returns its new etag (if any).
    pub fn put(&self, key: &str, data: Bytes, mode: Put) -> TlResult<Option<String>> {
        let location = self.location(key)?;
        let client = Arc::clone(&self.client);
        let op = match mode {
            Put::Overwrite => "put",
            Put::Create => "put_if_absent",
            Put::Update { .. } => "put_if_match",
        };
        let result = runtime::run(async move {
            if mode == Put::Overwrite && data.len() > MULTIPART_THRESHOLD {
                return put_multipart(client.as_ref(), &location, data).await;
            }
            let mode = match mode {
                Put::Overwrite => PutMode::Overwrite,
                Put::Create => PutMode::Create,
                Put::Update { etag } => PutMode::Update(UpdateVersion {
                    e_tag: Some(etag),
                    version: None,
                }),
            };
            client
                .put_opts(&location, PutPayload::from(data), PutOptions::from(mode))
                .await
        })?;
        self.done(op, key, result).map(|r| r.e_tag)
    }

    /// Deletes an object; a missing object is not an error.
    pub fn delete(&self, key: &str) -> TlResult<()> {
        let location = self.location(key)?;
        let client = Arc::clone(&self.client);
        match runtime::run(async move { client.delete(&location).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                self.answered.store(true, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error("delete", key, e)),
        }
    }

    /// Lists objects below `prefix` (relative; "" is the root; a trailing
    /// '/' is optional), recursively or only direct children.
    pub fn list(&self, prefix: &str, delimiter: bool) -> TlResult<Listing> {
        let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
        let location = if trimmed.is_empty() {
            self.prefix.clone()
        } else {
            self.location(trimmed)?
        };
        let client = Arc::clone(&self.client);
        let result = runtime::run(async move {
            let at = (!location.as_ref().is_empty()).then_some(&location);
            if delimiter {
                let listed = client.list_with_delimiter(at).await?;
                Ok((listed.objects, listed.common_prefixes))
            } else {
                let objects = client.list(at).try_collect::<Vec<_>>().await?;
                Ok((objects, Vec::new()))
            }
        })?;
        let (objects, prefixes) = match result {
            Ok(listed) => {
                self.answered.store(true, Ordering::Relaxed);
                listed
            }
            // A missing "directory" simply has no children.
            Err(object_store::Error::NotFound { .. }) => (Vec::new(), Vec::new()),
            Err(e) => return Err(self.error("list", trimmed, e)),
        };
        Ok(Listing {
            objects: objects
                .into_iter()
                .map(|meta| Listed {
                    key: relative_key(&self.prefix, &meta.location),
                    size: meta.size,
                    last_modified_ms: meta.last_modified.timestamp_millis(),
                })
                .collect(),
            prefixes: prefixes
                .iter()
                .map(|p| relative_key(&self.prefix, p))
                .collect(),
        })
    }
}

/// Uploads `data` in parts; the object appears atomically on completion.
async fn put_multipart(
    client: &dyn ObjectStore,
    location: &Path,
    data: Bytes,
) -> object_store::Result<object_store::PutResult> {
    let mut upload = client.put_multipart(location).await?;
    let parts: Vec<_> = (0..data.len())
        .step_by(PART_SIZE)
        .map(|start| {
            let end = (start + PART_SIZE).min(data.len());
            upload.put_part(PutPayload::from(data.slice(start..end)))
        })
        .collect();
    let uploaded = futures::stream::iter(parts)
        .buffer_unordered(PART_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await;
    match uploaded {
        Ok(_) => upload.complete().await,
        Err(e) => {
            // Best effort: S3 and GCS keep orphaned parts otherwise.
            let _ = upload.abort().await;
            Err(e)
        }
    }
}

/// Parts of one streaming upload that may be in flight at once: with the
/// part being filled by the caller, an upload holds at most this many plus
/// one parts in memory.
pub const UPLOAD_CONCURRENCY: usize = 2;

/// A streaming multipart upload of one object (`tl_store_upload_*`): the
/// caller hands over parts one by one as it produces them, so an object of
/// any size is written in bounded memory. Parts upload in the background,
/// at most [`UPLOAD_CONCURRENCY`] at a time; nothing is visible at the key
/// until [`Upload::finish`] completes the upload, which then appears
/// atomically (overwriting any object at the key). An upload dropped
/// without `finish` is aborted, so it leaves nothing behind (S3 and GCS
/// would otherwise keep the parts).
///
/// Storage tracing sees the upload through the traced client: one
/// MULTIPART line when it completes.
#[derive(Debug)]
pub struct Upload {
    store: Arc<Store>,
    key: String,
    /// None once finished or aborted.
    upload: Option<Box<dyn object_store::MultipartUpload>>,
    in_flight: std::collections::VecDeque<tokio::task::JoinHandle<object_store::Result<()>>>,
}

impl Upload {
    /// Starts an upload of `key` (relative to the store root).
    pub fn begin(store: Arc<Store>, key: &str) -> TlResult<Self> {
        let location = store.location(key)?;
        let client = Arc::clone(&store.client);
        let result = runtime::run(async move { client.put_multipart(&location).await })?;
        let upload = store.done("upload", key, result)?;
        Ok(Self {
            store,
            key: key.to_string(),
            upload: Some(upload),
            in_flight: Default::default(),
        })
    }

    /// Sends the next part. Every part but the last should have the same
    /// size of at least 5 MiB (S3's minimum). Waits while
    /// [`UPLOAD_CONCURRENCY`] parts are in flight; reports the failure of an
    /// earlier part. After an error the upload can only be aborted.
    pub fn put_part(&mut self, data: Bytes) -> TlResult<()> {
        // Room first, so that no more than UPLOAD_CONCURRENCY parts run.
        self.wait_for_room()?;
        let Some(upload) = self.upload.as_mut() else {
            return Err(TlError::invalid(format!(
                "upload of {}: already finished",
                self.key
            )));
        };
        let part = upload.put_part(PutPayload::from(data));
        self.in_flight.push_back(runtime::handle().spawn(part));
        Ok(())
    }

    /// Waits until fewer than [`UPLOAD_CONCURRENCY`] parts are in flight.
    fn wait_for_room(&mut self) -> TlResult<()> {
        while self.in_flight.len() >= UPLOAD_CONCURRENCY {
            self.wait_oldest()?;
        }
        Ok(())
    }

    /// Waits for the oldest part in flight.
    fn wait_oldest(&mut self) -> TlResult<()> {
        let Some(part) = self.in_flight.pop_front() else {
            return Ok(());
        };
        match runtime::run(part)? {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.store.error("upload part", &self.key, e)),
            Err(e) => Err(TlError::internal(format!(
                "upload part of {}: {e}",
                self.store.url_of(&self.key)
            ))),
        }
    }

    /// Waits for every part and completes the upload: the object appears.
    /// Returns its etag, if the backend has one. On failure the upload is
    /// aborted.
    pub fn finish(mut self) -> TlResult<Option<String>> {
        while !self.in_flight.is_empty() {
            if let Err(e) = self.wait_oldest() {
                let _ = self.abort_now();
                return Err(e);
            }
        }
        let Some(mut upload) = self.upload.take() else {
            return Err(TlError::invalid(format!(
                "upload of {}: already finished",
                self.key
            )));
        };
        let completed = runtime::run(async move {
            let result = upload.complete().await;
            if result.is_err() {
                // Best effort: the parts would otherwise stay on S3 and GCS.
                let _ = upload.abort().await;
            }
            result
        })?;
        self.store
            .done("upload", &self.key, completed)
            .map(|r| r.e_tag)
    }

    /// Discards the parts: nothing is left at the key.
    pub fn abort(mut self) -> TlResult<()> {
        self.abort_now()
    }

    fn abort_now(&mut self) -> TlResult<()> {
        let parts: Vec<_> = self.in_flight.drain(..).collect();
        let Some(mut upload) = self.upload.take() else {
            return Ok(());
        };
        // Parts still running finish first (a local part cannot be stopped
        // mid-write), then the upload is aborted.
        let aborted = runtime::run(async move {
            for part in parts {
                let _ = part.await;
            }
            upload.abort().await
        })?;
        aborted.map_err(|e| self.store.error("abort upload", &self.key, e))
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        // Not waited for: a drop must not block.
        if let Some(mut upload) = self.upload.take() {
            let parts: Vec<_> = self.in_flight.drain(..).collect();
            runtime::handle().spawn(async move {
                for part in parts {
                    let _ = part.await;
                }
                let _ = upload.abort().await;
            });
        }
    }
}

/// Accepts URLs and plain local paths ("/tmp/wh", or relative to the
/// working directory).
fn parse_location(location: &str) -> Result<Url, String> {
    if location.is_empty() {
        return Err("empty URL".to_string());
    }
    match Url::parse(location) {
        Ok(url) => Ok(url),
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            let path = std::path::absolute(location).map_err(|e| e.to_string())?;
            Url::from_directory_path(&path).map_err(|_| format!("not a usable path: {location}"))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// One line for a storage error: an S3-style XML error body quoted by
/// object_store becomes "<Code>: <Message>", and anything longer than 600
/// characters is cut.
fn condense(message: &str) -> String {
    let tag = |name: &str, text: &str| -> Option<String> {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&format!("</{name}>"))? + start;
        Some(text[start..end].trim().to_string())
    };
    let mut out = match message.find("<?xml").or_else(|| message.find("<Error>")) {
        Some(at) => {
            let body = &message[at..];
            let code = tag("Code", body).unwrap_or_default();
            let detail = tag("Message", body).unwrap_or_default();
            format!("{}{code}: {detail}", &message[..at])
        }
        None => message.to_string(),
    };
    out = out.replace(['\n', '\r'], " ");
    if out.chars().count() > 600 {
        out = out.chars().take(600).collect::<String>() + "…";
    }
    out
}

/// Whether an S3 request failed while asking the instance metadata service
/// for credentials (object_store's fallback when none are configured).
fn asked_instance_metadata(message: &str) -> bool {
    message.contains("/latest/api/token") || message.contains("/latest/meta-data/iam/")
}

/// Environment configuration for cloud stores, as the builders' `from_env`
/// would read it (`AWS_*`, `GOOGLE_*`, `AZURE_*`), as lower-case keys.
fn environment_options(url: &Url) -> Vec<(String, String)> {
    let env_prefix = match ObjectStoreScheme::parse(url) {
        Ok((ObjectStoreScheme::AmazonS3, _)) => "AWS_",
        Ok((ObjectStoreScheme::GoogleCloudStorage, _)) => "GOOGLE_",
        Ok((ObjectStoreScheme::MicrosoftAzure, _)) => "AZURE_",
        _ => return Vec::new(),
    };
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with(env_prefix))
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

/// The explicit options of a cloud store with lower-case keys, each one
/// the store's builder knows; an unknown key is an error naming it and the
/// nearest known one.
fn checked_options(url: &Url, options: &[(String, String)]) -> TlResult<Vec<(String, String)>> {
    use object_store::aws::AmazonS3ConfigKey;
    use object_store::azure::AzureConfigKey;
    use object_store::gcp::GoogleConfigKey;
    let scheme = ObjectStoreScheme::parse(url).map(|(s, _)| s).ok();
    let mut out = Vec::with_capacity(options.len());
    for (key, value) in options {
        let lower = key.to_ascii_lowercase();
        let (known, names, kind): (bool, &[&str], &str) = match scheme {
            Some(ObjectStoreScheme::AmazonS3) => (
                lower.parse::<AmazonS3ConfigKey>().is_ok(),
                S3_OPTIONS,
                "s3://",
            ),
            Some(ObjectStoreScheme::GoogleCloudStorage) => (
                lower.parse::<GoogleConfigKey>().is_ok(),
                GCS_OPTIONS,
                "gs://",
            ),
            Some(ObjectStoreScheme::MicrosoftAzure) => (
                lower.parse::<AzureConfigKey>().is_ok(),
                AZURE_OPTIONS,
                "Azure",
            ),
            _ => (true, &[], ""),
        };
        if !known {
            let nearest = names
                .iter()
                .min_by_key(|name| edit_distance(&lower, name))
                .map(|name| format!(" (did you mean {name}?)"))
                .unwrap_or_default();
            return Err(TlError::invalid(format!(
                "unknown storage option {key:?} for {kind} locations{nearest}"
            )));
        }
        out.push((lower, value.clone()));
    }
    Ok(out)
}

/// The options users set most, offered when a key is misspelt.
const S3_OPTIONS: &[&str] = &[
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "aws_region",
    "aws_endpoint",
    "aws_allow_http",
    "aws_virtual_hosted_style_request",
    "aws_skip_signature",
    "aws_conditional_put",
    "aws_metadata_endpoint",
    "aws_imdsv1_fallback",
    "aws_request_payer",
    "aws_server_side_encryption",
    "aws_sse_kms_key_id",
    "allow_http",
    "allow_invalid_certificates",
    "timeout",
    "connect_timeout",
    "proxy_url",
];
const GCS_OPTIONS: &[&str] = &[
    "google_service_account",
    "google_service_account_key",
    "google_application_credentials",
    "google_bucket",
    "timeout",
    "connect_timeout",
    "proxy_url",
];
const AZURE_OPTIONS: &[&str] = &[
    "azure_storage_account_name",
    "azure_storage_account_key",
    "azure_storage_client_id",
    "azure_storage_client_secret",
    "azure_storage_tenant_id",
    "azure_storage_sas_key",
    "azure_storage_token",
    "azure_storage_use_emulator",
    "azure_container_name",
    "timeout",
    "connect_timeout",
    "proxy_url",
];

/// Levenshtein distance of two short ASCII strings.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<u8> = b.bytes().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// Whether an option key names a credential.
fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "secret",
        "token",
        "password",
        "key",
        "credential",
        "sas",
        "signature",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// Keys whose values are plainly not credentials and help to read a
/// message (which endpoint failed?).
fn public_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["endpoint", "region", "allow_http", "timeout"]
        .iter()
        .any(|word| key.contains(word))
}

/// Option values that must never appear in a message: credentials, and any
/// other value long enough to be one. Short values ("true", "10s") and
/// endpoints and regions are kept, since blanking them would garble
/// messages.
fn is_secret(key: &str, value: &str) -> bool {
    !value.is_empty() && (secret_key(key) || (!public_key(key) && value.len() >= 8))
}

/// Replaces every occurrence of a secret in `message`.
pub(crate) fn redact(message: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(message.to_string(), |m, s| m.replace(s.as_str(), "***"))
}

/// A URL for messages: without user name, password, query and fragment,
/// which is where credentials could hide.
fn display_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unknown_storage_options_are_refused_with_the_nearest_known_key() {
        let url = Url::parse("s3://bucket/prefix").unwrap();
        let options = [("AWS_ACESS_KEY_ID".to_string(), "x".to_string())];
        let err = super::checked_options(&url, &options).unwrap_err();
        assert_eq!(err.code, TlCode::Invalid);
        assert!(err
            .message
            .contains("unknown storage option \"AWS_ACESS_KEY_ID\""));
        assert!(
            err.message.contains("did you mean aws_access_key_id?"),
            "{}",
            err.message
        );
        let ok = [("AWS_Region".to_string(), "eu-west-1".to_string())];
        assert_eq!(
            super::checked_options(&url, &ok).unwrap(),
            vec![("aws_region".to_string(), "eu-west-1".to_string())]
        );
        let local = Url::parse("file:///tmp/x").unwrap();
        assert!(super::checked_options(&local, &options).is_ok());
    }

    #[test]
    fn a_failed_instance_metadata_request_is_recognised() {
        assert!(super::asked_instance_metadata(
            "list s3://b/p: Generic S3 error: error sending request for url \
             (http://169.254.169.254/latest/api/token)"
        ));
        assert!(!super::asked_instance_metadata("get s3://b/p/k: not found"));
    }

    use super::*;
    use crate::tests::TempDir;

    fn exercise(store: &Store, supports_update: bool) {
        let code = |r: TlResult<Option<String>>| r.unwrap_err().code;

        // put / get / range / head
        let etag = store
            .put(
                "a/b/one.json",
                Bytes::from_static(b"hello world"),
                Put::Overwrite,
            )
            .unwrap();
        assert_eq!(&store.get("a/b/one.json").unwrap()[..], b"hello world");
        assert_eq!(
            &store.get_range("a/b/one.json", 6, 5).unwrap()[..],
            b"world"
        );
        assert_eq!(
            &store.get_range("a/b/one.json", 6, 100).unwrap()[..],
            b"world"
        );
        assert!(store.get_range("a/b/one.json", 11, 5).unwrap().is_empty());
        assert!(store.get_range("a/b/one.json", 50, 5).unwrap().is_empty());
        let head = store.head("a/b/one.json").unwrap();
        assert_eq!(head.size, 11);
        assert_eq!(head.etag, etag);

        // missing objects
        assert_eq!(store.get("nope").unwrap_err().code, TlCode::NotFound);
        assert_eq!(store.head("nope").unwrap_err().code, TlCode::NotFound);
        assert_eq!(
            store.get_range("nope", 0, 4).unwrap_err().code,
            TlCode::NotFound
        );
        let err = store.get("missing/x.json").unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("get {}: ", store.url_of("missing/x.json"))),
            "{}",
            err.message
        );

        // put-if-absent twice
        store
            .put("a/once.json", Bytes::from_static(b"1"), Put::Create)
            .unwrap();
        assert_eq!(
            code(store.put("a/once.json", Bytes::from_static(b"2"), Put::Create)),
            TlCode::AlreadyExists
        );
        assert_eq!(&store.get("a/once.json").unwrap()[..], b"1");

        // put-if-match
        let current = store.head("a/once.json").unwrap().etag.unwrap();
        if supports_update {
            assert_eq!(
                code(store.put(
                    "a/once.json",
                    Bytes::from_static(b"3"),
                    Put::Update {
                        etag: "stale".into()
                    }
                )),
                TlCode::Precondition
            );
            store
                .put(
                    "a/once.json",
                    Bytes::from_static(b"4"),
                    Put::Update { etag: current },
                )
                .unwrap();
            assert_eq!(&store.get("a/once.json").unwrap()[..], b"4");
        } else {
            assert_eq!(
                code(store.put(
                    "a/once.json",
                    Bytes::from_static(b"3"),
                    Put::Update { etag: current }
                )),
                TlCode::Unsupported
            );
        }

        // large payloads go through multipart upload
        let big: Vec<u8> = (0..MULTIPART_THRESHOLD + 1234)
            .map(|i| (i % 251) as u8)
            .collect();
        store
            .put("big/blob.bin", Bytes::from(big.clone()), Put::Overwrite)
            .unwrap();
        assert_eq!(store.head("big/blob.bin").unwrap().size, big.len() as u64);
        assert_eq!(&store.get("big/blob.bin").unwrap()[..], &big[..]);

        // listings
        store
            .put("a/b/two.json", Bytes::from_static(b"2"), Put::Overwrite)
            .unwrap();
        store
            .put("a/c/three.json", Bytes::from_static(b"3"), Put::Overwrite)
            .unwrap();
        let mut all: Vec<String> = store
            .list("a", false)
            .unwrap()
            .objects
            .into_iter()
            .map(|o| o.key)
            .collect();
        all.sort();
        assert_eq!(
            all,
            [
                "a/b/one.json",
                "a/b/two.json",
                "a/c/three.json",
                "a/once.json"
            ]
        );
        let shallow = store.list("a/", true).unwrap();
        let files: Vec<_> = shallow.objects.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(files, ["a/once.json"]);
        assert_eq!(shallow.objects[0].size, 1);
        assert!(shallow.objects[0].last_modified_ms > 0);
        let mut dirs = shallow.prefixes.clone();
        dirs.sort();
        assert_eq!(dirs, ["a/b", "a/c"]);
        let mut root = store.list("", true).unwrap().prefixes;
        root.sort();
        assert_eq!(root, ["a", "big"]);
        assert_eq!(store.list("", false).unwrap().objects.len(), 5);
        assert_eq!(
            store.list("nothing/here", false).unwrap(),
            Listing::default()
        );
        assert_eq!(
            store.list("nothing/here", true).unwrap(),
            Listing::default()
        );

        // delete (twice: missing is fine)
        store.delete("a/b/one.json").unwrap();
        store.delete("a/b/one.json").unwrap();
        assert_eq!(
            store.get("a/b/one.json").unwrap_err().code,
            TlCode::NotFound
        );

        // bad keys
        assert_eq!(store.get("").unwrap_err().code, TlCode::Invalid);
        assert_eq!(store.get("/abs").unwrap_err().code, TlCode::Invalid);
        assert_eq!(store.get("a/../b").unwrap_err().code, TlCode::Invalid);
    }

    #[test]
    fn a_refused_connection_is_retried_only_once_the_endpoint_has_answered() {
        use object_store::client::{HttpError, HttpErrorKind};
        let refused = || object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpError::new(
                HttpErrorKind::Connect,
                std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused"),
            )),
        };
        let store = Store::open("memory://", &[]).unwrap();
        // Nothing answered yet: most likely a wrong endpoint, not retried.
        let first = store.error("list", "t", refused());
        assert_eq!(first.code, TlCode::Storage);
        assert!(
            first.message.contains("has succeeded yet"),
            "{}",
            first.message
        );
        // After one answer, the same failure is an outage: retryable.
        store.list("", false).unwrap();
        let later = store.error("list", "t", refused());
        assert_eq!(later.code, TlCode::StorageRetryable);
        assert!(
            !later.message.contains("has succeeded yet"),
            "{}",
            later.message
        );
    }

    /// The block cache answers reads of immutable objects exactly as
    /// storage does: ranges past the end, missing objects, deletes.
    fn exercise_cached(store: &Store) {
        let key = "t/data/x.parquet";
        store
            .put(key, Bytes::from_static(b"hello world"), Put::Overwrite)
            .unwrap();
        for _ in 0..2 {
            assert_eq!(&store.get(key).unwrap()[..], b"hello world");
            assert_eq!(&store.get_range(key, 6, 5).unwrap()[..], b"world");
            assert_eq!(&store.get_range(key, 6, 100).unwrap()[..], b"world");
            assert!(store.get_range(key, 11, 5).unwrap().is_empty());
            assert!(store.get_range(key, 50, 5).unwrap().is_empty());
            assert!(store.get_range(key, 1 << 20, 5).unwrap().is_empty());
            assert_eq!(store.head(key).unwrap().size, 11);
        }
        assert_eq!(
            store.get("t/data/nope.parquet").unwrap_err().code,
            TlCode::NotFound
        );
        assert_eq!(
            store
                .get_range("t/data/nope.parquet", 0, 4)
                .unwrap_err()
                .code,
            TlCode::NotFound
        );
        store.delete(key).unwrap();
        assert_eq!(store.get(key).unwrap_err().code, TlCode::NotFound);
        assert_eq!(
            store.get_range(key, 0, 4).unwrap_err().code,
            TlCode::NotFound
        );
    }

    #[test]
    fn cached_stores() {
        let memory = [("timelake_cache_memory".to_string(), "1MiB".to_string())];
        let store = Store::open("memory://", &memory).unwrap();
        exercise(&store, true);
        exercise_cached(&store);
        let dir = TempDir::new("cached-store");
        let options = [
            ("TIMELAKE_CACHE_MEMORY".to_string(), "0".to_string()),
            (
                "timelake_cache_dir".to_string(),
                dir.0.join("cache").display().to_string(),
            ),
        ];
        let local = Store::open(dir.0.join("warehouse").to_str().unwrap(), &options).unwrap();
        exercise(&local, false);
        exercise_cached(&local);
        let err =
            Store::open("memory://", &[("timelake_cache_disk".into(), "big".into())]).unwrap_err();
        assert_eq!(err.code, TlCode::Invalid);
        assert!(
            err.message.contains("timelake_cache_disk"),
            "{}",
            err.message
        );
    }

    #[test]
    fn memory_store() {
        let store = Store::open("memory://", &[]).unwrap();
        assert_eq!(store.root_url(), "memory:///");
        assert_eq!(store.base_url().as_str(), "memory://");
        exercise(&store, true);
    }

    #[test]
    fn local_store() {
        let dir = TempDir::new("store");
        let path = dir.0.join("warehouse");
        let store = Store::open(path.to_str().unwrap(), &[]).unwrap();
        assert!(path.is_dir(), "the warehouse directory is created");
        assert_eq!(store.root_url(), format!("file://{}", path.display()));
        assert_eq!(store.base_url().as_str(), "file:///");
        exercise(&store, false);
        let err = store.get("missing/x.json").unwrap_err();
        let expected = format!("get file://{}/missing/x.json: ", path.display());
        assert!(err.message.starts_with(&expected), "{}", err.message);
        // Objects are plain files below the warehouse directory.
        assert!(path.join("a/once.json").is_file());
        // The same location as a file:// URL.
        let again = Store::open(&format!("file://{}/", path.display()), &[]).unwrap();
        assert_eq!(&again.get("a/once.json").unwrap()[..], b"1");
    }

    /// Racing creators of one key: exactly one wins, the others see
    /// AlreadyExists, and the object is the winner's.
    fn put_if_absent_has_one_winner(store: &Store, key: &str) {
        let results: Vec<(usize, TlResult<Option<String>>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    s.spawn(move || {
                        // Big enough that the writes overlap on a server.
                        let body = Bytes::from(format!("{i}").repeat(64 * 1024));
                        (i, store.put(key, body, Put::Create))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<usize> = results
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(i, _)| *i)
            .collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        for (_, r) in &results {
            if let Err(e) = r {
                assert_eq!(e.code, TlCode::AlreadyExists, "{}", e.message);
            }
        }
        assert_eq!(
            store.get(key).unwrap(),
            Bytes::from(format!("{}", winners[0]).repeat(64 * 1024))
        );
    }

    #[test]
    fn local_put_if_absent_is_atomic() {
        let dir = TempDir::new("race");
        let store = Store::open(dir.0.to_str().unwrap(), &[]).unwrap();
        put_if_absent_has_one_winner(&store, "commit/v1.json");
    }

    #[test]
    fn xml_error_bodies_become_one_short_line() {
        let long = "get s3://b/k: Client error with status 403 Forbidden: \
            <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch</Code>\
            <Message>The request signature we calculated does not match</Message>\
            <Resource>/b/k</Resource></Error>";
        assert_eq!(
            condense(long),
            "get s3://b/k: Client error with status 403 Forbidden: SignatureDoesNotMatch: \
             The request signature we calculated does not match"
        );
        assert_eq!(condense(&"x".repeat(1000)).chars().count(), 601);
        assert_eq!(condense("plain\nmessage"), "plain message");
    }

    #[test]
    fn open_errors_do_not_leak_secrets() {
        let options = vec![
            (
                "aws_secret_access_key".to_string(),
                "SUPERSECRETVALUE".to_string(),
            ),
            (
                "aws_region".to_string(),
                "SUPERSECRETVALUE-bad region".to_string(),
            ),
            ("aws_allow_http".to_string(), "true".to_string()),
        ];
        // An unsupported scheme fails; whatever the message, no secret.
        let err = Store::open("ftp://user:SUPERSECRETVALUE@host/x", &options).unwrap_err();
        assert!(!err.message.contains("SUPERSECRETVALUE"), "{}", err.message);
        assert!(is_secret("aws_secret_access_key", "abc"));
        assert!(is_secret("aws_unknown_option", "SUPERSECRETVALUE"));
        assert!(!is_secret("aws_endpoint", "http://localhost:9000"));
        assert!(!is_secret("aws_allow_http", "true"));
        let secrets = vec!["SUPERSECRETVALUE".to_string(), String::new()];
        assert_eq!(redact("a SUPERSECRETVALUE b", &secrets), "a *** b");
    }

    /// Runs the store checks against an S3 server (see
    /// `crate::tests::s3_test_config`): put-if-absent must fail on an
    /// existing key (`If-None-Match: *`) and put-if-match on a stale etag
    /// (`If-Match`), as the commit protocol needs.
    #[test]
    fn s3_store() {
        let (bucket, options) = crate::tests::s3_test_config();
        let prefix = format!("timelake-test-{}", std::process::id());
        let store = Store::open(&format!("s3://{bucket}/{prefix}"), &options).unwrap();
        exercise(&store, true);
        for object in store.list("", false).unwrap().objects {
            store.delete(&object.key).unwrap();
        }
    }

    #[test]
    fn s3_put_if_absent_is_atomic() {
        let (bucket, options) = crate::tests::s3_test_config();
        let prefix = format!("timelake-race-{}", std::process::id());
        let store = Store::open(&format!("s3://{bucket}/{prefix}"), &options).unwrap();
        for round in 0..5 {
            put_if_absent_has_one_winner(&store, &format!("commit/v{round}.json"));
        }
        for object in store.list("", false).unwrap().objects {
            store.delete(&object.key).unwrap();
        }
    }

    #[test]
    fn s3_errors_do_not_leak_secrets() {
        // A wrong secret: the server refuses (403), which is neither
        // retryable nor quoted back.
        let (bucket, mut options) = crate::tests::s3_test_config();
        let secret = "WRONG-timelake-secret-0123456789".to_string();
        for (k, v) in options.iter_mut() {
            if k == "aws_secret_access_key" {
                *v = secret.clone();
            }
        }
        let store = Store::open(&format!("s3://{bucket}/denied"), &options).unwrap();
        let err = store.get("x.json").unwrap_err();
        assert_eq!(err.code, TlCode::Storage, "{}", err.message);
        assert!(!err.message.contains(&secret), "{}", err.message);
        let err = store
            .put("x.json", Bytes::from_static(b"1"), Put::Create)
            .unwrap_err();
        assert_eq!(err.code, TlCode::Storage, "{}", err.message);
        assert!(!err.message.contains(&secret), "{}", err.message);
    }

    #[test]
    fn s3_root_url_and_prefix() {
        // Opening does no I/O, so this needs no server.
        let options = vec![
            ("aws_region".to_string(), "us-east-1".to_string()),
            ("aws_access_key_id".to_string(), "AKIDEXAMPLE".to_string()),
            (
                "aws_secret_access_key".to_string(),
                "secret-example".to_string(),
            ),
        ];
        let store = Store::open("s3://bucket/some/prefix/", &options).unwrap();
        assert_eq!(store.root_url(), "s3://bucket/some/prefix");
        assert_eq!(store.base_url().as_str(), "s3://bucket");
        assert_eq!(
            store.location("x/y.parquet").unwrap().as_ref(),
            "some/prefix/x/y.parquet"
        );
    }
}

/// Streaming uploads ([`Upload`]) against the memory and local stores.
#[cfg(test)]
mod upload_tests {
    use super::*;
    use crate::tests::TempDir;

    const PART: usize = 5 * 1024 * 1024;

    /// `n` bytes of a pattern that differs between parts.
    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 ^ seed).collect()
    }

    /// Every file below `dir`, staging files included.
    fn files_below(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return out;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(files_below(&path));
            } else {
                out.push(path);
            }
        }
        out
    }

    fn streams_parts_and_appears_on_finish(store: Arc<Store>) {
        let key = "t/data/big.parquet";
        let mut upload = Upload::begin(Arc::clone(&store), key).unwrap();
        let mut expected = Vec::new();
        for (i, size) in [PART, PART, PART, 1234].into_iter().enumerate() {
            let part = pattern(size, i as u8);
            expected.extend_from_slice(&part);
            upload.put_part(Bytes::from(part)).unwrap();
            // Nothing is visible before the upload completes.
            assert_eq!(store.head(key).unwrap_err().code, TlCode::NotFound);
        }
        let etag = upload.finish().unwrap();
        let head = store.head(key).unwrap();
        assert_eq!(head.size, expected.len() as u64);
        assert_eq!(head.etag, etag);
        assert_eq!(&store.get(key).unwrap()[..], &expected[..]);
        assert_eq!(
            &store.get_range(key, PART as u64 - 3, 6).unwrap()[..],
            &expected[PART - 3..PART + 3]
        );
    }

    fn abort_leaves_nothing(store: Arc<Store>) {
        let key = "t/data/aborted.parquet";
        let mut upload = Upload::begin(Arc::clone(&store), key).unwrap();
        upload.put_part(Bytes::from(pattern(PART, 1))).unwrap();
        upload.put_part(Bytes::from(pattern(PART, 2))).unwrap();
        upload.abort().unwrap();
        assert_eq!(store.head(key).unwrap_err().code, TlCode::NotFound);
        assert!(store.list("t", false).unwrap().objects.is_empty());
    }

    #[test]
    fn memory_upload() {
        let store = Arc::new(Store::open("memory://", &[]).unwrap());
        streams_parts_and_appears_on_finish(Arc::clone(&store));
        let _ = store.delete("t/data/big.parquet");
        abort_leaves_nothing(store);
    }

    #[test]
    fn local_upload() {
        let dir = TempDir::new("upload");
        let store = Arc::new(Store::open(dir.0.to_str().unwrap(), &[]).unwrap());
        streams_parts_and_appears_on_finish(Arc::clone(&store));
        assert_eq!(files_below(&dir.0), [dir.0.join("t/data/big.parquet")]);
        store.delete("t/data/big.parquet").unwrap();
        abort_leaves_nothing(Arc::clone(&store));
        // No staging file is left on disk either.
        assert_eq!(files_below(&dir.0), Vec::<std::path::PathBuf>::new());
    }

    #[test]
    fn dropped_upload_is_aborted() {
        let dir = TempDir::new("upload-drop");
        let store = Arc::new(Store::open(dir.0.to_str().unwrap(), &[]).unwrap());
        let mut upload = Upload::begin(Arc::clone(&store), "t/x.bin").unwrap();
        upload.put_part(Bytes::from(pattern(PART, 3))).unwrap();
        assert_eq!(files_below(&dir.0).len(), 1, "the staging file");
        drop(upload);
        // The abort runs in the background.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !files_below(&dir.0).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(files_below(&dir.0), Vec::<std::path::PathBuf>::new());
        assert_eq!(store.head("t/x.bin").unwrap_err().code, TlCode::NotFound);
    }

    #[test]
    fn finish_overwrites_and_bad_keys_fail() {
        let store = Arc::new(Store::open("memory://", &[]).unwrap());
        store
            .put("k.bin", Bytes::from_static(b"old"), Put::Overwrite)
            .unwrap();
        let mut upload = Upload::begin(Arc::clone(&store), "k.bin").unwrap();
        upload.put_part(Bytes::from_static(b"new")).unwrap();
        upload.finish().unwrap();
        assert_eq!(&store.get("k.bin").unwrap()[..], b"new");
        for bad in ["", "/abs", "a/../b"] {
            let err = Upload::begin(Arc::clone(&store), bad).unwrap_err();
            assert_eq!(err.code, TlCode::Invalid, "{bad:?}: {}", err.message);
        }
    }
}
