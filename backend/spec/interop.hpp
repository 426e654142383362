// Interoperability: a spec from a Hugging Face config.json, and the Megatron-LM command line of a spec.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/run_spec.hpp"

namespace tessera::spec {

/// The model section (and a name) of a spec from a Hugging Face config.json of a Llama, Mistral,
/// Mixtral or GPT-2 model. Throws SpecError naming the config field that is missing or unsupported.
/// What the import changed from the config, one sentence each, goes to `notes` when given (a
/// sliding window shorter than max_position_embeddings becomes the sequence length).
nlohmann::json spec_from_hf_config(const nlohmann::json& config, const std::string& source_name,
                                   std::vector<std::string>* notes = nullptr);
/// A config.json file read as a spec file is (read_spec_file_text, parse_spec_json): at most
/// kMaxSpecFileBytes, no NUL or key given twice; an empty or non-JSON file said to be no config.json.
/// What tessera-cli import hf and the workbench's import both read. Throws SpecError.
nlohmann::json read_hf_config_file(const std::string& path);

struct MegatronExport {
  std::string command;             ///< torchrun ... pretrain_gpt.py --num-layers ...
  std::vector<std::string> notes;  ///< settings Megatron-LM has no flag for
};
MegatronExport megatron_command(const RunSpec& spec);

}  // namespace tessera::spec
