//! The block cache of immutable objects (`timelake_cache_*` storage
//! options, documented in README.md, "Using it").
//!
//! [`CachingStore`] wraps the store's client, so the C API and DataFusion's
//! scans share it. It keeps blocks of [`BLOCK_SIZE`] bytes of objects that
//! never change: names ending in `.parquet` or `.avro` (data files,
//! manifests, manifest lists, last-value indexes), which Iceberg writers
//! write once under fresh names. Two tiers:
//!
//! - memory, least recently used out, within `timelake_cache_memory` bytes;
//! - optionally a folder (`timelake_cache_dir`) that later processes reuse,
//!   within `timelake_cache_disk` bytes: one file per block, written
//!   atomically (a temporary file renamed into place), so processes share
//!   it safely; the oldest blocks (by modification time, which a hit
//!   refreshes) are deleted when it grows past the bound.
//!
//! Everything else goes to storage every time: table metadata versions
//! (a version may be taken back and written again), the head object, the
//! version hint, listings, and requests with conditions. A delete, put,
//! copy or rename through this store drops the blocks of the objects it
//! touches. Blocks are keyed by the object's path below the store's base
//! URL; the object's size and etag, learnt from the first response, are
//! kept beside them (in a `meta` file on disk).
//!
//! Requests: a read of missing blocks fetches every missing block of the
//! read in one ranged GET (the span from the first to the last), and a
//! `get_ranges` call coalesces the missing blocks of all its ranges as
//! object_store does (gaps under 1 MiB are read through), so a read never
//! makes more requests than it would without the cache.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, RenameOptions, Result,
};

use crate::error::{TlError, TlResult};

/// Bytes per cached block: small enough that a page read rounds up little,
/// large enough that a disk cache of gigabytes holds thousands of files,
/// not millions.
pub const BLOCK_SIZE: u64 = 256 * 1024;

/// Missing blocks closer than this are fetched in one request, as
/// object_store's `get_ranges` coalesces ranges.
const COALESCE_BYTES: u64 = 1024 * 1024;

/// Fetches of one `get_ranges` call in flight at once.
const FETCH_CONCURRENCY: usize = 8;

/// Default of `timelake_cache_memory` for remote stores (s3, gs, az, http).
pub const DEFAULT_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
/// Default of `timelake_cache_disk` once `timelake_cache_dir` is set.
pub const DEFAULT_DISK_BYTES: u64 = 10 * 1024 * 1024 * 1024;

/// The storage options (and environment variables, upper case) of the
/// cache; the option wins over the environment.
pub const OPTION_MEMORY: &str = "timelake_cache_memory";
pub const OPTION_DIR: &str = "timelake_cache_dir";
pub const OPTION_DISK: &str = "timelake_cache_disk";

/// How a store caches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOptions {
    /// Bytes of blocks kept in memory; 0: no memory tier.
    pub memory_bytes: u64,
    /// The folder of the disk tier, if any.
    pub disk_dir: Option<PathBuf>,
    /// Bytes of blocks kept on disk.
    pub disk_bytes: u64,
}

impl CacheOptions {
    /// Whether anything is cached.
    pub fn enabled(&self) -> bool {
        self.memory_bytes > 0 || (self.disk_dir.is_some() && self.disk_bytes > 0)
    }

    /// Takes the cache's keys out of `options` (any case) and reads them,
    /// with the environment (`TIMELAKE_CACHE_MEMORY`, `TIMELAKE_CACHE_DIR`,
    /// `TIMELAKE_CACHE_DISK`) under them. `remote` stores cache in memory by
    /// default. Errors: `Invalid` for a size that does not parse.
    pub fn take_from(options: &mut Vec<(String, String)>, remote: bool) -> TlResult<Self> {
        let mut given: HashMap<&'static str, String> = HashMap::new();
        options.retain(|(k, v)| {
            let lower = k.to_ascii_lowercase();
            for name in [OPTION_MEMORY, OPTION_DIR, OPTION_DISK] {
                if lower == name {
                    given.insert(name, v.clone());
                    return false;
                }
            }
            true
        });
        let value = |name: &'static str| -> Option<String> {
            given
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name.to_ascii_uppercase()).ok())
                .filter(|v| !v.trim().is_empty())
        };
        let memory_bytes = match value(OPTION_MEMORY) {
            Some(v) => parse_bytes(OPTION_MEMORY, &v)?,
            None if remote => DEFAULT_MEMORY_BYTES,
            None => 0,
        };
        let disk_dir = value(OPTION_DIR).map(PathBuf::from);
        let disk_bytes = match value(OPTION_DISK) {
            Some(v) => parse_bytes(OPTION_DISK, &v)?,
            None => DEFAULT_DISK_BYTES,
        };
        Ok(Self {
            memory_bytes,
            disk_dir,
            disk_bytes,
        })
    }
}

