// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The injectable clock. Every rule that depends on "now" (insertion time,
// snapshot timestamps, retention, expiry) reads time through a Clock so that
// tests can run them with a fake one instead of sleeping.

#ifndef TIMELAKE_UTIL_CLOCK_H_
#define TIMELAKE_UTIL_CLOCK_H_

#include <atomic>
#include <chrono>
#include <memory>

namespace timelake::internal {

using TimePoint =
    std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

// The wall clock.
class SystemClock final : public Clock {
 public:
  TimePoint Now() const override;
};

// A clock that moves only when told to.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start) : now_us_(start.time_since_epoch().count()) {}
  TimePoint Now() const override {
    return TimePoint(std::chrono::microseconds(now_us_.load()));
  }
  void Advance(std::chrono::microseconds d) { now_us_ += d.count(); }
  void Set(TimePoint t) { now_us_ = t.time_since_epoch().count(); }

 private:
  std::atomic<int64_t> now_us_;
};

// The process-wide default clock (a SystemClock).
std::shared_ptr<Clock> DefaultClock();

inline int64_t ToMicros(TimePoint t) { return t.time_since_epoch().count(); }
inline int64_t ToMillis(TimePoint t) { return t.time_since_epoch().count() / 1000; }

}  // namespace timelake::internal

#endif  // TIMELAKE_UTIL_CLOCK_H_
