// Which of the store's errors are the user's to fix.
#include "store/errors.hpp"

namespace tessera::store {

bool StoreError::is_user_error() const {
  switch (kind_) {
    case ErrorKind::not_found:
    case ErrorKind::ambiguous:
    case ErrorKind::duplicate:
    case ErrorKind::invalid: return true;
    default: return false;
  }
}

}  // namespace tessera::store
