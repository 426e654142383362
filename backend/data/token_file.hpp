// Token files (docs/data.md): a 32-byte little-endian header — magic "TESSTOK\0", version, bytes per
// token (2 = uint16, 4 = uint32), vocabulary size, token count — then the tokens. And the byte-level
// tokenizer of `tessera-cli data prepare` (token = byte value, vocabulary 256).
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::data {

constexpr char kTokenFileMagic[8] = {'T', 'E', 'S', 'S', 'T', 'O', 'K', '\0'};
constexpr uint32_t kTokenFileVersion = 1;
constexpr int64_t kTokenFileHeaderBytes = 32;

/// A problem with a data file; the message names the file and what is wrong.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TokenFile {
  int64_t vocab_size = 0;
  int bytes_per_token = 2;
  std::vector<uint32_t> tokens;
};

/// Tokens as uint16 when the vocabulary fits (≤ 65,536), else uint32; written to a temporary file
/// and renamed, so a reader never sees half a file. Throws DataError.
void write_token_file(const std::string& path, const std::vector<uint32_t>& tokens, int64_t vocab_size);

/// Reads and checks a whole token file: header, version, token width, that the size matches the
/// count, that every token is below the vocabulary size. Throws DataError naming the file.
TokenFile read_token_file(const std::string& path);

/// Byte-level tokenizer: one token per byte of UTF-8 text.
constexpr int64_t kByteVocabSize = 256;
std::vector<uint32_t> byte_tokenize(std::string_view text);

/// The bytes of `inputs`, concatenated in order, as a byte-level token file at `path` (what
/// byte_tokenize and write_token_file make), streamed a megabyte at a time: memory does not grow with
/// the corpus. Written to a temporary file and renamed; returns the token count. Throws DataError
/// naming the file that cannot be read or written (with the system's reason), or for empty inputs.
/// Once `*cancel` is true (a signal handler's flag; checked after each megabyte and when a read or an
/// open is interrupted) it stops with DataError "interrupted", the temporary removed.
int64_t write_byte_token_file(const std::string& path, const std::vector<std::string>& inputs,
                              const std::atomic<bool>* cancel = nullptr);

}  // namespace tessera::data
