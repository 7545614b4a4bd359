// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/util.h"

#include <cctype>
#include <iostream>
#include <memory>

#include <fmt/format.h>

namespace timelake::cli {
namespace {

constexpr std::string_view kUsageDetailId = "timelake-cli-usage";

class UsageDetail : public arrow::StatusDetail {
 public:
  const char* type_id() const override { return kUsageDetailId.data(); }
  std::string ToString() const override { return "usage error"; }
};

}  // namespace

arrow::Status UsageError(std::string message) {
  return arrow::Status::Invalid(std::move(message))
      .WithDetail(std::make_shared<UsageDetail>());
}

bool IsUsageError(const arrow::Status& status) {
  return status.detail() != nullptr &&
         std::string_view(status.detail()->type_id()) == kUsageDetailId;
}

std::string OneLine(std::string_view message) {
  std::string line;
  bool space = false;
  for (char c : message) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !line.empty();
      continue;
    }
    if (space) line.push_back(' ');
    space = false;
    line.push_back(c);
  }
  return line;
}

void PrintError(const arrow::Status& status) {
  const std::string message =
      status.message().empty() ? status.ToString() : status.message();
  std::cerr << "timelake: error: " << OneLine(message) << std::endl;
}

std::string ToLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

arrow::Result<std::pair<std::string, std::string>> SplitKeyValue(
    const std::string& text, std::string_view option) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return UsageError(fmt::format("{} expects KEY=VALUE, got '{}'", option, text));
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

arrow::Result<std::map<std::string, std::string>> ParseKeyValues(
    const std::vector<std::string>& items, std::string_view option) {
  std::map<std::string, std::string> map;
  for (const auto& item : items) {
    ARROW_ASSIGN_OR_RAISE(auto kv, SplitKeyValue(item, option));
    map[kv.first] = kv.second;
  }
  return map;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace timelake::cli
