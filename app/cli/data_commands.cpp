// `tessera-cli data prepare TEXT... -o FILE`: byte-level tokenization of text files into a token
// file (docs/data.md) for tessera-train.
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "data/token_file.hpp"

namespace tessera::cli {

void add_data_commands(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Prepare training data");
  data->require_subcommand(1);
  auto* prepare = data->add_subcommand("prepare", "Tokenize text files (bytes → tokens, vocabulary 256) into a token file");
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  prepare->add_option("TEXT", *inputs, "text files, concatenated in order")->required();
  prepare->add_option("-o,--output", *output, "token file to write")->required();
  prepare->callback([inputs, output] {
    for (const auto& path : *inputs) {
      std::error_code ec;
      if (std::filesystem::is_directory(path, ec)) throw UsageError(path + " is a directory: give the text files in it");
      // The token file would replace the text it was made from.
      if (std::filesystem::equivalent(path, *output, ec))
        throw UsageError("the output " + *output + " is the input " + path + ": write the token file elsewhere");
    }
    int64_t tokens = 0;
    try {
      tokens = data::write_byte_token_file(*output, *inputs);  // streamed: a corpus larger than memory is fine
    } catch (const data::DataError& e) {
      throw UsageError(e.what());
    }
    std::cout << "wrote " << tokens << " tokens (byte-level, vocabulary " << data::kByteVocabSize << ") to " << *output << "\n";
  });
}

}  // namespace tessera::cli
