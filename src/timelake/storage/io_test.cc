// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The arrow::io adapters (io.h) against every backend (the memory store, a
// local directory, the S3 test server): ranged reads, streams of many parts,
// aborts that leave nothing, and Parquet written and read through them.

#include "timelake/storage/io.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <arrow/api.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>

#include "timelake/testing/backend.h"
#include "timelake/testing/matchers.h"
#include "timelake/testing/test_warehouse.h"
#include "timelake/write/data_writer.h"

namespace timelake::storage {
namespace {

using ::timelake::testing::Backend;
using ::timelake::testing::ExpectError;
using ::timelake::testing::TestWarehouse;

constexpr int64_t kMiB = int64_t{1} << 20;

// `n` bytes that differ at every offset of a part, so a misplaced part shows.
std::string Pattern(int64_t n, uint32_t seed = 1) {
  std::string out(static_cast<size_t>(n), '\0');
  std::mt19937 rng(seed);
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

std::string AsString(const std::shared_ptr<arrow::Buffer>& buffer) {
  return std::string(reinterpret_cast<const char*>(buffer->data()),
                     static_cast<size_t>(buffer->size()));
}

class StoreIo : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    TL_ASSERT_OK_AND_ASSIGN(warehouse_, TestWarehouse::Make(GetParam(), "io"));
    store_ = warehouse_.shared_store();
  }
  void TearDown() override {
    warehouse_.Remove();
    store_.reset();
  }

  // The keys of every object of the store and, for a local store, of every
  // file on disk (multipart staging files included), so that "nothing left"
  // means nothing. (On S3 an upload in progress is not an object: the
  // listing shows what a reader could see.)
  std::set<std::string> Everything() const { return warehouse_.Keys(); }

  void ExpectAbsent(const std::string& key) const {
    ExpectError(store_->Get(key).status(), ErrorKind::kNotFound, key);
  }

