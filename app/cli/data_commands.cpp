// `tessera-cli data prepare TEXT... -o FILE`: byte-level tokenization of text files into a token
// file (docs/data.md) for tessera-train.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "data/token_file.hpp"

namespace tessera::cli {

namespace {

// The signal that interrupted `data prepare`: its handler only records it, the writer stops at its
// next check and removes its temporary (a corpus of /dev/zero left an 8 GB .tmp file behind).
std::atomic<int> g_signal{0};
std::atomic<bool> g_interrupted{false};
extern "C" void record_signal(int signal) {
  g_signal = signal;
  g_interrupted = true;
}

// SIGINT, SIGTERM and SIGHUP recorded while it lives, without SA_RESTART (a read of a pipe, or the
// open of one nobody writes to, returns at once); the earlier handlers back after.
class SignalsRecorded {
 public:
  SignalsRecorded() {
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~SignalsRecorded() {
    for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  SignalsRecorded(const SignalsRecorded&) = delete;
  SignalsRecorded& operator=(const SignalsRecorded&) = delete;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction previous_[std::size(kSignals)] {};
};

}  // namespace

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
      const SignalsRecorded signals;
      tokens = data::write_byte_token_file(*output, *inputs, &g_interrupted);  // streamed: a corpus larger than memory is fine
    } catch (const data::DataError& e) {
      if (g_interrupted) {  // ended by a signal: the shell's status for it, 128 + its number
        std::cerr << "tessera-cli: " << e.what() << "\n";
        std::exit(128 + g_signal.load());
      }
      throw UsageError(e.what());
    }
    std::cout << "wrote " << tokens << " tokens (byte-level, vocabulary " << data::kByteVocabSize << ") to " << *output << "\n";
  });
}

}  // namespace tessera::cli
