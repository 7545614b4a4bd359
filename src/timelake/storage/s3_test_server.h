// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// A private S3-compatible server for GoogleTest tests (tests only: it needs
// TIMELAKE_TEST_FIXTURES_DIR, which the test target defines).
//
// S3TestServer::Get() starts `scripts/s3server.py` (versitygw on 127.0.0.1,
// a free port, a fresh temporary directory) with the project's
// `.venv/bin/python` the first time a test asks, reads the JSON line it
// prints when ready, and keeps it for the rest of the process. A global
// test environment stops it after the last test by closing the launcher's
// stdin; should the process die first, the kernel closes that pipe and the
// launcher stops the server all the same.
//
// With TIMELAKE_TEST_S3_ENDPOINT and TIMELAKE_TEST_S3_BUCKET (an existing
// bucket) set, that server is used instead, with TIMELAKE_TEST_S3_REGION,
// TIMELAKE_TEST_S3_ACCESS_KEY_ID and TIMELAKE_TEST_S3_SECRET_ACCESS_KEY
// (placeholders when unset), as the Rust crate's tests do.

#ifndef TIMELAKE_STORAGE_S3_TEST_SERVER_H_
#define TIMELAKE_STORAGE_S3_TEST_SERVER_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <arrow/result.h>
#include <arrow/status.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#ifndef TIMELAKE_TEST_FIXTURES_DIR
#error "s3_test_server.h is for tests: TIMELAKE_TEST_FIXTURES_DIR must be defined"
#endif

extern char** environ;

namespace timelake::storage::testing {

struct S3ServerInfo {
  std::string endpoint;  // "http://127.0.0.1:PORT"
  std::string bucket;
  std::string region;
  std::string access_key_id;
  std::string secret_access_key;

  // The options of Store::Open / Lake::Open for this server.
  std::map<std::string, std::string> StoreOptions() const {
    return {{"aws_endpoint", endpoint},
            {"aws_allow_http", "true"},
            {"aws_region", region},
            {"aws_access_key_id", access_key_id},
            {"aws_secret_access_key", secret_access_key}};
  }
};

class S3TestServer {
 public:
  // How long the launcher may take to report its server (it bounds its own
  // wait too, at 30 s).
  static constexpr std::chrono::seconds kStartTimeout{60};

  // The server of this process, started on first use. Thread-safe. Errors:
  // IOError when the launcher cannot be run or reports no server (its
  // stderr, inherited, says why).
  static arrow::Result<S3ServerInfo> Get() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.info) return *s.info;
    if (const char* endpoint = std::getenv("TIMELAKE_TEST_S3_ENDPOINT")) {
      if (const char* bucket = std::getenv("TIMELAKE_TEST_S3_BUCKET")) {
        s.info = S3ServerInfo{
            endpoint, bucket, Env("TIMELAKE_TEST_S3_REGION", "us-east-1"),
            Env("TIMELAKE_TEST_S3_ACCESS_KEY_ID", "AKIDTIMELAKETEST"),
            Env("TIMELAKE_TEST_S3_SECRET_ACCESS_KEY", "timelake-fake-secret")};
        return *s.info;
      }
    }
    // A launcher that failed once fails again: report that, do not wait again.
    if (!s.failure.ok()) return s.failure;
    auto launched = Launch(s);
    if (!launched.ok()) {
      s.failure = launched.status();
      return s.failure;
    }
    s.info = *std::move(launched);
    return *s.info;
  }

  // Stops a server Get() started (closing the launcher's stdin, which makes
  // it stop versitygw and delete its directory) and waits for the launcher,
  // at most 15 s before killing it.
  static void Stop() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    StopLocked(s);
    s.info.reset();
  }

 private:
  struct State {
    std::mutex mu;
    std::optional<S3ServerInfo> info;
    arrow::Status failure;  // of the launch, if it failed
    pid_t pid = -1;
    int stdin_fd = -1;  // write end of the launcher's stdin
  };

  static State& state() {
    static State s;
    return s;
  }

  static std::string Env(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : fallback;
  }

  static arrow::Result<S3ServerInfo> Launch(State& s) {
    const std::filesystem::path root =
        std::filesystem::path(TIMELAKE_TEST_FIXTURES_DIR).parent_path().parent_path();
    const std::string python = (root / ".venv" / "bin" / "python").string();
    const std::string launcher = (root / "scripts" / "s3server.py").string();
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return arrow::Status::IOError("pipe2: ", errno);
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]);
      close(in[1]);
      return arrow::Status::IOError("pipe2: ", errno);
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    std::string arg0 = python, arg1 = launcher;
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, python.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      return arrow::Status::IOError("cannot run ", python, " ", launcher, ": ",
                                    std::strerror(rc));
    }
    s.pid = pid;
    s.stdin_fd = in[1];

    // One line of JSON, or EOF when the launcher gives up.
    std::string line;
    bool timed_out = false;
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (line.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{out[0], POLLIN, 0};
      const int ready =
          left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
      if (ready < 0 && errno == EINTR) continue;
      timed_out = ready == 0;
      char buf[4096];
      // ::read: the POSIX call, not the namespace timelake::read.
      const ssize_t n = ready > 0 ? ::read(out[0], buf, sizeof(buf)) : 0;
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    try {
      const auto j = nlohmann::json::parse(line.substr(0, line.find('\n')));
      return S3ServerInfo{
          j.at("endpoint").get<std::string>(), j.at("bucket").get<std::string>(),
          j.at("region").get<std::string>(), j.at("access_key_id").get<std::string>(),
          j.at("secret_access_key").get<std::string>()};
    } catch (const std::exception&) {
      kill(pid, SIGTERM);
      StopLocked(s);
      return arrow::Status::IOError(
          launcher, " reported no S3 server",
          timed_out ? " within " + std::to_string(kStartTimeout.count()) + " s" : "",
          " (its stderr says why)", line.empty() ? "" : ": '" + line + "'");
    }
  }

  static void StopLocked(State& s) {
    if (s.pid <= 0) return;
    close(s.stdin_fd);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    int status = 0;
    while (waitpid(s.pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(s.pid, SIGKILL);
        waitpid(s.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    s.pid = -1;
  }
};

// Stops the server after the last test of the process.
class S3TestServerEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { S3TestServer::Stop(); }
};

inline ::testing::Environment* const kS3TestServerEnvironment =
    ::testing::AddGlobalTestEnvironment(new S3TestServerEnvironment);

}  // namespace timelake::storage::testing

#endif  // TIMELAKE_STORAGE_S3_TEST_SERVER_H_
