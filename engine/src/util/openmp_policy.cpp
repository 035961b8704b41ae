// usePassiveOpenMpWait (util/openmp_policy.hpp): set OMP_WAIT_POLICY=PASSIVE and re-execute once.
#include "larmor/util/openmp_policy.hpp"

#include <unistd.h>

#include <cstdlib>

namespace larmor {

void usePassiveOpenMpWait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || argv == nullptr || argv[0] == nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // execv only returns on failure: go on with the policy libgomp already has.
}

}  // namespace larmor
