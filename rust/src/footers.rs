//! Parquet footers held in memory: the metadata of data files, with their
//! page indexes, kept per store so that every session of a lake plans its
//! scans without reading them again.
//!
//! The head object (docs/format.md) carries footers of the newest files as
//! self-contained blobs in the layout of parquet's `ParquetMetaDataWriter`:
//! the column and offset index bytes, a FileMetaData whose index offsets
//! point into the blob, its u32 length and `PAR1`. [`blob_from_tail`] makes
//! one from the end of a file just written; [`decode_blob`] reads one back.
//! Both put the metadata into the store's cache, which DataFusion's Parquet
//! reader consults before it asks storage for a footer. Footers that entered
//! the cache without page indexes get them on their next scan
//! ([`PageIndexedFactory`]).

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::metadata::CachedParquetMetaData;
use datafusion::datasource::physical_plan::parquet::ParquetFileReaderFactory;
use datafusion::execution::cache::cache_manager::{CachedFileMetadataEntry, FileMetadataCache};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::path::Path;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result as ParquetResult};
use parquet::file::metadata::{
    PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader, ParquetMetaDataWriter,
};

use crate::error::{TlError, TlResult};

/// A data file as scans give it to DataFusion (`provider.rs`): its location
/// and size, nothing else known. Footer cache entries carry the same object
/// metadata, or DataFusion takes them for stale.
pub fn planned_file(location: Path, size: u64) -> PartitionedFile {
    let mut file = PartitionedFile::new(String::new(), size);
    file.object_meta.location = location;
    file
}

fn remember(cache: &FileMetadataCache, location: Path, size: u64, metadata: ParquetMetaData) {
    let meta = planned_file(location.clone(), size).object_meta;
    cache.put(
        &location,
        CachedFileMetadataEntry::new(
            meta,
            Arc::new(CachedParquetMetaData::new(Arc::new(metadata))),
        ),
    );
}

/// The footer blob of the file at `location` of `file_size` bytes, given its
/// last `tail.len()` bytes; the parsed metadata goes into `cache`. `None` when
/// the tail does not reach back to the start of the page indexes (the file
/// then keeps no blob; readers fetch its footer from storage).
pub fn blob_from_tail(
    cache: &FileMetadataCache,
    location: Path,
    tail: Bytes,
    file_size: u64,
) -> TlResult<Option<Vec<u8>>> {
    let mut reader = ParquetMetaDataReader::new().with_page_index_policy(PageIndexPolicy::Optional);
    match reader.try_parse_sized(&tail, file_size) {
        Ok(()) => {}
        Err(ParquetError::NeedMoreData(_)) => return Ok(None),
        Err(e) => {
            return Err(TlError::invalid(format!(
                "the footer of {location} does not parse: {e}"
            )))
        }
    }
    let metadata = reader
        .finish()
        .map_err(|e| TlError::invalid(format!("the footer of {location} does not parse: {e}")))?;
    let mut blob = Vec::new();
    ParquetMetaDataWriter::new(&mut blob, &metadata)
        .finish()
        .map_err(|e| TlError::internal(format!("re-encoding the footer of {location}: {e}")))?;
    remember(cache, location, file_size, metadata);
    Ok(Some(blob))
}

/// Decodes a footer blob of the file at `location` into `cache`, unless the
/// cache already holds that file's metadata. Errors: `Invalid` (a blob
/// that does not parse).
pub fn decode_blob(
    cache: &FileMetadataCache,
    location: Path,
    file_size: u64,
    blob: Bytes,
) -> TlResult<()> {
    if cache.contains_key(&location) {
        return Ok(());
    }
    let metadata = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Optional)
        .parse_and_finish(&blob)
        .map_err(|e| {
            TlError::invalid(format!(
                "the inlined footer of {location} does not parse: {e}"
            ))
        })?;
    remember(cache, location, file_size, metadata);
    Ok(())
}

