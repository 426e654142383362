// Interoperability: a spec from a Hugging Face config.json, and the Megatron-LM command line of a spec.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/run_spec.hpp"

namespace tessera::spec {

/// The model section (and a name) of a spec from a Hugging Face config.json of a Llama, Mistral,
/// Mixtral or GPT-2 model. Throws SpecError naming the config field that is missing or unsupported.
/// What the import changed from the config, one sentence each, goes to `notes` when given (a
/// sliding window shorter than max_position_embeddings becomes the sequence length). Which config
/// field gave each spec field ("model.num_query_groups" → "num_key_value_heads") goes to
/// `config_fields` when given, for the spec's rules to name what the user wrote.
nlohmann::json spec_from_hf_config(const nlohmann::json& config, const std::string& source_name,
                                   std::vector<std::string>* notes = nullptr,
                                   std::map<std::string, std::string>* config_fields = nullptr);
/// The spec's problems with an imported config, each naming the config fields of `source` that gave
/// the spec fields it names: "model.num_query_groups=5 must divide model.num_attention_heads=32
/// (config.json: config fields num_key_value_heads, num_attention_heads)".
std::vector<FieldError> naming_config_fields(const std::vector<FieldError>& errors,
                                             const std::map<std::string, std::string>& config_fields, const std::string& source);
/// A config.json file read as a spec file is (read_spec_file_text, parse_spec_json): at most
/// kMaxSpecFileBytes, no NUL or key given twice; an empty or non-JSON file said to be no config.json.
/// What tessera-cli import hf and the workbench's import both read. Throws SpecError.
nlohmann::json read_hf_config_file(const std::string& path, int pipe_wait_ms = -1);

struct MegatronExport {
  std::string command;             ///< torchrun ... pretrain_gpt.py --num-layers ...
  std::vector<std::string> notes;  ///< settings Megatron-LM has no flag for
};
MegatronExport megatron_command(const RunSpec& spec);

}  // namespace tessera::spec
