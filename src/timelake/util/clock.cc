// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/util/clock.h"

namespace timelake::internal {

TimePoint SystemClock::Now() const {
  return std::chrono::time_point_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now());
}

std::shared_ptr<Clock> DefaultClock() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SystemClock>();
  return clock;
}

}  // namespace timelake::internal