/// Wraps a reader factory whose readers consult the footer cache, so that
/// a footer cached without page indexes gets them, once.
///
/// DataFusion's Parquet opener asks for a file's metadata without page
/// indexes and, when its pruning wants them, reads and parses them itself,
/// without keeping them (apache/datafusion#23978, open upstream). A footer
/// that entered the cache without them (a file whose footer the head does
/// not carry, read by an earlier query) thus had its page indexes fetched
/// and parsed again by every query: 7% of a warm TSBS
/// `single-groupby-1-1-1` at 4,000 hosts. For the files in
/// `indexed`, the metadata is asked for with its page indexes; the cache's
/// reader then loads them once and keeps them. Every other file is read as
/// DataFusion asks, so a cold query makes the same requests as before.
#[derive(Debug)]
pub struct PageIndexedFactory {
    pub inner: Arc<dyn ParquetFileReaderFactory>,
    /// Files whose cached footer lacks page indexes ([`footer_only`]).
    pub indexed: HashSet<Path>,
}

/// Whether `cache` holds the footer of the file at `location` without its
/// page indexes.
pub fn footer_only(cache: &FileMetadataCache, location: &Path) -> bool {
    let Some(entry) = cache.get(location) else {
        return false;
    };
    entry
        .file_metadata
        .as_any()
        .downcast_ref::<CachedParquetMetaData>()
        .is_some_and(|m| {
            let metadata = m.parquet_metadata();
            metadata.column_index().is_none() || metadata.offset_index().is_none()
        })
}

impl ParquetFileReaderFactory for PageIndexedFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        partitioned_file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::error::Result<Box<dyn AsyncFileReader + Send>> {
        let indexed = self
            .indexed
            .contains(&partitioned_file.object_meta.location);
        let inner = self.inner.create_reader(
            partition_index,
            partitioned_file,
            metadata_size_hint,
            metrics,
        )?;
        if !indexed {
            return Ok(inner);
        }
        Ok(Box::new(PageIndexedReader { inner }))
    }
}

struct PageIndexedReader {
    inner: Box<dyn AsyncFileReader + Send>,
}

