// Names of the store's error kinds and which of them are the user's to fix.
#include "store/errors.hpp"

namespace tessera::store {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::io: return "io";
    case ErrorKind::locked: return "locked";
    case ErrorKind::busy: return "busy";
    case ErrorKind::full: return "full";
    case ErrorKind::corrupt: return "corrupt";
    case ErrorKind::newer_schema: return "newer_schema";
    case ErrorKind::not_found: return "not_found";
    case ErrorKind::ambiguous: return "ambiguous";
    case ErrorKind::duplicate: return "duplicate";
    case ErrorKind::invalid: return "invalid";
  }
  return "unknown";
}

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
