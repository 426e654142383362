// `tessera-cli data prepare TEXT... -o FILE`: byte-level tokenization of text files into a token
// file (docs/data.md) for tessera-train.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

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
    std::string text;
    for (const auto& path : *inputs) {
      std::error_code ec;
      if (std::filesystem::is_directory(path, ec)) throw UsageError(path + " is a directory: give the text files in it");
      // The token file would replace the text it was made from.
      if (std::filesystem::equivalent(path, *output, ec))
        throw UsageError("the output " + *output + " is the input " + path + ": write the token file elsewhere");
      std::ifstream in(path, std::ios::binary);
      if (!in) throw UsageError("cannot read " + path);
      std::ostringstream contents;
      contents << in.rdbuf();
      text += contents.str();
    }
    if (text.empty()) throw UsageError("the input text is empty");
    const auto tokens = data::byte_tokenize(text);
    try {
      data::write_token_file(*output, tokens, data::kByteVocabSize);
    } catch (const data::DataError& e) {
      throw UsageError(e.what());
    }
    std::cout << "wrote " << tokens.size() << " tokens (byte-level, vocabulary " << data::kByteVocabSize << ") to "
              << *output << "\n";
  });
}

}  // namespace tessera::cli