impl AsyncFileReader for PageIndexedReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        self.inner.get_bytes(range)
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        self.inner.get_byte_ranges(ranges)
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        let options = options
            .cloned()
            .unwrap_or_default()
            .with_page_index_policy(PageIndexPolicy::Optional);
        async move { self.inner.get_metadata(Some(&options)).await }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use bytes::Bytes;
    use datafusion::datasource::physical_plan::parquet::metadata::CachedParquetMetaData;
    use datafusion::datasource::physical_plan::parquet::{
        CachedParquetFileReaderFactory, ParquetFileReaderFactory,
    };
    use datafusion::execution::cache::cache_manager::{CachedFileMetadataEntry, FileMetadataCache};
    use datafusion::execution::cache::default_cache::DefaultCache;
    use datafusion::execution::cache::Cache;
    use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt};
    use parquet::arrow::arrow_reader::ArrowReaderOptions;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
    use parquet::file::properties::WriterProperties;

    use super::{blob_from_tail, decode_blob, footer_only, planned_file, PageIndexedFactory};
    use crate::error::TlCode;

    /// 10,000 rows in row groups of 4,000 and pages of 1,000, with page
    /// indexes.
    fn file() -> Bytes {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int64Array::from_iter_values(0..10_000))],
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(4_000))
            .set_data_page_row_count_limit(1_000)
            .set_write_batch_size(1_000)
            .build();
        let mut buf = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buf, schema, Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        Bytes::from(buf)
    }

    fn cache() -> DefaultCache<Path, CachedFileMetadataEntry> {
        DefaultCache::new(1 << 20)
    }

    fn cached(cache: &FileMetadataCache, location: &Path) -> Arc<ParquetMetaData> {
        let entry = cache.get(location).expect("the file's metadata is cached");
        Arc::clone(
            entry
                .file_metadata
                .as_any()
                .downcast_ref::<CachedParquetMetaData>()
                .unwrap()
                .parquet_metadata(),
        )
    }

    #[test]
    fn a_blob_round_trips_with_its_page_indexes() {
        let file = file();
        let size = file.len() as u64;
        let whole = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&file)
            .unwrap();
        let location = Path::from("t/data/f.parquet");

        // A tail that stops inside the page indexes gives no blob.
        let writer_cache = cache();
        let short = file.slice(file.len() - 40..);
        assert!(blob_from_tail(&writer_cache, location.clone(), short, size)
            .unwrap()
            .is_none());
        assert!(writer_cache.get(&location).is_none());

        // The last 4 KiB hold the indexes and the footer of this file.
        let tail = file.slice(file.len() - 4096..);
        let blob = blob_from_tail(&writer_cache, location.clone(), tail, size)
            .unwrap()
            .expect("a blob");
        assert!(blob.ends_with(b"PAR1"));
        assert!((blob.len() as u64) < size);
        assert!(cached(&writer_cache, &location).offset_index().is_some());

        let reader_cache = cache();
        decode_blob(&reader_cache, location.clone(), size, Bytes::from(blob)).unwrap();
        let read = cached(&reader_cache, &location);
        assert_eq!(read.num_row_groups(), 3);
        assert_eq!(read.file_metadata().num_rows(), 10_000);
        // Page locations point into the data file, as in the file itself.
        assert_eq!(read.offset_index(), whole.offset_index());
        assert_eq!(read.column_index(), whole.column_index());
        let entry = reader_cache.get(&location).unwrap();
        assert_eq!(entry.meta.size, size);
    }

    /// A footer cached without page indexes (as DataFusion's opener leaves
    /// it) is read with them through `PageIndexedFactory`, and the cache
    /// keeps them; files not named are read as asked.
    #[test]
    fn a_footer_cached_alone_gets_its_page_indexes_once() {
        let file = file();
        let size = file.len() as u64;
        let location = Path::from("t/data/f.parquet");
        let store = Arc::new(InMemory::new());
        futures::executor::block_on(store.put(&location, file.clone().into())).unwrap();
        let cache: Arc<FileMetadataCache> = Arc::new(cache());
        let footer = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Skip)
            .parse_and_finish(&file)
            .unwrap();
        super::remember(cache.as_ref(), location.clone(), size, footer);
        assert!(footer_only(cache.as_ref(), &location));
        assert!(!footer_only(
            cache.as_ref(),
            &Path::from("t/data/other.parquet")
        ));

        let read = |indexed: HashSet<Path>| {
            let factory = PageIndexedFactory {
                inner: Arc::new(CachedParquetFileReaderFactory::new(
                    Arc::clone(&store) as Arc<dyn ObjectStore>,
                    Arc::clone(&cache),
                )),
                indexed,
            };
            let mut reader = factory
                .create_reader(
                    0,
                    planned_file(location.clone(), size),
                    None,
                    &ExecutionPlanMetricsSet::new(),
                )
                .unwrap();
            // What DataFusion's opener asks for.
            let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Skip);
            futures::executor::block_on(reader.get_metadata(Some(&options))).unwrap()
        };
        // Not named: the cached footer as it is.
        assert!(read(HashSet::new()).offset_index().is_none());
        assert!(footer_only(cache.as_ref(), &location));
        // Named: with page indexes, and the cache keeps them.
        let metadata = read(HashSet::from([location.clone()]));
        assert!(metadata.offset_index().is_some());
        assert!(metadata.column_index().is_some());
        assert!(!footer_only(cache.as_ref(), &location));
        assert_eq!(
            cached(cache.as_ref(), &location).offset_index(),
            metadata.offset_index()
        );
    }

    #[test]
    fn a_blob_that_does_not_parse_is_invalid() {
        let err = decode_blob(
            &cache(),
            Path::from("t/data/f.parquet"),
            100,
            Bytes::from_static(b"not a footer"),
        )
        .unwrap_err();
        assert_eq!(err.code, TlCode::Invalid);
        assert!(err.message.contains("t/data/f.parquet"), "{}", err.message);
    }
}
