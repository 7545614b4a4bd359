// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/timelake.h"

namespace timelake {

namespace {
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-';
}

std::string Quoted(std::string_view s) {
  // Shows control and non-ASCII bytes as escapes so the message stays one line.
  std::string out = "'";
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}
}  // namespace

arrow::Status ValidateNamePart(std::string_view part, std::string_view what) {
  if (part.empty()) return Invalid("invalid " + std::string(what) + ": empty");
  if (part.size() > 255) {
    return Invalid("invalid " + std::string(what) + " " + Quoted(part.substr(0, 40)) +
                   "...: longer than 255 characters");
  }
  for (char c : part) {
    if (!IsNameChar(c)) {
      return Invalid("invalid " + std::string(what) + " " + Quoted(part) +
                     ": only letters, digits, '_' and '-' are allowed");
    }
  }
  return arrow::Status::OK();
}

arrow::Result<TableName> TableName::Parse(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) {
    TIMELAKE_RETURN_NOT_OK(ValidateNamePart(text, "table name"));
    return TableName(std::string(kDefaultNamespace), std::string(text));
  }
  if (text.find('.', dot + 1) != std::string_view::npos) {
    return Invalid("invalid table name " + Quoted(text) +
                   ": expected 'namespace.table' or 'table'");
  }
  TIMELAKE_RETURN_NOT_OK(ValidateNamePart(text.substr(0, dot), "namespace"));
  TIMELAKE_RETURN_NOT_OK(ValidateNamePart(text.substr(dot + 1), "table name"));
  return TableName(std::string(text.substr(0, dot)), std::string(text.substr(dot + 1)));
}

std::string_view ChunkName(Chunk chunk) {
  switch (chunk) {
    case Chunk::kHour:
      return "hour";
    case Chunk::kDay:
      return "day";
    case Chunk::kMonth:
      return "month";
  }
  return "day";
}

arrow::Result<Chunk> ParseChunk(std::string_view text) {
  if (text == "hour") return Chunk::kHour;
  if (text == "day") return Chunk::kDay;
  if (text == "month") return Chunk::kMonth;
  return Invalid("invalid chunk '" + std::string(text) +
                 "': expected hour, day or month");
}

}  // namespace timelake
