// The enumerated values of the run spec, with their spellings in JSON (Megatron's vocabulary).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::spec {

enum class Arch { gpt, llama, mixtral, bert, t5 };
enum class Normalization { layernorm, rmsnorm };
enum class Activation { gelu, swiglu };
enum class PositionEmbedding { learned, rope, relative };
enum class Schedule { gpipe, one_f_one_b, interleaved, zb_h1 };
enum class Precision { fp32, bf16, fp16 };
enum class Recompute { none, selective, full };

template <typename E>
struct EnumNames;  // specialised below: a list of (value, spelling)

template <> struct EnumNames<Arch> {
  static constexpr std::pair<Arch, std::string_view> values[] = {
      {Arch::gpt, "gpt"}, {Arch::llama, "llama"}, {Arch::mixtral, "mixtral"}, {Arch::bert, "bert"}, {Arch::t5, "t5"}};
};
template <> struct EnumNames<Normalization> {
  static constexpr std::pair<Normalization, std::string_view> values[] = {
      {Normalization::layernorm, "layernorm"}, {Normalization::rmsnorm, "rmsnorm"}};
};
template <> struct EnumNames<Activation> {
  static constexpr std::pair<Activation, std::string_view> values[] = {{Activation::gelu, "gelu"},
                                                                       {Activation::swiglu, "swiglu"}};
};
template <> struct EnumNames<PositionEmbedding> {
  static constexpr std::pair<PositionEmbedding, std::string_view> values[] = {
      {PositionEmbedding::learned, "learned"}, {PositionEmbedding::rope, "rope"}, {PositionEmbedding::relative, "relative"}};
};
template <> struct EnumNames<Schedule> {
  static constexpr std::pair<Schedule, std::string_view> values[] = {{Schedule::gpipe, "gpipe"},
                                                                     {Schedule::one_f_one_b, "1f1b"},
                                                                     {Schedule::interleaved, "interleaved"},
                                                                     {Schedule::zb_h1, "zb-h1"}};
};
template <> struct EnumNames<Precision> {
  static constexpr std::pair<Precision, std::string_view> values[] = {
      {Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"}};
};
template <> struct EnumNames<Recompute> {
  static constexpr std::pair<Recompute, std::string_view> values[] = {
      {Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}};
};

template <typename E>
std::string_view to_string(E value) {
  for (const auto& [v, name] : EnumNames<E>::values)
    if (v == value) return name;
  return "?";
}

template <typename E>
std::optional<E> enum_from_string(std::string_view text) {
  for (const auto& [v, name] : EnumNames<E>::values)
    if (name == text) return v;
  return std::nullopt;
}

template <typename E>
std::vector<std::string> enum_spellings() {
  std::vector<std::string> out;
  for (const auto& [v, name] : EnumNames<E>::values) out.emplace_back(name);
  return out;
}

/// "a|b|c" for messages.
std::string join_spellings(const std::vector<std::string>& names);

/// Bytes per element of the precision used for weights and activations.
int bytes_per_element(Precision precision);

}  // namespace tessera::spec
