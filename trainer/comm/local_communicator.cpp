#include "trainer/comm/local_communicator.hpp"

#include <fmt/format.h>

namespace dlsweep::trainer::comm {

Status LocalCommunicator::check_root(int root) {
  if (root != 0)
    return fail(fmt::format("broadcast from rank {} in a 1-rank world", root), "comm/local", "use root 0");
  return {};
}

}  // namespace dlsweep::trainer::comm
