// Helpers for the spec's enumerations.
#include "spec/enums.hpp"

namespace tessera::spec {

std::string join_spellings(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += "|";
    out += n;
  }
  return out;
}

int bytes_per_element(Precision precision) { return precision == Precision::fp32 ? 4 : 2; }

}  // namespace tessera::spec