  TestWarehouse warehouse_;
  std::shared_ptr<Store> store_;
};

TEST_P(StoreIo, InputFileReadsRanges) {
  const std::string data = Pattern(1000);
  TL_ASSERT_OK(store_->Put("t/f.bin", data));
  auto file = StoreInputFile::Open(store_, "t/f.bin");
  TL_ASSERT_OK_AND_ASSIGN(int64_t size, file->GetSize());
  EXPECT_EQ(size, 1000);

  TL_ASSERT_OK_AND_ASSIGN(auto buffer, file->ReadAt(10, 20));
  EXPECT_EQ(AsString(buffer), data.substr(10, 20));
  // Short at the end, empty past it.
  TL_ASSERT_OK_AND_ASSIGN(buffer, file->ReadAt(990, 50));
  EXPECT_EQ(AsString(buffer), data.substr(990));
  TL_ASSERT_OK_AND_ASSIGN(buffer, file->ReadAt(2000, 5));
  EXPECT_EQ(buffer->size(), 0);
  ExpectError(file->ReadAt(990, 50, /*allow_short_read=*/false).status(),
              ErrorKind::kCorrupt, "expected 50 bytes at offset 990");
  char out[64];
  TL_ASSERT_OK_AND_ASSIGN(int64_t n, file->ReadAt(500, 30, out));
  EXPECT_EQ(std::string(out, static_cast<size_t>(n)), data.substr(500, 30));
  ExpectError(file->ReadAt(-1, 5).status(), ErrorKind::kInvalid, "invalid range");

  // Read, Seek and Tell move one position.
  TL_ASSERT_OK_AND_ASSIGN(buffer, file->Read(100));
  EXPECT_EQ(AsString(buffer), data.substr(0, 100));
  TL_ASSERT_OK_AND_ASSIGN(n, file->Read(50, out));
  EXPECT_EQ(n, 50);
  EXPECT_EQ(std::string(out, 30), data.substr(100, 30));
  TL_ASSERT_OK_AND_ASSIGN(int64_t position, file->Tell());
  EXPECT_EQ(position, 150);
  TL_ASSERT_OK(file->Seek(995));
  TL_ASSERT_OK_AND_ASSIGN(buffer, file->Read(100));
  EXPECT_EQ(AsString(buffer), data.substr(995));

  TL_ASSERT_OK(file->Close());
  EXPECT_TRUE(file->closed());
  ExpectError(file->ReadAt(0, 1).status(), ErrorKind::kInvalid, "closed");
}

TEST_P(StoreIo, InputFileTrustsAGivenSizeAndReportsMissingObjects) {
  TL_ASSERT_OK(store_->Put("t/f.bin", "0123456789"));
  // A given size is used as is (no HEAD), and reads past it make no request.
  auto file = StoreInputFile::Open(store_, "t/f.bin", 4);
  TL_ASSERT_OK_AND_ASSIGN(int64_t size, file->GetSize());
  EXPECT_EQ(size, 4);
  TL_ASSERT_OK_AND_ASSIGN(auto buffer, file->ReadAt(6, 2));
  EXPECT_EQ(buffer->size(), 0);

  auto missing = StoreInputFile::Open(store_, "t/missing.bin");
  ExpectError(missing->GetSize().status(), ErrorKind::kNotFound, "t/missing.bin");
  ExpectError(missing->ReadAt(0, 10).status(), ErrorKind::kNotFound, "t/missing.bin");
}

TEST_P(StoreIo, InputFileReadsConcurrently) {
  const std::string data = Pattern(64 * 1024);
  TL_ASSERT_OK(store_->Put("t/f.bin", data));
  auto file = StoreInputFile::Open(store_, "t/f.bin");
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const int64_t offset = (t * 50 + i) * 300;
        auto size = file->GetSize();
        auto buffer = file->ReadAt(offset, 300);
        if (!size.ok() || *size != 64 * 1024 || !buffer.ok() ||
            AsString(*buffer) != data.substr(static_cast<size_t>(offset), 300)) {
          ++mismatches[t];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST_P(StoreIo, SmallObjectIsOnePutOnClose) {
  TL_ASSERT_OK_AND_ASSIGN(auto out, StoreOutputStream::Open(*store_, "t/small.bin"));
  TL_ASSERT_OK(out->Write("hello, ", 7));
  TL_ASSERT_OK(out->Write(arrow::Buffer::FromString("world")));
  TL_ASSERT_OK(out->Flush());
  TL_ASSERT_OK_AND_ASSIGN(int64_t written, out->Tell());
  EXPECT_EQ(written, 12);
  ExpectAbsent("t/small.bin");
  TL_ASSERT_OK(out->Close());
  EXPECT_TRUE(out->closed());
  TL_ASSERT_OK(out->Close());  // idempotent
  TL_ASSERT_OK_AND_ASSIGN(auto buffer, store_->Get("t/small.bin"));
  EXPECT_EQ(AsString(buffer), "hello, world");
  ExpectError(out->Write("x", 1), ErrorKind::kInvalid, "closed");

  // An empty stream makes an empty object.
  TL_ASSERT_OK_AND_ASSIGN(out, StoreOutputStream::Open(*store_, "t/empty.bin"));
  TL_ASSERT_OK(out->Close());
  TL_ASSERT_OK_AND_ASSIGN(auto size, store_->Size("t/empty.bin"));
  EXPECT_EQ(size, 0u);
}

TEST_P(StoreIo, LargeObjectStreamsInParts) {
  // 20 MiB in writes of assorted sizes, some larger than a part, through
  // 5 MiB parts: four whole parts and a remainder.
  const std::string data = Pattern(20 * kMiB + 12345);
  OutputStreamOptions options;
  options.part_size = 5 * kMiB;
  TL_ASSERT_OK_AND_ASSIGN(auto out,
                          StoreOutputStream::Open(*store_, "t/big.bin", options));
  std::mt19937 rng(7);
  size_t at = 0;
  while (at < data.size()) {
    size_t n = std::uniform_int_distribution<size_t>(1, 3 * 1024 * 1024)(rng);
    if (rng() % 8 == 0) n = 7 * kMiB;
    n = std::min(n, data.size() - at);
    TL_ASSERT_OK(out->Write(data.data() + at, static_cast<int64_t>(n)));
    at += n;
  }
  ExpectAbsent("t/big.bin");
  TL_ASSERT_OK(out->Close());
  TL_ASSERT_OK_AND_ASSIGN(int64_t written, out->Tell());
  EXPECT_EQ(written, static_cast<int64_t>(data.size()));
  TL_ASSERT_OK_AND_ASSIGN(auto buffer, store_->Get("t/big.bin"));
  EXPECT_TRUE(AsString(buffer) == data) << "contents differ";
  EXPECT_EQ(Everything(), std::set<std::string>{"t/big.bin"});

  // Ranged reads across part boundaries.
  auto file = StoreInputFile::Open(store_, "t/big.bin");
  TL_ASSERT_OK_AND_ASSIGN(buffer, file->ReadAt(5 * kMiB - 10, 20));
  EXPECT_EQ(AsString(buffer), data.substr(5 * kMiB - 10, 20));
}

TEST_P(StoreIo, WholePartsOnlyAndTheDefaultPartSize) {
  // Exactly two default parts: nothing is left in the buffer at Close().
  const std::string data = Pattern(16 * kMiB, 3);
  TL_ASSERT_OK_AND_ASSIGN(auto out, StoreOutputStream::Open(*store_, "t/two.bin"));
  TL_ASSERT_OK(out->Write(data.data(), static_cast<int64_t>(data.size())));
  TL_ASSERT_OK(out->Close());
  TL_ASSERT_OK_AND_ASSIGN(auto buffer, store_->Get("t/two.bin"));
  EXPECT_TRUE(AsString(buffer) == data) << "contents differ";
}

TEST_P(StoreIo, AbortAndDestructionLeaveNothing) {
  const std::string data = Pattern(12 * kMiB);
  OutputStreamOptions options;
  options.part_size = 5 * kMiB;
  {
    // Two parts sent, the rest buffered.
    TL_ASSERT_OK_AND_ASSIGN(auto out,
                            StoreOutputStream::Open(*store_, "t/aborted.bin", options));
    TL_ASSERT_OK(out->Write(data.data(), static_cast<int64_t>(data.size())));
    TL_ASSERT_OK(out->Abort());
    TL_ASSERT_OK(out->Abort());  // idempotent
    TL_ASSERT_OK(out->Close());  // nothing to complete
    ExpectError(out->Write("x", 1), ErrorKind::kInvalid, "closed");
  }
  ExpectAbsent("t/aborted.bin");
  EXPECT_EQ(Everything(), std::set<std::string>{});
  {
    TL_ASSERT_OK_AND_ASSIGN(auto out,
                            StoreOutputStream::Open(*store_, "t/dropped.bin", options));
    TL_ASSERT_OK(out->Write(data.data(), static_cast<int64_t>(data.size())));
    TL_ASSERT_OK_AND_ASSIGN(auto small,
                            StoreOutputStream::Open(*store_, "t/dropped-small.bin"));
    TL_ASSERT_OK(small->Write("abc", 3));
  }  // destroyed without Close()
  ExpectAbsent("t/dropped.bin");
  ExpectAbsent("t/dropped-small.bin");
  EXPECT_EQ(Everything(), std::set<std::string>{});
}

TEST_P(StoreIo, RejectsPartsUnderFiveMiB) {
  OutputStreamOptions options;
  options.part_size = kMiB;
  ExpectError(StoreOutputStream::Open(*store_, "t/x.bin", options).status(),
              ErrorKind::kInvalid, "part size");
  options.part_size = 5 * kMiB;
  options.keep_tail = 6 * kMiB;
  ExpectError(StoreOutputStream::Open(*store_, "t/x.bin", options).status(),
              ErrorKind::kInvalid, "tail");
}

TEST_P(StoreIo, TailGivesTheLastBytesAcrossSentParts) {
  const std::string data = Pattern(10 * kMiB + 100, 5);
  OutputStreamOptions options;
  options.part_size = 5 * kMiB;
  options.keep_tail = kMiB;
  TL_ASSERT_OK_AND_ASSIGN(auto out,
                          StoreOutputStream::Open(*store_, "t/tail.bin", options));
  // Exactly one part: sent, nothing buffered; the kept tail answers.
  TL_ASSERT_OK(out->Write(data.data(), 5 * kMiB));
  EXPECT_TRUE(out->Tail(1000) == data.substr(5 * kMiB - 1000, 1000));
  EXPECT_TRUE(out->Tail(2 * kMiB) == data.substr(4 * kMiB, kMiB));  // only what is kept
  // A second part and 100 bytes buffered: the tail spans both.
  TL_ASSERT_OK(out->Write(data.data() + 5 * kMiB, 5 * kMiB + 100));
  EXPECT_TRUE(out->Tail(kMiB) == data.substr(data.size() - kMiB));
  EXPECT_TRUE(out->Tail(50) == data.substr(data.size() - 50));
  EXPECT_EQ(out->Tail(0), "");
  TL_ASSERT_OK(out->Close());
  TL_ASSERT_OK_AND_ASSIGN(auto buffer, store_->Get("t/tail.bin"));
  EXPECT_TRUE(AsString(buffer) == data) << "contents differ";
}

std::shared_ptr<arrow::Table> RandomTable(int64_t rows) {
  std::mt19937_64 rng(11);
  arrow::Int64Builder ids;
  arrow::DoubleBuilder values;
  for (int64_t i = 0; i < rows; ++i) {
    EXPECT_TRUE(ids.Append(i).ok());
    EXPECT_TRUE(values.Append(std::uniform_real_distribution<double>(0, 1)(rng)).ok());
  }
  auto schema = arrow::schema({arrow::field("id", arrow::int64(), false),
                               arrow::field("value", arrow::float64())});
  return arrow::Table::Make(schema,
                            {ids.Finish().ValueOrDie(), values.Finish().ValueOrDie()});
}

TEST_P(StoreIo, ParquetRoundTrip) {
  // Random doubles do not compress: about 10 MiB of Parquet, two parts.
  auto table = RandomTable(1 << 20);
  TL_ASSERT_OK_AND_ASSIGN(auto out, StoreOutputStream::Open(*store_, "t/d.parquet"));
  TL_ASSERT_OK_AND_ASSIGN(
      auto writer, parquet::arrow::FileWriter::Open(*table->schema(),
                                                    arrow::default_memory_pool(), out));
  TL_ASSERT_OK(writer->WriteTable(*table, 256 * 1024));
  TL_ASSERT_OK(writer->Close());
  TL_ASSERT_OK(out->Close());
  TL_ASSERT_OK_AND_ASSIGN(int64_t bytes, out->Tell());
  EXPECT_GT(bytes, 8 * kMiB);

  auto file = StoreInputFile::Open(store_, "t/d.parquet");
  TL_ASSERT_OK_AND_ASSIGN(auto reader,
                          parquet::arrow::OpenFile(file, arrow::default_memory_pool()));
  TL_ASSERT_OK_AND_ASSIGN(auto back, reader->ReadTable());
  EXPECT_TRUE(back->Equals(*table));
}

TEST_P(StoreIo, AbortedParquetWriterLeavesNothing) {
  // What the data writer does on an error: abort the stream before the Parquet
  // writer, whose destructor finishes the file, goes away.
  auto table = RandomTable(1000);
  {
    TL_ASSERT_OK_AND_ASSIGN(auto out, StoreOutputStream::Open(*store_, "t/e.parquet"));
    TL_ASSERT_OK_AND_ASSIGN(
        auto writer, parquet::arrow::FileWriter::Open(*table->schema(),
                                                      arrow::default_memory_pool(), out));
    TL_ASSERT_OK(writer->WriteTable(*table, 100));
    TL_ASSERT_OK(out->Abort());
  }
  ExpectAbsent("t/e.parquet");
  EXPECT_EQ(Everything(), std::set<std::string>{});
}

TEST_P(StoreIo, DataWriterStreamsLargeFiles) {
  // A plain (unpartitioned) table whose one data file spans two parts.
  write::Layout layout;
  auto table = RandomTable(1 << 20);
  auto with_ids =
      arrow::schema({table->schema()->field(0)->WithMetadata(
                         arrow::key_value_metadata({"PARQUET:field_id"}, {"1"})),
                     table->schema()->field(1)->WithMetadata(
                         arrow::key_value_metadata({"PARQUET:field_id"}, {"2"}))});
  layout.schema = with_ids;
  TL_ASSERT_OK_AND_ASSIGN(auto batch, table->CombineChunksToBatch());
  TL_ASSERT_OK_AND_ASSIGN(
      auto output, write::WriteDataFiles(*store_, "ns/t/data", layout, {batch},
                                         internal::TimePoint(std::chrono::hours(1))));
  ASSERT_EQ(output.files.size(), 1u);
  const auto& f = output.files[0];
  EXPECT_EQ(f.rows, 1 << 20);
  TL_ASSERT_OK_AND_ASSIGN(auto size, store_->Size(f.key));
  EXPECT_EQ(static_cast<int64_t>(size), f.bytes);
  EXPECT_GT(f.bytes, 8 * kMiB);
  EXPECT_EQ(f.value_counts.at(1), 1 << 20);
  EXPECT_EQ(f.lower_bounds.size(), 2u);

  auto file = StoreInputFile::Open(store_, f.key, f.bytes);
  TL_ASSERT_OK_AND_ASSIGN(auto reader,
                          parquet::arrow::OpenFile(file, arrow::default_memory_pool()));
  TL_ASSERT_OK_AND_ASSIGN(auto back, reader->ReadTable());
  EXPECT_EQ(back->num_rows(), 1 << 20);
  EXPECT_TRUE(back->column(1)->Equals(*table->column(1)));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreIo, ::timelake::testing::kAllBackends,
                         ::timelake::testing::BackendParamName);

}  // namespace
}  // namespace timelake::storage
