// The crash sandbox (larmor/util/subprocess_sandbox.hpp): posix_spawn, one pipe for the helper's output,
// waitpid polled so that a cancel can kill it. POSIX only, like the rest of the engine.
#include "larmor/util/subprocess_sandbox.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "larmor/util/error.hpp"

extern char** environ;

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LARMOR_SANDBOX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LARMOR_SANDBOX_ASAN 1
#endif

namespace fs = std::filesystem;

namespace larmor {

namespace {

// Set in the helper's environment by runSandboxed, read by insideSandbox and applySandboxLimits.
constexpr const char* kChildVariable = "LARMOR_SANDBOX_CHILD";
constexpr const char* kAddressSpaceVariable = "LARMOR_SANDBOX_ADDRESS_SPACE";
// The output kept: an error message, or a sanitizer report in the fuzz tree (tests/fuzz).
constexpr std::size_t kMaxOutput = 65536;

// The caller's environment without our own variables (a stale limit must not reach the helper), plus
// the ones for this job.
std::vector<std::string> helperEnvironment(const SandboxJob& job) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "LARMOR_SANDBOX_", 15) != 0) env.emplace_back(*e);
  env.emplace_back(std::string(kChildVariable) + "=1");
  if (job.addressSpaceBytes > 0)
    env.emplace_back(std::string(kAddressSpaceVariable) + "=" + std::to_string(job.addressSpaceBytes));
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Appends what the pipe holds now; false at its end (the helper and its children closed it).
bool drain(int fd, std::string& text) {
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0 && text.size() < kMaxOutput) text.append(buf, static_cast<std::size_t>(n));
  return n > 0 || (n < 0 && errno == EINTR);
}

// Collects the helper's output until it exits; kills it when `progress` is cancelled.
int waitForHelper(pid_t pid, int fd, std::string& text, const Progress& progress) {
  bool open = true;
  int status = 0;
  for (;;) {
    if (open) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) open = drain(fd, text);
    } else {
      ::usleep(20000);
    }
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    try {
      progress.checkCancelled();
    } catch (...) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw;
    }
  }
  while (open) open = drain(fd, text);  // what is left in the pipe
  return status;
}

std::string oneLineOutput(std::string text) {
  for (auto& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  while (!text.empty() && text.front() == ' ') text.erase(text.begin());
  return text;
}

// The Error for a helper that did not exit 0.
Error failure(const SandboxJob& job, int status, const std::string& text) {
  if (WIFSIGNALED(status)) {
    const std::string crasher = job.crasher.empty() ? fs::path(job.helper).filename().string() : job.crasher;
    return Error(job.file + ": " + job.crashVerdict + " (" + crasher + " crashed reading it: " +
                 strsignal(WTERMSIG(status)) + ")");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kSandboxErrorExit && !job.errorMarker.empty()) {
    const std::size_t at = text.rfind(job.errorMarker);
    if (at != std::string::npos) return Error(oneLineOutput(text.substr(at + job.errorMarker.size())));
  }
  const std::string out = oneLineOutput(text);
  return Error(job.file + ": cannot be read (" + (out.empty() ? "the reader stopped" : out) + ")");
}

}  // namespace

SandboxOutcome runSandboxed(const SandboxJob& job, const Progress& progress) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return SandboxOutcome::HelperUnavailable;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  std::vector<std::string> args{job.helper, job.file};
  args.insert(args.end(), job.args.begin(), job.args.end());
  std::vector<std::string> env = helperEnvironment(job);
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, job.helper.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    return SandboxOutcome::HelperUnavailable;
  }
  std::string text;
  int status = 0;
  try {
    status = waitForHelper(pid, out[0], text, progress);
  } catch (...) {
    ::close(out[0]);
    throw;
  }
  ::close(out[0]);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return SandboxOutcome::Passed;
  throw failure(job, status, text);
}

std::string findSandboxHelper(const std::string& name, const char* overrideVariable) {
  if (insideSandbox()) return {};
  if (const char* no = std::getenv("LARMOR_NO_SANDBOX"); no && *no && std::string(no) != "0") return {};
  if (const char* e = overrideVariable ? std::getenv(overrideVariable) : nullptr; e && *e) return e;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&findSandboxHelper), &info) == 0 || !info.dli_fname) return {};
  const fs::path lib = fs::path(info.dli_fname).parent_path();
  for (const fs::path& p : {lib / "larmor" / name, lib / ".." / "bin" / name})
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  return {};
}

bool insideSandbox() { return std::getenv(kChildVariable) != nullptr; }

void applySandboxLimits() {
#ifndef LARMOR_SANDBOX_ASAN
  const char* value = std::getenv(kAddressSpaceVariable);
  if (!value || !*value) return;
  const auto bytes = static_cast<rlim_t>(std::strtoull(value, nullptr, 10));
  const rlimit rl{bytes, bytes};
  if (bytes > 0) setrlimit(RLIMIT_AS, &rl);
#endif
}

int reportSandboxError(const std::string& marker, const std::string& message) {
  // On a line of its own: anything the libraries wrote before it is not part of the message.
  std::fflush(stderr);
  std::printf("\n%s%s", marker.c_str(), message.c_str());
  std::fflush(stdout);
  return kSandboxErrorExit;
}

}  // namespace larmor
