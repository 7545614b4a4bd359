// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Results on their way to Python, and running engine calls so that Ctrl-C
// still works.
//
// A ResultStream is what `Lake.sql`, `Lake.latest` and `Lake.sql_reader` get
// from the engine: either a collected arrow::Table (exportable any number of
// times) or a live RecordBatchReader (exportable once, read as the consumer
// pulls). Python consumes it through __arrow_c_stream__, so pyarrow, polars
// and DuckDB see the engine's own buffers.

#ifndef TIMELAKE_PYTHON_STREAMS_H_
#define TIMELAKE_PYTHON_STREAMS_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <nanobind/nanobind.h>

#include "errors.h"

namespace timelake::python {

class ResultStream {
 public:
  explicit ResultStream(std::shared_ptr<arrow::Table> table) : table_(std::move(table)) {}
  explicit ResultStream(std::shared_ptr<arrow::RecordBatchReader> reader)
      : reader_(std::move(reader)) {}

  // A new "arrow_array_stream" capsule. `requested_schema` is accepted as
  // the interface asks and ignored (the interface allows a producer to),
  // so the consumer gets the result's own types. A live reader can be
  // exported once; afterwards this throws a StatusError of kind kInvalid.
  nanobind::object ArrowCStream(nanobind::handle requested_schema);
  // A new "arrow_schema" capsule of the result's schema.
  nanobind::object ArrowCSchema() const;
  // Rows of a collected result (none for a live reader).
  std::optional<int64_t> num_rows() const;
  // The addresses of every buffer of a collected result, column by column,
  // chunk by chunk, buffer by buffer (0 for an absent validity buffer):
  // lets a test show that the consumer's buffers are these.
  std::vector<uintptr_t> BufferAddresses() const;

 private:
  std::shared_ptr<arrow::Table> table_;
  std::shared_ptr<arrow::RecordBatchReader> reader_;
};

// A schema on its way to Python (Table.schema), through __arrow_c_schema__.
struct SchemaHolder {
  std::shared_ptr<arrow::Schema> schema;
  nanobind::object ArrowCSchema() const;
};

// Runs `work` on a thread of its own while the caller waits without the GIL,
// checking for signals (Ctrl-C) every 50 ms. On a signal the pending Python
// exception (KeyboardInterrupt) is raised at once and `cancelled` is set:
// `work` should poll it between steps and give up; whatever it returns then
// is dropped. `work` must not touch Python objects. Called with the GIL held.
template <typename T>
arrow::Result<T> RunInterruptible(
    std::function<arrow::Result<T>(const std::atomic<bool>& cancelled)> work) {
  struct Shared {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<arrow::Result<T>> result;
    std::atomic<bool> cancelled{false};
  };
  auto shared = std::make_shared<Shared>();
  std::thread([shared, work = std::move(work)]() {
    // An exception must not leave this thread (it would terminate the
    // process); it becomes an internal error.
    arrow::Result<T> result = arrow::Status::UnknownError("not run");
    try {
      result = work(shared->cancelled);
    } catch (const std::exception& e) {
      result = MakeError(ErrorKind::kInternal,
                         std::string("unexpected exception: ") + e.what());
    }
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->result.emplace(std::move(result));
    shared->done = true;
    shared->done_cv.notify_all();
  }).detach();
  nanobind::gil_scoped_release release;
  std::unique_lock<std::mutex> lock(shared->mu);
  while (!shared->done_cv.wait_for(lock, std::chrono::milliseconds(50),
                                   [&] { return shared->done; })) {
    lock.unlock();
    bool interrupted;
    {
      nanobind::gil_scoped_acquire acquire;
      interrupted = PyErr_CheckSignals() != 0;
    }
    if (interrupted) {
      shared->cancelled = true;
      nanobind::gil_scoped_acquire acquire;
      throw nanobind::python_error();
    }
    lock.lock();
  }
  return std::move(*shared->result);
}

}  // namespace timelake::python

#endif  // TIMELAKE_PYTHON_STREAMS_H_
