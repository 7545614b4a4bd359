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
//! reader consults before it asks storage for a footer.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::metadata::CachedParquetMetaData;
use datafusion::execution::cache::cache_manager::{CachedFileMetadataEntry, FileMetadataCache};
use object_store::path::Path;
use parquet::errors::ParquetError;
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use bytes::Bytes;
    use datafusion::datasource::physical_plan::parquet::metadata::CachedParquetMetaData;
    use datafusion::execution::cache::cache_manager::{CachedFileMetadataEntry, FileMetadataCache};
    use datafusion::execution::cache::default_cache::DefaultCache;
    use datafusion::execution::cache::Cache;
    use object_store::path::Path;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
    use parquet::file::properties::WriterProperties;

    use super::{blob_from_tail, decode_blob};
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