/// "268435456", "256MiB", "256 MB", "1GiB", "10g": bytes (K, M, G, T by
/// powers of 1024 with or without "i"/"B").
pub fn parse_bytes(name: &str, text: &str) -> TlResult<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || {
        TlError::invalid(format!(
            "storage option {name}: {text:?} is not a size (e.g. 268435456, 256MiB, 10GiB)"
        ))
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

/// Whether blocks of `location` may be cached: objects written once under
/// fresh names.
pub fn cacheable(location: &Path) -> bool {
    let name = location.as_ref();
    name.ends_with(".parquet") || name.ends_with(".avro")
}

/// What the cache knows of an object, from the first response about it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ObjectInfo {
    size: u64,
    e_tag: Option<String>,
    last_modified_ms: i64,
}

impl ObjectInfo {
    fn of(meta: &ObjectMeta) -> Self {
        Self {
            size: meta.size,
            e_tag: meta.e_tag.clone(),
            last_modified_ms: meta.last_modified.timestamp_millis(),
        }
    }

    fn meta(&self, location: &Path) -> ObjectMeta {
        let since_epoch = Duration::from_millis(self.last_modified_ms.max(0) as u64);
        ObjectMeta {
            location: location.clone(),
            last_modified: (SystemTime::UNIX_EPOCH + since_epoch).into(),
            size: self.size,
            e_tag: self.e_tag.clone(),
            version: None,
        }
    }

    /// Blocks of the object: [0, n).
    fn blocks(&self) -> u64 {
        self.size.div_ceil(BLOCK_SIZE)
    }

    /// The byte range of block `b`.
    fn block_range(&self, b: u64) -> Range<u64> {
        b * BLOCK_SIZE..((b + 1) * BLOCK_SIZE).min(self.size)
    }

    fn encode(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.size,
            self.last_modified_ms,
            self.e_tag.as_deref().unwrap_or("")
        )
    }

    fn decode(text: &str) -> Option<Self> {
        let mut lines = text.split('\n');
        let size = lines.next()?.parse().ok()?;
        let last_modified_ms = lines.next()?.parse().ok()?;
        let e_tag = lines.next().filter(|e| !e.is_empty()).map(str::to_string);
        Some(Self {
            size,
            e_tag,
            last_modified_ms,
        })
    }
}

type BlockKey = (Path, u64);

/// The memory tier: blocks by (object, index), least recently used out.
#[derive(Debug, Default)]
struct MemoryInner {
    used: u64,
    tick: u64,
    blocks: HashMap<BlockKey, (Bytes, u64)>,
    lru: BTreeMap<u64, BlockKey>,
    infos: HashMap<Path, ObjectInfo>,
}

/// Objects whose size the memory tier remembers at most (cleared when
/// full; a forgotten size costs one request).
const MAX_INFOS: usize = 1 << 16;

#[derive(Debug)]
struct Memory {
    capacity: u64,
    inner: Mutex<MemoryInner>,
}

