// Errors of the run spec: every problem names the field (dotted path) and the rule it breaks.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::spec {

/// One problem with one field, e.g. {"parallel.tp", "parallel.tp=3 must divide model.num_attention_heads=32"}.
struct FieldError {
  std::string field;
  std::string message;
  bool operator==(const FieldError&) const = default;
};

/// Thrown when a spec cannot be parsed or does not validate; holds every problem found.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(std::vector<FieldError> errors);
  const std::vector<FieldError>& errors() const { return errors_; }

 private:
  std::vector<FieldError> errors_;
};

/// Edit distance, used to suggest the closest valid name for an unknown one.
int edit_distance(std::string_view a, std::string_view b);
/// The candidate closest to `name`: the one candidate that begins with it ("h100" → "h100-sxm"),
/// else the nearest by edit distance; "" when none is reasonably close.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);
/// "a", "a or b", "a, b or c": alternatives in a message.
std::string join_alternatives(const std::vector<std::string>& items);
/// ` (did you mean "X"?)` for closest_name, ` (did you mean "a100-40gb" or "a100-80gb"?)` when two or
/// three candidates begin with `name`; "" when nothing is close.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace tessera::spec
