// The token file format of docs/data.md: round trips at both widths, the exact header bytes, and a
// clear DataError for every kind of damage (missing, foreign, truncated, out-of-vocabulary).
#include <QtCore/QTemporaryDir>
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
    expect_error(dir.filePath("missing.tokens").toStdString(), "cannot be opened");
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
    QVERIFY_THROWS_EXCEPTION(DataError, write_token_file(dir.filePath("c").toStdString(), {300}, 256));
  }

  void byteTokenizerMapsEachByte() {
    QCOMPARE(byte_tokenize("A\xc3\xa9"), (std::vector<uint32_t>{65, 0xc3, 0xa9}));
  }
};

QTEST_APPLESS_MAIN(TestTokenFile)
#include "test_token_file.moc"