impl Memory {
    fn new(capacity: u64) -> Self {
        Self {
            capacity,
            inner: Mutex::new(MemoryInner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        // A panic while holding the lock leaves consistent maps behind.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn info(&self, location: &Path) -> Option<ObjectInfo> {
        self.lock().infos.get(location).cloned()
    }

    fn set_info(&self, location: &Path, info: &ObjectInfo) {
        let mut m = self.lock();
        if m.infos.len() >= MAX_INFOS {
            m.infos.clear();
        }
        m.infos.insert(location.clone(), info.clone());
    }

    fn get(&self, key: &BlockKey) -> Option<Bytes> {
        let mut guard = self.lock();
        let m = &mut *guard;
        let (bytes, tick) = m.blocks.get_mut(key)?;
        m.lru.remove(tick);
        m.tick += 1;
        *tick = m.tick;
        m.lru.insert(m.tick, key.clone());
        Some(bytes.clone())
    }

    fn put(&self, key: BlockKey, bytes: Bytes) {
        let len = bytes.len() as u64;
        if self.capacity == 0 || len > self.capacity {
            return;
        }
        let mut guard = self.lock();
        let m = &mut *guard;
        if let Some((old, tick)) = m.blocks.remove(&key) {
            m.used -= old.len() as u64;
            m.lru.remove(&tick);
        }
        while m.used + len > self.capacity {
            let Some((_, oldest)) = m.lru.pop_first() else {
                break;
            };
            if let Some((old, _)) = m.blocks.remove(&oldest) {
                m.used -= old.len() as u64;
            }
        }
        m.tick += 1;
        let tick = m.tick;
        m.lru.insert(tick, key.clone());
        m.blocks.insert(key, (bytes, tick));
        m.used += len;
    }

    fn forget(&self, location: &Path) {
        let mut guard = self.lock();
        let m = &mut *guard;
        let Some(info) = m.infos.remove(location) else {
            return;
        };
        for b in 0..info.blocks() {
            if let Some((old, tick)) = m.blocks.remove(&(location.clone(), b)) {
                m.used -= old.len() as u64;
                m.lru.remove(&tick);
            }
        }
    }
}

/// The disk tier: `<dir>/v1/<scheme>/<authority>/<object path>/{meta,<block>}`.
#[derive(Debug)]
struct Disk {
    root: PathBuf,
    capacity: u64,
    /// Bytes of block files, as this process knows them: a scan at start,
    /// then what it writes (other processes' writes are found by the next
    /// eviction's scan).
    used: Arc<AtomicU64>,
    evicting: Arc<AtomicBool>,
}

/// Blocks on disk are not touched again on a hit younger than this (the
/// eviction order needs no finer clock, and a hit then costs no write).
const TOUCH_AFTER: Duration = Duration::from_secs(60);

impl Disk {
    fn new(dir: PathBuf, base: &url::Url, capacity: u64) -> Self {
        let mut root = dir.join("v1").join(base.scheme());
        let authority = &base[url::Position::BeforeHost..url::Position::AfterPort];
        if !authority.is_empty() {
            root = root.join(authority.replace(['/', '\\'], "_"));
        }
        let disk = Self {
            root,
            capacity,
            used: Arc::new(AtomicU64::new(0)),
            evicting: Arc::new(AtomicBool::new(true)),
        };
        // The size already on disk, counted in the background.
        let (root, used, evicting) = (
            disk.root.clone(),
            Arc::clone(&disk.used),
            Arc::clone(&disk.evicting),
        );
        std::thread::spawn(move || {
            let total: u64 = block_files(&root).iter().map(|f| f.1).sum();
            used.fetch_add(total, Ordering::Relaxed);
            evicting.store(false, Ordering::Release);
        });
        disk
    }

    /// The folder of an object; None for a path that cannot be one.
    fn object_dir(&self, location: &Path) -> Option<PathBuf> {
        let mut dir = self.root.clone();
        for part in location.parts() {
            let p = part.as_ref();
            if p.is_empty() || p == "." || p == ".." || p.contains(['/', '\\']) {
                return None;
            }
            dir.push(p);
        }
        Some(dir)
    }

    fn info(&self, location: &Path) -> Option<ObjectInfo> {
        let dir = self.object_dir(location)?;
        let text = std::fs::read_to_string(dir.join("meta")).ok()?;
        ObjectInfo::decode(&text)
    }

    fn set_info(&self, location: &Path, info: &ObjectInfo) {
        if let Some(dir) = self.object_dir(location) {
            let _ = write_atomic(&dir.join("meta"), info.encode().as_bytes());
        }
    }

    fn get(&self, location: &Path, block: u64, expected_len: u64) -> Option<Bytes> {
        let path = self.object_dir(location)?.join(block.to_string());
        let data = std::fs::read(&path).ok()?;
        if data.len() as u64 != expected_len {
            // Cut short (a full disk, a foreign file): not a block.
            let _ = std::fs::remove_file(&path);
            return None;
        }
        if let Ok(file) = std::fs::File::options().write(true).open(&path) {
            let old = file.metadata().and_then(|m| m.modified()).ok();
            let now = SystemTime::now();
            if old.is_none_or(|t| now.duration_since(t).unwrap_or_default() > TOUCH_AFTER) {
                let _ = file.set_modified(now);
            }
        }
        Some(Bytes::from(data))
    }

    fn put(&self, location: &Path, block: u64, bytes: &[u8]) {
        let Some(dir) = self.object_dir(location) else {
            return;
        };
        if write_atomic(&dir.join(block.to_string()), bytes).is_ok() {
            let used = self.used.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            if used + bytes.len() as u64 > self.capacity {
                self.evict();
            }
        }
    }

    fn forget(&self, location: &Path) {
        if let Some(dir) = self.object_dir(location) {
            let freed: u64 = block_files(&dir).iter().map(|f| f.1).sum();
            if std::fs::remove_dir_all(&dir).is_ok() {
                let _ = self
                    .used
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                        Some(u.saturating_sub(freed))
                    });
            }
        }
    }

    /// Deletes the least recently used blocks until the folder holds 90% of
    /// its bound, in the background (one eviction at a time).
    fn evict(&self) {
        if self.evicting.swap(true, Ordering::AcqRel) {
            return;
        }
        let (root, capacity, used, evicting) = (
            self.root.clone(),
            self.capacity,
            Arc::clone(&self.used),
            Arc::clone(&self.evicting),
        );
        std::thread::spawn(move || {
            used.store(evict_below(&root, capacity / 10 * 9), Ordering::Relaxed);
            evicting.store(false, Ordering::Release);
        });
    }
}

