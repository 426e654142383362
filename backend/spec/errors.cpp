// Spec errors and the "did you mean" helper.
#include "spec/errors.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace tessera::spec {

namespace {
std::string join_messages(const std::vector<FieldError>& errors) {
  std::string text;
  for (const auto& e : errors) {
    if (!text.empty()) text += "\n";
    text += e.message;
  }
  return text;
}
}  // namespace

SpecError::SpecError(std::vector<FieldError> errors)
    : std::runtime_error(join_messages(errors)), errors_(std::move(errors)) {}

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      // Case is no edit: "LLAMA3-8B" is "llama3-8b" typed with caps lock.
      const int substitution = diagonal + (std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                                                   std::tolower(static_cast<unsigned char>(b[j - 1]))
                                               ? 0
                                               : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {
// Candidates that `name` begins (any case), longer than it: "h100" for "h100-sxm", "gpt3" for "gpt3-175b".
std::vector<std::string> completions(std::string_view name, const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  if (name.size() < 2) return out;
  for (const auto& candidate : candidates) {
    const bool begins = candidate.size() > name.size() &&
                        std::equal(name.begin(), name.end(), candidate.begin(), [](char x, char y) {
                          return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
                        });
    if (begins) out.push_back(candidate);
  }
  return out;
}
}  // namespace

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  if (const auto begun = completions(name, candidates); begun.size() == 1) return begun.front();
  std::string best;
  int best_distance = 0;
  for (const auto& candidate : candidates) {
    const int d = edit_distance(name, candidate);
    if (best.empty() || d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  // Only suggest what is plausibly a typo: at most a third of the longer name changed.
  const int limit = std::max<int>(2, static_cast<int>(std::max(name.size(), best.size()) / 3));
  return best_distance <= limit ? best : std::string{};
}

std::string join_alternatives(const std::vector<std::string>& items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) text += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return text;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  auto begun = completions(name, candidates);
  if (begun.size() < 2 || begun.size() > 3) {
    const std::string near = closest_name(name, candidates);
    if (near.empty()) return {};
    begun = {near};
  }
  for (auto& candidate : begun) candidate = "\"" + candidate + "\"";
  return " (did you mean " + join_alternatives(begun) + "?)";
}

}  // namespace tessera::spec
