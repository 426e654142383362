// JSON text parsed with every object's keys checked to be distinct, for JSON read from outside (spec
// files, the agent's wire frames): nlohmann/json keeps the last of two equal keys without a word, so
// "tp": 2, …, "tp": 1 planned TP1, and a frame giving "run" twice ran whichever came last.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::spec {

/// `text` parsed as `Json` (nlohmann::json or ordered_json; throws its parse_error on bad syntax).
/// When an object gives a key twice, `duplicate` is set to the dotted path of the first such key
/// ("parallel.tp"; "" for the key "" at the top).
template <class Json = nlohmann::json>
Json parse_json_unique_keys(std::string_view text, std::optional<std::string>& duplicate) {
  // Per open object: its keys so far and the latest (the path of a duplicate).
  struct Object {
    std::set<std::string> keys;
    std::string key;
  };
  std::vector<Object> open;
  const typename Json::parser_callback_t note_keys = [&](int, typename Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      open.pop_back();
    } else if (event == Json::parse_event_t::key && !open.empty()) {
      open.back().key = parsed.template get<std::string>();
      if (!open.back().keys.insert(open.back().key).second && !duplicate) {
        duplicate.emplace();
        for (const auto& object : open) *duplicate += (duplicate->empty() ? "" : ".") + object.key;
      }
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), note_keys);
}

/// A duplicate's dotted path as an error shows it: up to 64 bytes, cut before a UTF-8 character
/// rather than inside one, then "...". A key can be megabytes long.
inline std::string shown_key_path(std::string_view path) {
  constexpr size_t kShownBytes = 64;
  if (path.size() <= kShownBytes) return std::string(path);
  size_t end = kShownBytes;
  while (end > 0 && (static_cast<unsigned char>(path[end]) & 0xC0) == 0x80) --end;
  return std::string(path.substr(0, end)) + "...";
}

}  // namespace tessera::spec
