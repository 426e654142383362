// Token file reader/writer and the byte tokenizer.
#include "data/token_file.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace tessera::data {

namespace {

template <typename T>
void put(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
}

template <typename T>
T get(const unsigned char* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

void write_token_file(const std::string& path, const std::vector<uint32_t>& tokens, int64_t vocab_size) {
  if (vocab_size < 1 || vocab_size > (int64_t{1} << 32))
    throw DataError(path + ": vocabulary size " + std::to_string(vocab_size) + " must be in 1..2^32");
  const uint32_t width = vocab_size <= 65536 ? 2 : 4;
  std::string out;
  out.reserve(kTokenFileHeaderBytes + tokens.size() * width);
  out.append(kTokenFileMagic, sizeof(kTokenFileMagic));
  put<uint32_t>(out, kTokenFileVersion);
  put<uint32_t>(out, width);
  put<uint64_t>(out, static_cast<uint64_t>(vocab_size));
  put<uint64_t>(out, tokens.size());
  for (uint32_t t : tokens) {
    if (t >= vocab_size) throw DataError(path + ": token " + std::to_string(t) + " is outside the vocabulary");
    width == 2 ? put<uint16_t>(out, static_cast<uint16_t>(t)) : put<uint32_t>(out, t);
  }
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    file.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!file) {
      std::filesystem::remove(temp);
      throw DataError("cannot write " + path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp);
    throw DataError("cannot write " + path + ": " + ec.message());
  }
}

TokenFile read_token_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw DataError("data file " + path + " cannot be opened (missing or unreadable)");
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (static_cast<int64_t>(bytes.size()) < kTokenFileHeaderBytes || std::memcmp(p, kTokenFileMagic, 8) != 0)
    throw DataError("data file " + path + " is not a Tessera token file (no TESSTOK header; make one with "
                    "`tessera-cli data prepare`)");
  const auto version = get<uint32_t>(p + 8);
  if (version != kTokenFileVersion)
    throw DataError("data file " + path + " has format version " + std::to_string(version) + "; this build reads " +
                    std::to_string(kTokenFileVersion));
  TokenFile out;
  out.bytes_per_token = static_cast<int>(get<uint32_t>(p + 12));
  out.vocab_size = static_cast<int64_t>(get<uint64_t>(p + 16));
  const auto count = get<uint64_t>(p + 24);
  if (out.bytes_per_token != 2 && out.bytes_per_token != 4)
    throw DataError("data file " + path + " has " + std::to_string(out.bytes_per_token) +
                    " bytes per token; must be 2 (uint16) or 4 (uint32)");
  // Compared by division: count x width of a corrupt count wraps around 2^64 (2^62 tokens of 4 bytes
  // "promised" 32 bytes).
  const uint64_t body_bytes = bytes.size() - kTokenFileHeaderBytes;
  if (body_bytes % out.bytes_per_token != 0 || count != body_bytes / out.bytes_per_token)
    throw DataError("data file " + path + " is " + std::to_string(bytes.size()) + " bytes but its header promises " +
                    std::to_string(count) + " tokens of " + std::to_string(out.bytes_per_token) +
                    " bytes after the " + std::to_string(kTokenFileHeaderBytes) + "-byte header: truncated or corrupt");
  out.tokens.resize(count);
  const unsigned char* body = p + kTokenFileHeaderBytes;
  for (uint64_t i = 0; i < count; ++i) {
    out.tokens[i] = out.bytes_per_token == 2 ? get<uint16_t>(body + 2 * i) : get<uint32_t>(body + 4 * i);
    if (out.tokens[i] >= out.vocab_size)
      throw DataError("data file " + path + ": token " + std::to_string(i) + " = " + std::to_string(out.tokens[i]) +
                      " is not below the vocabulary size " + std::to_string(out.vocab_size) + ": corrupt");
  }
  return out;
}

std::vector<uint32_t> byte_tokenize(std::string_view text) {
  std::vector<uint32_t> out(text.size());
  for (size_t i = 0; i < text.size(); ++i) out[i] = static_cast<unsigned char>(text[i]);
  return out;
}

}  // namespace tessera::data
