// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// A main() for the fuzz targets when they are built without libFuzzer: runs
// LLVMFuzzerTestOneInput once on every file named on the command line, or
// on every regular file (recursively) of a directory named there, in sorted
// order. This makes each committed corpus a regression test under ctest, with
// the normal compiler and no sanitizer runtime. A failing input aborts the
// process (see fuzz_check.h); the file being run is printed first so that the
// log names it. Exit status 1 when no input was found: a replay that runs
// nothing cannot fail, and a test that cannot fail is a defect.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool ReadFile(const fs::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg, ec)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[i]);
      return 1;
    }
    if (ec) {
      std::fprintf(stderr, "%s: cannot read %s: %s\n", argv[0], argv[i],
                   ec.message().c_str());
      return 1;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s <corpus dir or file>...: no inputs found\n", argv[0]);
    return 1;
  }
  std::string bytes;
  for (const auto& path : inputs) {
    if (!ReadFile(path, &bytes)) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], path.c_str());
      return 1;
    }
    std::fprintf(stderr, "running %s (%zu bytes)\n", path.c_str(), bytes.size());
    // A copy of exactly the input's size, so that reads past its end are as
    // visible to a sanitizer build as they are under libFuzzer.
    std::vector<uint8_t> copy(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(copy.data(), copy.size());
  }
  std::printf("%zu inputs replayed, 0 failed\n", inputs.size());
  return 0;
}
