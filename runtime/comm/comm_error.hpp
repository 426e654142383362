// The error every failed or timed-out communication ends in: it names the operation, the group and,
// when they can be told apart, the peers that stopped answering.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera::runtime {

class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tessera::runtime
