// Every test binary's main: GoogleTest's, with a handler for the signals a crash raises (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT) that prints the crashing thread's stack, symbolized, before the
// test dies. A crash seen once in hundreds of runs cannot be rerun under a debugger in CI; its
// stack in the test's output (ctest --output-on-failure) is what there is to go on. The stack is
// unwound from the binaries' unwind tables (glibc's backtrace), which need no frame pointers (a
// Release build has none), and named by abseil's symbolizer, which is safe in a signal handler;
// a frame in a stripped library's local function is given as the library's file and offset.
// The handler then re-raises the signal with its default action, so the test still dies by it
// (death tests see their child die as before).
#include <dlfcn.h>
#include <execinfo.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/debugging/symbolize.h"

namespace {

void Write(const char* s) {
  const ssize_t ignored = write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

void PrintStackAndDie(int sig) {
  char line[1200];
  std::snprintf(line, sizeof(line), "*** signal %d (%s) in a test: stack ***\n", sig,
                strsignal(sig));
  Write(line);
  void* frames[64];
  const int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i) {
    char name[1024];
    if (!absl::Symbolize(frames[i], name, sizeof(name))) {
      // A local symbol of a stripped library: its file and offset, for addr2line or objdump.
      Dl_info info;
      if (dladdr(frames[i], &info) != 0 && info.dli_fname != nullptr) {
        std::snprintf(name, sizeof(name), "? (%s+%#lx)", info.dli_fname,
                      static_cast<unsigned long>(static_cast<const char*>(frames[i]) -
                                                 static_cast<const char*>(info.dli_fbase)));
      } else {
        std::snprintf(name, sizeof(name), "?");
      }
    }
    std::snprintf(line, sizeof(line), "    @ %p %s\n", frames[i], name);
    Write(line);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  absl::InitializeSymbolizer(argv[0]);
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now, not inside the handler
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = PrintStackAndDie;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
  testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
