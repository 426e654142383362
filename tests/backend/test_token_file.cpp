// The token file format of docs/data.md: round trips at both widths, the exact header bytes, and a
// clear DataError for every kind of damage (missing, foreign, truncated, out-of-vocabulary).
#include <QtCore/QDir>
#include <QtCore/QTemporaryDir>
#include <sys/stat.h>

#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

#include "data/token_file.hpp"

using namespace tessera::data;

namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_error(const std::string& path, const std::string& fragment) {
  try {
    read_token_file(path);
    QFAIL("no DataError");
  } catch (const DataError& e) {
    const std::string message = e.what();
    QVERIFY2(message.find(path) != std::string::npos && message.find(fragment) != std::string::npos, e.what());
  }
}

}  // namespace

class TestTokenFile : public QObject {
  Q_OBJECT
 private slots:
  void roundTripsUint16WithTheDocumentedHeader() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("a.tokens").toStdString();
    write_token_file(path, {1, 255, 0, 7}, 256);
    const std::string b = bytes_of(path);
    QCOMPARE(b.size(), size_t(32 + 4 * 2));
    QCOMPARE(b.substr(0, 8), std::string("TESSTOK\0", 8));
    QCOMPARE(int(b[8]), 1);    // version 1, little-endian
    QCOMPARE(int(b[12]), 2);   // 2 bytes per token
    QCOMPARE(int(uint8_t(b[16])), 0);  // vocabulary 256 = 0x100
    QCOMPARE(int(b[17]), 1);
    QCOMPARE(int(b[24]), 4);   // count
    QCOMPARE(int(uint8_t(b[34])), 255);
    const auto f = read_token_file(path);
    QCOMPARE(f.vocab_size, int64_t(256));
    QCOMPARE(f.bytes_per_token, 2);
    QCOMPARE(f.tokens, (std::vector<uint32_t>{1, 255, 0, 7}));
  }

  void largeVocabulariesUseUint32() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("b.tokens").toStdString();
    write_token_file(path, {100000, 3}, 128256);
    const auto f = read_token_file(path);
    QCOMPARE(f.bytes_per_token, 4);
    QCOMPARE(f.tokens, (std::vector<uint32_t>{100000, 3}));
  }

  void damagedFilesAreNamedWithTheProblem() {
    QTemporaryDir dir;
    expect_error(dir.filePath("missing.tokens").toStdString(), "cannot be opened: No such file or directory");
    expect_error(dir.path().toStdString(), "is a directory, not a token file");
    const std::string short_header = dir.filePath("short.tokens").toStdString();
    std::ofstream(short_header, std::ios::binary).write("TESSTOK\0\1\0", 10);
    expect_error(short_header, "is 10 bytes, shorter than the 32-byte header: truncated");
    const std::string foreign = dir.filePath("foreign.bin").toStdString();
    std::ofstream(foreign) << "just some text that is long enough to hold a header";
    expect_error(foreign, "not a Tessera token file");
    const std::string truncated = dir.filePath("truncated.tokens").toStdString();
    write_token_file(truncated, std::vector<uint32_t>(100, 5), 256);
    std::filesystem::resize_file(truncated, 32 + 150);
    expect_error(truncated, "truncated or corrupt");
    // A count whose size wraps around 2^64: 2^62 tokens of 4 bytes, a header and no body.
    const std::string wrapped = dir.filePath("wrapped.tokens").toStdString();
    write_token_file(wrapped, {}, 100000);  // 4 bytes a token
    {
      std::fstream patch(wrapped, std::ios::in | std::ios::out | std::ios::binary);
      patch.seekp(24);
      const uint64_t count = uint64_t{1} << 62;
      patch.write(reinterpret_cast<const char*>(&count), sizeof count);
    }
    expect_error(wrapped, "promises 4611686018427387904 tokens of 4 bytes after the 32-byte header: truncated or corrupt");
    const std::string outside = dir.filePath("outside.tokens").toStdString();
    write_token_file(outside, {1, 2}, 256);
    std::fstream patch(outside, std::ios::in | std::ios::out | std::ios::binary);
    patch.seekp(33);
    patch.put(char(1));  // token 1 becomes 0x0101 = 257 >= 256
    patch.close();
    expect_error(outside, "not below the vocabulary size 256");
    // A vocabulary of 2^64 - 1 was read as -1 ("token 0 = 0 is not below the vocabulary size -1").
    const std::string huge_vocab = dir.filePath("huge-vocab.tokens").toStdString();
    write_token_file(huge_vocab, {1, 2}, 256);
    {
      std::fstream vocab(huge_vocab, std::ios::in | std::ios::out | std::ios::binary);
      vocab.seekp(16);
      const uint64_t all_ones = ~uint64_t{0};
      vocab.write(reinterpret_cast<const char*>(&all_ones), sizeof all_ones);
    }
    expect_error(huge_vocab, "has a vocabulary of 18446744073709551615 ids; it must be 1 to 4294967296 (tokens are uint32 at most): corrupt");
    QVERIFY_THROWS_EXCEPTION(DataError, write_token_file(dir.filePath("c").toStdString(), {300}, 256));
  }

  void byteTokenizerMapsEachByte() {
    QCOMPARE(byte_tokenize("A\xc3\xa9"), (std::vector<uint32_t>{65, 0xc3, 0xa9}));
  }

  // data prepare streams its inputs: the file it writes is byte for byte the one made in memory
  // (inputs longer than its megabyte chunk, an empty one between them, every byte value).
  void streamedByteTokenFileMatchesTheInMemoryOne() {
    QTemporaryDir dir;
    std::string first(3 * 1024 * 1024 + 17, '\0'), second;
    for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<char>((i * 131) % 256);
    for (int i = 0; i < 256; ++i) second.push_back(static_cast<char>(255 - i));
    const std::string a = dir.filePath("a.txt").toStdString(), empty = dir.filePath("empty.txt").toStdString(),
                      b = dir.filePath("b.txt").toStdString();
    std::ofstream(a, std::ios::binary) << first;
    std::ofstream(empty, std::ios::binary).close();
    std::ofstream(b, std::ios::binary) << second;
    const std::string streamed = dir.filePath("streamed.tokens").toStdString(), in_memory = dir.filePath("memory.tokens").toStdString();
    QCOMPARE(write_byte_token_file(streamed, {a, empty, b}), static_cast<int64_t>(first.size() + second.size()));
    write_token_file(in_memory, byte_tokenize(first + second), kByteVocabSize);
    QVERIFY(bytes_of(streamed) == bytes_of(in_memory));
    QCOMPARE(read_token_file(streamed).tokens.size(), first.size() + second.size());
    // An unreadable input says why; empty inputs are refused; neither leaves a file behind.
    try {
      write_byte_token_file(dir.filePath("out.tokens").toStdString(), {a, dir.filePath("gone.txt").toStdString()});
      QFAIL("a missing input was read");
    } catch (const DataError& e) {
      QVERIFY2(std::string(e.what()).find("gone.txt: No such file or directory") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(DataError, write_byte_token_file(dir.filePath("out.tokens").toStdString(), {empty}));
    QCOMPARE(QDir(dir.path()).entryList({"out.tokens*"}, QDir::Files).size(), 0);
  }

  // A token file is written whole and renamed over its path: over a device that made the device a
  // regular file (`data prepare -o /dev/null`). A device or a directory is refused; through a
  // symbolic link the link's target is written and the link stays.
  void theOutputIsARegularFileOrALinkToOne() {
    QTemporaryDir dir;
    const std::string text = dir.filePath("t.txt").toStdString();
    std::ofstream(text, std::ios::binary) << "hello";
    // A pipe stands for the device here, so that a regression harms none.
    const std::string pipe = dir.filePath("pipe.tokens").toStdString();
    QCOMPARE(::mkfifo(pipe.c_str(), 0600), 0);
    try {
      write_byte_token_file(pipe, {text});
      QFAIL("a pipe was written over");
    } catch (const DataError& e) {
      QVERIFY2(std::string(e.what()).find("cannot write " + pipe + ": it is not a regular file (a device or a pipe)") != std::string::npos,
               e.what());
    }
    QVERIFY(std::filesystem::is_fifo(pipe));
    QVERIFY_THROWS_EXCEPTION(DataError, write_token_file(dir.path().toStdString(), {1, 2}, 256));
    const std::string target = dir.filePath("target.tokens").toStdString(), link = dir.filePath("link.tokens").toStdString();
    std::filesystem::create_symlink(target, link);
    QCOMPARE(write_byte_token_file(link, {text}), int64_t{5});
    QVERIFY(std::filesystem::is_symlink(link));
    QCOMPARE(read_token_file(target).tokens, byte_tokenize("hello"));
  }
};

QTEST_APPLESS_MAIN(TestTokenFile)
#include "test_token_file.moc"
