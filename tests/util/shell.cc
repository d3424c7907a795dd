// Running a shell command: see shell.h.
#include "tests/util/shell.h"

#include <sys/wait.h>

#include <cstdio>

namespace twinscale::testutil {

ShellResult RunShell(const std::string& script) {
  ShellResult r;
  FILE* p = popen((script + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace twinscale::testutil
