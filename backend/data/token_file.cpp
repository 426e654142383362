// Token file reader/writer and the byte tokenizer.
#include "data/token_file.hpp"

#include <algorithm>
#include <cerrno>
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

// The 32-byte header of docs/data.md.
std::string header_bytes(uint32_t width, int64_t vocab_size, uint64_t count) {
  std::string header;
  header.append(kTokenFileMagic, sizeof(kTokenFileMagic));
  put<uint32_t>(header, kTokenFileVersion);
  put<uint32_t>(header, width);
  put<uint64_t>(header, static_cast<uint64_t>(vocab_size));
  put<uint64_t>(header, count);
  return header;
}

// The system's reason for the last failed call, read before anything else can change errno.
std::string reason() { return std::strerror(errno); }

// The file `path` names, to be replaced whole: a symbolic link's target (the link stays); refused when it
// is (or ends in / as the name of) a directory, or a device or a pipe, which the rename would replace by
// a regular file (`data prepare -o /dev/null` turned /dev/null into one).
std::string written_path(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))
    throw DataError("cannot write " + path + ": it is a directory; give a file name for the token file");
  if (path.ends_with('/'))  // not there yet: the open would say "No such file or directory"
    throw DataError("cannot write " + path + ": a name ending in / is a directory's; give a file name for the token file");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw DataError("cannot write " + path + ": it is not a regular file (a device or a pipe), which a token file written "
                    "whole would replace; give a file name");
  // A link's target, itself perhaps a link (a chain of at most 40, as the kernel follows), perhaps not
  // there yet.
  std::filesystem::path file = path;
  for (int links = 0; links < 40 && std::filesystem::is_symlink(std::filesystem::symlink_status(file, ec)); ++links) {
    const auto target = std::filesystem::read_symlink(file, ec);
    if (ec) break;
    file = target.is_absolute() ? target : file.parent_path() / target;
  }
  return file.string();
}

// NAME.tmp-PID beside `file`, NAME cut to fit the 255 bytes a file name may have: a name the output
// itself may have (250 bytes) failed with "File name too long" for its temporary's.
std::string temporary_beside(const std::string& file) {
  const std::filesystem::path path(file);
  const std::string suffix = ".tmp-" + std::to_string(getpid());
  const std::string name = path.filename().string();
  return (path.parent_path() / (name.substr(0, std::min(name.size(), 255 - suffix.size())) + suffix)).string();
}

// A token file written to a temporary beside the file `path` names (written_path) and renamed onto it
// once whole: a failure leaves neither a partial file there nor the temporary.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path)
      : path_(std::move(path)), target_(written_path(path_)), temp_(temporary_beside(target_)) {
    out_.open(temp_, std::ios::binary | std::ios::trunc);
    if (!out_) fail("cannot write " + path_ + ": " + reason());
  }
  ~AtomicFile() {
    if (!committed_) discard();
  }
  std::ofstream& stream() { return out_; }
  /// Throws DataError naming the file and the system's reason when a write has failed.
  void check() {
    if (!out_) fail("cannot write " + path_ + ": " + reason());
  }
  [[noreturn]] void fail(const std::string& message) {
    discard();
    throw DataError(message);
  }
  void commit() {
    out_.close();  // the last buffer is written here: a failure to write it is a failure too
    check();
    std::error_code ec;
    std::filesystem::rename(temp_, target_, ec);
    if (ec) fail("cannot write " + path_ + ": " + ec.message());
    committed_ = true;
  }

 private:
  void discard() {
    if (out_.is_open()) out_.close();
    std::error_code ignored;
    std::filesystem::remove(temp_, ignored);
  }
  std::string path_;    ///< as given, for messages
  std::string target_;  ///< the file replaced: path_, or the target of the link it is
  std::string temp_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace

void write_token_file(const std::string& path, const std::vector<uint32_t>& tokens, int64_t vocab_size) {
  if (vocab_size < 1 || vocab_size > (int64_t{1} << 32))
    throw DataError(path + ": vocabulary size " + std::to_string(vocab_size) + " must be in 1..2^32");
  const uint32_t width = vocab_size <= 65536 ? 2 : 4;
  std::string out = header_bytes(width, vocab_size, tokens.size());
  out.reserve(kTokenFileHeaderBytes + tokens.size() * width);
  for (uint32_t t : tokens) {
    if (t >= vocab_size) throw DataError(path + ": token " + std::to_string(t) + " is outside the vocabulary");
    width == 2 ? put<uint16_t>(out, static_cast<uint16_t>(t)) : put<uint32_t>(out, t);
  }
  AtomicFile file(path);
  file.stream().write(out.data(), static_cast<std::streamsize>(out.size()));
  file.check();
  file.commit();
}