/// Deletes the least recently used block files below `root` until they
/// hold at most `goal` bytes; returns the bytes left.
fn evict_below(root: &std::path::Path, goal: u64) -> u64 {
    let mut files = block_files(root);
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort_by_key(|f| f.2);
    for (path, size, _) in files {
        if total <= goal {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= size;
        }
    }
    total
}

/// Block files below `dir`: (path, size, modified).
fn block_files(dir: &std::path::Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u64>().is_ok())
            {
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                out.push((entry.path(), meta.len(), modified));
            }
        }
    }
    out
}

/// Writes a file whole or not at all: a temporary file beside it, renamed
/// into place.
fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension(format!(
        "tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The two tiers.
#[derive(Debug)]
struct BlockCache {
    memory: Memory,
    disk: Option<Arc<Disk>>,
}

impl BlockCache {
    async fn info(&self, location: &Path) -> Option<ObjectInfo> {
        if let Some(info) = self.memory.info(location) {
            return Some(info);
        }
        let disk = Arc::clone(self.disk.as_ref()?);
        let loc = location.clone();
        let info = tokio::task::spawn_blocking(move || disk.info(&loc))
            .await
            .ok()??;
        self.memory.set_info(location, &info);
        Some(info)
    }

    /// The cached blocks among `wanted` (sorted); the others are missing.
    async fn lookup(
        &self,
        location: &Path,
        info: &ObjectInfo,
        wanted: &[u64],
    ) -> HashMap<u64, Bytes> {
        let mut found = HashMap::new();
        let mut on_disk = Vec::new();
        for &b in wanted {
            match self.memory.get(&(location.clone(), b)) {
                Some(bytes) => {
                    found.insert(b, bytes);
                }
                None => on_disk.push(b),
            }
        }
        if let (Some(disk), false) = (self.disk.as_ref(), on_disk.is_empty()) {
            let (disk, loc, info2) = (Arc::clone(disk), location.clone(), info.clone());
            let read = tokio::task::spawn_blocking(move || {
                on_disk
                    .into_iter()
                    .filter_map(|b| {
                        let r = info2.block_range(b);
                        disk.get(&loc, b, r.end - r.start).map(|bytes| (b, bytes))
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            for (b, bytes) in read {
                self.memory.put((location.clone(), b), bytes.clone());
                found.insert(b, bytes);
            }
        }
        found
    }

    /// Keeps what a response brought: every whole block of `data` (read at
    /// `offset`) and the object's info. Returns the blocks kept once they
    /// are on disk too: a process that ends right after its query leaves
    /// them for the next, and a delete that follows finds them (writing
    /// local files costs little beside the request that brought them).
    async fn store(
        &self,
        location: &Path,
        info: &ObjectInfo,
        offset: u64,
        data: &Bytes,
    ) -> Vec<(u64, Bytes)> {
        self.memory.set_info(location, info);
        let end = offset + data.len() as u64;
        let mut kept = Vec::new();
        let mut b = offset.div_ceil(BLOCK_SIZE);
        while b < info.blocks() {
            let r = info.block_range(b);
            if r.end > end {
                break;
            }
            // A copy, so that a block holds only its own bytes.
            let block = Bytes::copy_from_slice(
                &data[(r.start - offset) as usize..(r.end - offset) as usize],
            );
            self.memory.put((location.clone(), b), block.clone());
            kept.push((b, block));
            b += 1;
        }
        if let Some(disk) = &self.disk {
            if !kept.is_empty() {
                let (disk, loc, info, blocks) = (
                    Arc::clone(disk),
                    location.clone(),
                    info.clone(),
                    kept.clone(),
                );
                let _ = tokio::task::spawn_blocking(move || {
                    disk.set_info(&loc, &info);
                    for (b, bytes) in blocks {
                        disk.put(&loc, b, &bytes);
                    }
                })
                .await;
            }
        }
        kept
    }

    /// Drops the blocks of `location`, on disk too before it returns, so
    /// that no later read finds them.
    fn forget(&self, location: &Path) {
        self.memory.forget(location);
        if let Some(disk) = &self.disk {
            disk.forget(location);
        }
    }
}

/// An `ObjectStore` that serves immutable objects' blocks from the cache.
#[derive(Debug)]
pub struct CachingStore {
    inner: Arc<dyn ObjectStore>,
    cache: Arc<BlockCache>,
}

impl fmt::Display for CachingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cached({})", self.inner)
    }
}

impl CachingStore {
    /// Wraps `inner`, whose objects live below `base` (scheme and authority:
    /// the disk tier's folder for this store).
    pub fn new(inner: Arc<dyn ObjectStore>, base: &url::Url, options: &CacheOptions) -> Self {
        let disk = options
            .disk_dir
            .as_ref()
            .filter(|_| options.disk_bytes > 0)
            .map(|dir| Arc::new(Disk::new(dir.clone(), base, options.disk_bytes)));
        Self {
            inner,
            cache: Arc::new(BlockCache {
                memory: Memory::new(options.memory_bytes),
                disk,
            }),
        }
    }

    /// The object's info: cached, or from a HEAD request.
    async fn info_or_head(&self, location: &Path) -> Result<ObjectInfo> {
        if let Some(info) = self.cache.info(location).await {
            return Ok(info);
        }
        let meta = self
            .inner
            .get_opts(location, GetOptions::new().with_head(true))
            .await?
            .meta;
        let info = ObjectInfo::of(&meta);
        self.cache.memory.set_info(location, &info);
        Ok(info)
    }

    /// Fetches bytes [start, end) (clamped at the end of the object) and
    /// keeps their blocks; returns the info the response carried and the
    /// blocks.
    async fn fetch(
        &self,
        location: &Path,
        range: Range<u64>,
    ) -> Result<(ObjectInfo, Vec<(u64, Bytes)>)> {
        let result = self
            .inner
            .get_opts(
                location,
                GetOptions::new().with_range(Some(GetRange::Bounded(range))),
            )
            .await?;
        let info = ObjectInfo::of(&result.meta);
        let offset = result.range.start;
        let data = result.bytes().await?;
        let kept = self.cache.store(location, &info, offset, &data).await;
        Ok((info, kept))
    }

    /// Bytes `ranges` of `location` (each within the object), from the
    /// cache and from storage: the missing blocks of all ranges, coalesced.
    async fn read_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let mut info = self.cache.info(location).await;
        let mut wanted: Vec<u64> = ranges
            .iter()
            .filter(|r| r.end > r.start)
            .flat_map(|r| r.start / BLOCK_SIZE..r.end.div_ceil(BLOCK_SIZE))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut blocks = match &info {
            Some(i) => {
                wanted.retain(|&b| b < i.blocks());
                self.cache.lookup(location, i, &wanted).await
            }
            None => HashMap::new(),
        };
        let missing: Vec<u64> = wanted
            .into_iter()
            .filter(|b| !blocks.contains_key(b))
            .collect();
        // Runs of missing blocks, gaps under COALESCE_BYTES read through.
        let gap = COALESCE_BYTES / BLOCK_SIZE;
        let mut runs: Vec<Range<u64>> = Vec::new();
        for b in missing {
            match runs.last_mut() {
                Some(run) if b <= run.end + gap => run.end = b + 1,
                _ => runs.push(b..b + 1),
            }
        }
        let fetched: Vec<(ObjectInfo, Vec<(u64, Bytes)>)> = stream::iter(runs)
            .map(|run| self.fetch(location, run.start * BLOCK_SIZE..run.end * BLOCK_SIZE))
            .buffer_unordered(FETCH_CONCURRENCY)
            .try_collect()
            .await?;
        for (i, kept) in fetched {
            info = Some(i);
            blocks.extend(kept);
        }
        let size = info.as_ref().map_or(0, |i| i.size);
        ranges
            .iter()
            .map(|r| assemble(location, r.start..r.end.min(size), &blocks))
            .collect()
    }
}

/// The bytes of `range` from `blocks`, which hold every block it touches:
/// a slice of one block, or a copy across several.
fn assemble(location: &Path, range: Range<u64>, blocks: &HashMap<u64, Bytes>) -> Result<Bytes> {
    if range.end <= range.start {
        return Ok(Bytes::new());
    }
    let missing = || object_store::Error::Generic {
        store: "timelake-cache",
        source: format!("a block of {location} for bytes {range:?} is missing").into(),
    };
    let first = range.start / BLOCK_SIZE;
    let last = (range.end - 1) / BLOCK_SIZE;
    let piece = |b: u64| -> Result<Bytes> {
        let block = blocks.get(&b).ok_or_else(missing)?;
        let start = range.start.max(b * BLOCK_SIZE) - b * BLOCK_SIZE;
        let end = range.end.min((b + 1) * BLOCK_SIZE) - b * BLOCK_SIZE;
        if end as usize > block.len() {
            return Err(missing());
        }
        Ok(block.slice(start as usize..end as usize))
    };
    if first == last {
        return piece(first);
    }
    let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
    for b in first..=last {
        out.extend_from_slice(&piece(b)?);
    }
    Ok(out.freeze())
}

/// A request the cache may answer: no conditions, no version.
fn plain(options: &GetOptions) -> bool {
    options.if_match.is_none()
        && options.if_none_match.is_none()
        && options.if_modified_since.is_none()
        && options.if_unmodified_since.is_none()
        && options.version.is_none()
}

fn answer(location: &Path, info: &ObjectInfo, range: Range<u64>, data: Bytes) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(stream::once(async move { Ok(data) }).boxed()),
        meta: info.meta(location),
        range,
        attributes: Attributes::default(),
    }
}

#[async_trait]
impl ObjectStore for CachingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if cacheable(location) {
            self.cache.forget(location);
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        if cacheable(location) {
            self.cache.forget(location);
        }
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if !cacheable(location) || !plain(&options) {
            return self.inner.get_opts(location, options).await;
        }
        if options.head {
            let info = self.info_or_head(location).await?;
            return Ok(answer(location, &info, 0..0, Bytes::new()));
        }
        let info = match &options.range {
            // A whole object of unknown size: one plain GET, kept.
            None => match self.cache.info(location).await {
                Some(info) => info,
                None => {
                    let result = self.inner.get_opts(location, options).await?;
                    let info = ObjectInfo::of(&result.meta);
                    let range = result.range.clone();
                    let data = result.bytes().await?;
                    self.cache.store(location, &info, range.start, &data).await;
                    return Ok(answer(location, &info, range, data));
                }
            },
            Some(GetRange::Bounded(r)) if r.start < r.end => {
                // The size comes with the first block's response if unknown.
                let data = self.read_ranges(location, std::slice::from_ref(r)).await?;
                let info = self.cache.memory.info(location).ok_or_else(|| {
                    object_store::Error::Generic {
                        store: "timelake-cache",
                        source: format!("no size of {location} after reading it").into(),
                    }
                })?;
                let end = r.end.min(info.size);
                let data = data.into_iter().next().unwrap_or_default();
                return Ok(answer(location, &info, r.start..end, data));
            }
            Some(_) => match self.cache.info(location).await {
                Some(info) => info,
                None => return self.inner.get_opts(location, options).await,
            },
        };
        let range = match &options.range {
            None => 0..info.size,
            Some(r) => match r.as_range(info.size) {
                Ok(r) => r,
                // Out of range: storage says how.
                Err(_) => return self.inner.get_opts(location, options).await,
            },
        };
        let data = self
            .read_ranges(location, std::slice::from_ref(&range))
            .await?;
        let data = data.into_iter().next().unwrap_or_default();
        Ok(answer(location, &info, range, data))
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if !cacheable(location) {
            return self.inner.get_ranges(location, ranges).await;
        }
        self.read_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        // The blocks go before the object does.
        let cache = Arc::clone(&self.cache);
        let locations = locations
            .inspect(move |l| {
                if let Ok(p) = l {
                    if cacheable(p) {
                        cache.forget(p);
                    }
                }
            })
            .boxed();
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        if cacheable(to) {
            self.cache.forget(to);
        }
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        for l in [from, to] {
            if cacheable(l) {
                self.cache.forget(l);
            }
        }
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use bytes::Bytes;
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

    use super::*;
    use crate::runtime;
    use crate::tests::TempDir;

    /// Counts the requests that reach the store below the cache.
    #[derive(Debug)]
    struct Counting {
        inner: InMemory,
        gets: AtomicUsize,
    }

    impl fmt::Display for Counting {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Counting")
        }
    }

    #[async_trait]
    impl ObjectStore for Counting {
        async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
            self.inner.put_opts(l, p, o).await
        }
        async fn put_multipart_opts(
            &self,
            l: &Path,
            o: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(l, o).await
        }
        async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.inner.get_opts(l, o).await
        }
        fn delete_stream(
            &self,
            l: BoxStream<'static, Result<Path>>,
        ) -> BoxStream<'static, Result<Path>> {
            self.inner.delete_stream(l)
        }
        fn list(&self, p: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.inner.list(p)
        }
        async fn list_with_delimiter(&self, p: Option<&Path>) -> Result<ListResult> {
            self.inner.list_with_delimiter(p).await
        }
        async fn copy_opts(&self, f: &Path, t: &Path, o: CopyOptions) -> Result<()> {
            self.inner.copy_opts(f, t, o).await
        }
    }

    fn base() -> url::Url {
        url::Url::parse("s3://bucket").unwrap()
    }

    fn counting() -> Arc<Counting> {
        Arc::new(Counting {
            inner: InMemory::new(),
            gets: AtomicUsize::new(0),
        })
    }

    fn cached(below: &Arc<Counting>, memory: u64, dir: Option<&TempDir>) -> CachingStore {
        let options = CacheOptions {
            memory_bytes: memory,
            disk_dir: dir.map(|d| d.0.clone()),
            disk_bytes: 1 << 30,
        };
        CachingStore::new(Arc::clone(below) as Arc<dyn ObjectStore>, &base(), &options)
    }

    /// Bytes that differ at every offset of a few blocks.
    fn data(len: usize) -> Bytes {
        (0..len)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect::<Vec<u8>>()
            .into()
    }

    fn put(store: &Arc<Counting>, key: &str, bytes: &Bytes) {
        let (store, key, bytes) = (Arc::clone(store), Path::from(key), bytes.clone());
        runtime::run(async move { store.put(&key, bytes.into()).await.unwrap() }).unwrap();
    }

    fn ranges(len: u64) -> Vec<Range<u64>> {
        let b = BLOCK_SIZE;
        vec![
            0..10,
            5..b + 3,
            b - 1..b + 1,
            2 * b..3 * b,
            len - 100..len,
            len - 5..len + 50, // past the end: cut short
            3 * b + 17..3 * b + 17,
        ]
    }

    #[test]
    fn reads_are_the_stores_bytes_and_repeat_without_requests() {
        let below = counting();
        let len = 4 * BLOCK_SIZE as usize + 1234;
        let bytes = data(len);
        put(&below, "t/data/a.parquet", &bytes);
        let store = Arc::new(cached(&below, 64 << 20, None));
        let expect = |r: &Range<u64>| {
            let end = (r.end as usize).min(len);
            bytes.slice((r.start as usize).min(end)..end)
        };
        for round in 0..2 {
            let before = below.gets.load(Ordering::SeqCst);
            // An empty range is an error of the store below (passed
            // through), except in `get_ranges`.
            for r in ranges(len as u64).into_iter().filter(|r| r.start < r.end) {
                let (s, r2) = (Arc::clone(&store), r.clone());
                let got = runtime::run(async move {
                    s.get_range(&Path::from("t/data/a.parquet"), r2)
                        .await
                        .unwrap()
                })
                .unwrap();
                assert_eq!(got, expect(&r), "range {r:?}, round {round}");
            }
            let s = Arc::clone(&store);
            let all = ranges(len as u64);
            let got = runtime::run(async move {
                s.get_ranges(&Path::from("t/data/a.parquet"), &all)
                    .await
                    .unwrap()
            })
            .unwrap();
            for (g, r) in got.iter().zip(ranges(len as u64)) {
                assert_eq!(*g, expect(&r), "get_ranges {r:?}");
            }
            let s = Arc::clone(&store);
            let whole = runtime::run(async move {
                s.get(&Path::from("t/data/a.parquet"))
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap()
            })
            .unwrap();
            assert_eq!(whole, bytes);
            let s = Arc::clone(&store);
            let head =
                runtime::run(async move { s.head(&Path::from("t/data/a.parquet")).await.unwrap() })
                    .unwrap();
            assert_eq!(head.size, len as u64);
            let made = below.gets.load(Ordering::SeqCst) - before;
            if round == 0 {
                // At most one request per read, fewer since blocks repeat.
                assert!(made >= 1 && made <= ranges(len as u64).len() + 3, "{made}");
            } else {
                assert_eq!(made, 0, "the second round reads nothing from storage");
            }
        }
    }

    #[test]
    fn one_get_ranges_call_makes_one_request_per_coalesced_run() {
        let below = counting();
        let len = 40 * BLOCK_SIZE as usize;
        put(&below, "t/data/b.parquet", &data(len));
        let store = Arc::new(cached(&below, 64 << 20, None));
        let b = BLOCK_SIZE;
        // Two clusters 20 blocks apart: two requests.
        let wanted = vec![0..100, b + 5..b + 9, 3 * b..3 * b + 1, 25 * b..25 * b + 10];
        let s = Arc::clone(&store);
        runtime::run(async move { s.get_ranges(&Path::from("t/data/b.parquet"), &wanted).await })
            .unwrap()
            .unwrap();
        assert_eq!(below.gets.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn mutable_objects_always_reach_storage() {
        let below = counting();
        put(&below, "t/metadata/v1.metadata.json", &data(100));
        put(&below, "t/metadata/timelake-head", &data(100));
        let store = Arc::new(cached(&below, 64 << 20, None));
        for key in ["t/metadata/v1.metadata.json", "t/metadata/timelake-head"] {
            for _ in 0..2 {
                let s = Arc::clone(&store);
                runtime::run(async move { s.get(&Path::from(key)).await.unwrap().bytes().await })
                    .unwrap()
                    .unwrap();
            }
        }
        assert_eq!(below.gets.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn a_deleted_object_is_not_served_from_the_cache() {
        let below = counting();
        let dir = TempDir::new("cache-delete");
        put(&below, "t/data/c.parquet", &data(1000));
        let store = Arc::new(cached(&below, 64 << 20, Some(&dir)));
        let s = Arc::clone(&store);
        runtime::run(async move {
            let l = Path::from("t/data/c.parquet");
            s.get_range(&l, 0..10).await.unwrap();
            s.delete(&l).await.unwrap();
            let err = s.get_range(&l, 0..10).await.unwrap_err();
            assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
        })
        .unwrap();
        // Nor from disk by a later process.
        let later = Arc::new(cached(&below, 64 << 20, Some(&dir)));
        runtime::run(async move {
            let err = later
                .get_range(&Path::from("t/data/c.parquet"), 0..10)
                .await
                .unwrap_err();
            assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
        })
        .unwrap();
    }

    #[test]
    fn a_later_store_reads_the_disk_tier_without_requests() {
        let below = counting();
        let dir = TempDir::new("cache-disk");
        let len = 3 * BLOCK_SIZE as usize + 99;
        let bytes = data(len);
        put(&below, "t/data/d.parquet", &bytes);
        let first = Arc::new(cached(&below, 64 << 20, Some(&dir)));
        let s = Arc::clone(&first);
        let wanted = vec![10..BLOCK_SIZE + 10, 3 * BLOCK_SIZE..len as u64];
        let w = wanted.clone();
        runtime::run(async move { s.get_ranges(&Path::from("t/data/d.parquet"), &w).await })
            .unwrap()
            .unwrap();
        // The read returns once its blocks are on disk.
        let blocks = dir.0.join("v1/s3/bucket/t/data/d.parquet");
        for f in ["0", "1", "3", "meta"] {
            assert!(blocks.join(f).exists(), "block file {f}");
        }
        let requests = below.gets.load(Ordering::SeqCst);
        // A new store, as a new process would make: nothing in memory.
        let later = Arc::new(cached(&below, 0, Some(&dir)));
        let (s, w) = (Arc::clone(&later), wanted.clone());
        let got = runtime::run(async move {
            s.get_ranges(&Path::from("t/data/d.parquet"), &w)
                .await
                .unwrap()
        })
        .unwrap();
        for (g, r) in got.iter().zip(&wanted) {
            assert_eq!(*g, bytes.slice(r.start as usize..r.end as usize));
        }
        assert_eq!(below.gets.load(Ordering::SeqCst), requests, "all from disk");

        // A damaged block file is no block: read again from storage.
        std::fs::write(blocks.join("1"), b"short").unwrap();
        let (s, w) = (Arc::clone(&later), wanted.clone());
        let got = runtime::run(async move {
            s.get_ranges(&Path::from("t/data/d.parquet"), &w)
                .await
                .unwrap()
        })
        .unwrap();
        assert_eq!(got[0], bytes.slice(10..BLOCK_SIZE as usize + 10));
        assert_eq!(below.gets.load(Ordering::SeqCst), requests + 1);
    }

    #[test]
    fn the_memory_tier_stays_within_its_bound() {
        let memory = Memory::new(3 * BLOCK_SIZE);
        let l = Path::from("t/data/e.parquet");
        for b in 0..10 {
            memory.put((l.clone(), b), data(BLOCK_SIZE as usize));
        }
        let m = memory.lock();
        assert_eq!(m.used, 3 * BLOCK_SIZE);
        assert_eq!(m.blocks.len(), 3);
        // The newest stay.
        assert!((7..10).all(|b| m.blocks.contains_key(&(l.clone(), b))));
    }

    #[test]
    fn eviction_keeps_the_newest_blocks_within_the_goal() {
        let dir = TempDir::new("cache-evict");
        let disk = Disk::new(dir.0.clone(), &base(), 1 << 30);
        let l = Path::from("t/data/f.parquet");
        for b in 0..6u64 {
            disk.put(&l, b, &[b as u8; 1000]);
            let path = disk.object_dir(&l).unwrap().join(b.to_string());
            let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + b);
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        assert_eq!(evict_below(&dir.0, 2500), 2000);
        let left: Vec<bool> = (0..6u64)
            .map(|b| disk.object_dir(&l).unwrap().join(b.to_string()).exists())
            .collect();
        assert_eq!(left, vec![false, false, false, false, true, true]);
    }

    #[test]
    fn sizes_parse_and_bad_ones_are_named() {
        assert_eq!(parse_bytes("x", "268435456").unwrap(), 268435456);
        assert_eq!(parse_bytes("x", "256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_bytes("x", "10 GB").unwrap(), 10 << 30);
        assert_eq!(parse_bytes("x", "0").unwrap(), 0);
        let err = parse_bytes(OPTION_MEMORY, "lots").unwrap_err();
        assert!(
            err.message.contains("timelake_cache_memory"),
            "{}",
            err.message
        );
        let mut options = vec![
            ("TIMELAKE_CACHE_DIR".to_string(), "/tmp/c".to_string()),
            ("aws_region".to_string(), "x".to_string()),
        ];
        let parsed = CacheOptions::take_from(&mut options, false).unwrap();
        assert_eq!(parsed.disk_dir, Some(PathBuf::from("/tmp/c")));
        assert_eq!(options.len(), 1, "the cache's keys are taken out");
    }
}
