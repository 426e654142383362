// CLI11 checks that the command lines of tessera-cli and tessera-agent share: the rules CLI11's own
// validators leave open (an empty value meaning the default, NaN passing a range).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include <CLI/CLI.hpp>

namespace tessera::cli {

/// For an option whose empty value would silently mean its default (--db "", --agents "").
inline CLI::Validator non_empty() {
  return CLI::Validator([](std::string& text) { return text.empty() ? std::string("must not be empty") : std::string(); }, "");
}

/// non_empty() on every option of `app` and of its subcommands that takes a value, but those named in
/// `may_be_empty` ("runs note text": the subcommand path, then the option's name): an empty value read
/// as "not given" (plan --tp '', tessera-train --out '' trained without output) or as "the default".
inline void refuse_empty_values(CLI::App& app, const std::set<std::string>& may_be_empty = {}, const std::string& path = "") {
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size() != 0 && !may_be_empty.count(path + option->get_name())) option->check(non_empty());
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    refuse_empty_values(*sub, may_be_empty, path + sub->get_name() + " ");
}

/// A finite number in [min, max]. CLI::Range alone lets "nan" through (every comparison with NaN is
/// false), and a NaN timeout waits for ever.
inline CLI::Validator finite_range(double min, double max) {
  const CLI::Validator finite(
      [](std::string& text) { return std::isfinite(std::strtod(text.c_str(), nullptr)) ? std::string() : std::string("must be a finite number"); },
      "");
  return CLI::Range(min, max) & finite;
}

/// For an integer option: text beyond the 64-bit range is refused naming it (CLI11 would clamp
/// 99999999999999999999 to 2^63 - 1, and the spec's range check would then quote that number).
inline CLI::Validator fits_int64() {
  return CLI::Validator(
      [](std::string& text) {
        // The conversion CLI11 itself makes (strtoll, base 0: 0x… and 0… too), so that what it would
        // clamp is what is refused.
        errno = 0;
        char* end = nullptr;
        std::strtoll(text.c_str(), &end, 0);
        return errno == ERANGE ? text + " is beyond the 64-bit integer range" : std::string();
      },
      "");
}

/// An integer option's value from `least` to `most` ("0 must be 1 or more", "5 must be from 0 to 3");
/// CLI11's own range checks print the bounds as floating-point numbers of 300 digits.
inline CLI::Validator integer_range(int64_t least, int64_t most = INT64_MAX) {
  return CLI::Validator(
      [least, most](std::string& text) {
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 0);
        if (value >= least && value <= most) return std::string();
        return text + " must be " +
               (most == INT64_MAX ? std::to_string(least) + " or more" : "from " + std::to_string(least) + " to " + std::to_string(most));
      },
      "");
}

}  // namespace tessera::cli