TokenFile read_token_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw DataError("data file " + path + " is a directory, not a token file");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw DataError("data file " + path + " cannot be opened: " + reason());
  // The header first: a file of another kind is refused before its body is read (a 3 GiB file took
  // 25 s and 4 GB of memory to be told it was not a token file, and /dev/zero never ended).
  std::string header(static_cast<size_t>(kTokenFileHeaderBytes), '\0');
  file.read(header.data(), static_cast<std::streamsize>(header.size()));
  const auto header_got = static_cast<size_t>(file.gcount());
  const auto* p = reinterpret_cast<const unsigned char*>(header.data());
  const bool magic = header_got >= 8 && std::memcmp(p, kTokenFileMagic, 8) == 0;
  if (!magic)
    throw DataError("data file " + path + " is not a Tessera token file (no TESSTOK header; make one with "
                    "`tessera-cli data prepare`)");
  if (static_cast<int64_t>(header_got) < kTokenFileHeaderBytes)
    throw DataError("data file " + path + " is " + std::to_string(header_got) + " bytes, shorter than the " +
                    std::to_string(kTokenFileHeaderBytes) + "-byte header: truncated");
  const auto version = get<uint32_t>(p + 8);
  if (version != kTokenFileVersion)
    throw DataError("data file " + path + " has format version " + std::to_string(version) + "; this build reads " +
                    std::to_string(kTokenFileVersion));
  TokenFile out;
  out.bytes_per_token = static_cast<int>(get<uint32_t>(p + 12));
  const auto vocab_size = get<uint64_t>(p + 16);
  const auto count = get<uint64_t>(p + 24);
  if (out.bytes_per_token != 2 && out.bytes_per_token != 4)
    throw DataError("data file " + path + " has " + std::to_string(out.bytes_per_token) +
                    " bytes per token; must be 2 (uint16) or 4 (uint32)");
  // 2^64 - 1 read as int64 was "vocabulary size -1".
  constexpr uint64_t kMostVocab = uint64_t{1} << 32;
  if (vocab_size == 0 || vocab_size > kMostVocab)
    throw DataError("data file " + path + " has a vocabulary of " + std::to_string(vocab_size) + " ids; it must be 1 to " +
                    std::to_string(kMostVocab) + " (tokens are uint32 at most): corrupt");
  out.vocab_size = static_cast<int64_t>(vocab_size);
  // The body's size against the header's count before it is read, from the file's size where it has
  // one (a pipe is read to its end). Compared by division: count x width of a corrupt count wraps
  // around 2^64 (2^62 tokens of 4 bytes "promised" 32 bytes).
  const auto file_bytes = std::filesystem::file_size(path, ec);
  std::string body;
  if (ec) body.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  const uint64_t body_bytes = ec ? body.size() : file_bytes - static_cast<uint64_t>(kTokenFileHeaderBytes);
  if (body_bytes % out.bytes_per_token != 0 || count != body_bytes / out.bytes_per_token)
    throw DataError("data file " + path + " is " + std::to_string(body_bytes + kTokenFileHeaderBytes) +
                    " bytes but its header promises " + std::to_string(count) + " tokens of " +
                    std::to_string(out.bytes_per_token) + " bytes after the " + std::to_string(kTokenFileHeaderBytes) +
                    "-byte header: truncated or corrupt");
  if (!ec) {
    body.resize(body_bytes);
    file.read(body.data(), static_cast<std::streamsize>(body_bytes));
    if (static_cast<uint64_t>(file.gcount()) != body_bytes)
      throw DataError("data file " + path + " cannot be read to its end: " + std::strerror(errno != 0 ? errno : EIO));
  }
  out.tokens.resize(count);
  const auto* tokens = reinterpret_cast<const unsigned char*>(body.data());
  for (uint64_t i = 0; i < count; ++i) {
    out.tokens[i] = out.bytes_per_token == 2 ? get<uint16_t>(tokens + 2 * i) : get<uint32_t>(tokens + 4 * i);
    if (out.tokens[i] >= out.vocab_size)
      throw DataError("data file " + path + ": token " + std::to_string(i) + " = " + std::to_string(out.tokens[i]) +
                      " is not below the vocabulary size " + std::to_string(out.vocab_size) + ": corrupt");
  }
  return out;
}

int64_t write_byte_token_file(const std::string& path, const std::vector<std::string>& inputs, const std::atomic<bool>* cancel) {
  AtomicFile file(path);
  const auto stop_if_cancelled = [&] {
    if (cancel && cancel->load()) file.fail("interrupted: " + path + " was not written");
  };
  std::ofstream& out = file.stream();
  std::string header(kTokenFileHeaderBytes, '\0');  // the count is known at the end
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  std::vector<char> chunk(1 << 20);
  std::string tokens;
  uint64_t count = 0;
  for (const auto& input : inputs) {
    stop_if_cancelled();  // a signal before the open of a pipe nobody writes to would not end that open
    std::ifstream in(input, std::ios::binary);
    if (!in) {
      stop_if_cancelled();  // an open of a pipe nobody writes to, interrupted
      file.fail("cannot read " + input + ": " + reason());
    }
    while (in) {
      stop_if_cancelled();
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      if (in.bad()) {
        stop_if_cancelled();
        file.fail("cannot read " + input + ": " + reason());
      }
      const auto got = static_cast<size_t>(in.gcount());
      tokens.resize(2 * got);
      for (size_t i = 0; i < got; ++i) {  // one uint16 (little-endian) per byte
        tokens[2 * i] = chunk[i];
        tokens[2 * i + 1] = '\0';
      }
      out.write(tokens.data(), static_cast<std::streamsize>(tokens.size()));
      file.check();  // a full disk ends the copy at once, not after the rest of the input is read
      count += got;
    }
  }
  stop_if_cancelled();  // a read ended by the signal looks like the end of the input
  if (count == 0) file.fail("the input text is empty");
  header = header_bytes(2, kByteVocabSize, count);
  out.seekp(0);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.check();
  file.commit();
  return static_cast<int64_t>(count);
}

std::vector<uint32_t> byte_tokenize(std::string_view text) {
  std::vector<uint32_t> out(text.size());
  for (size_t i = 0; i < text.size(); ++i) out[i] = static_cast<unsigned char>(text[i]);
  return out;
}

}  // namespace tessera::data
