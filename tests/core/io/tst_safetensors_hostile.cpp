// Hostile and malformed safetensors files: every one must be refused with a qs::Error whose
// message names the offending field or tensor and the reason, never a crash. Rows are built by
// hand from the format spec (u64 little-endian header length, UTF-8 JSON, data).
#include "TestMain.h"
#include "io/SafetensorsFile.h"
#include "util/Error.h"

#include "TestSupport.h"

#include <QFile>
#include <QRandomGenerator>
#include <QtTest>

using namespace qs;

namespace {

QByteArray le64(uint64_t v) {
    QByteArray out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[i] = char(uint8_t(v >> (8 * i)));
    return out;
}

// A file image: length prefix + header JSON + `dataBytes` bytes of data.
QByteArray image(const QByteArray& json, int dataBytes = 0) {
    return le64(uint64_t(json.size())) + json + QByteArray(dataBytes, '\x5a');
}

// One F32 tensor entry; `extra` is spliced into the entry's object.
QByteArray entry(const char* name, const char* dtype, const char* shape, const char* offsets) {
    return QByteArray("\"") + name + "\":{\"dtype\":" + dtype + ",\"shape\":" + shape +
           ",\"data_offsets\":" + offsets + "}";
}

QByteArray obj(const QByteArray& body) {
    return "{" + body + "}";
}

struct Outcome {
    bool refused = false;
    QString message;
    std::string field;
};

Outcome parse(const QByteArray& bytes) {
    Outcome out;
    try {
        parseSafetensorsHeader(reinterpret_cast<const uint8_t*>(bytes.constData()),
                               uint64_t(bytes.size()), "hostile.safetensors");
    } catch (const qs::Error& e) {
        out.refused = true;
        out.message = QString::fromUtf8(e.what());
        out.field = e.field();
    }
    return out;
}

} // namespace

class TestSafetensorsHostile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void refuses_data();
    void refuses();
    void accepts_data();
    void accepts();
    void mutatedFilesNeverCrash();
};

void TestSafetensorsHostile::refuses_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("field"); // must appear in the message ("" for file-level errors)
    QTest::addColumn<QString>("reason");

    const QByteArray okW = entry("w", "\"F32\"", "[2]", "[0,8]");

    // File and header length.
    QTest::newRow("empty file") << QByteArray() << ""
                                << "shorter than the 8-byte";
    QTest::newRow("7 bytes") << QByteArray(7, '\0') << ""
                             << "shorter than the 8-byte";
    QTest::newRow("length beyond file") << le64(1000) + "{}"
                                        << "header length"
                                        << "exceeds the file";
    QTest::newRow("length absurd") << le64(200'000'000) + "{}"
                                   << "header length"
                                   << "absurd";
    QTest::newRow("length 2^64-1") << le64(~uint64_t(0)) + "{}"
                                   << "header length"
                                   << "absurd";
    QTest::newRow("length zero") << le64(0) << "header"
                                 << "starting with '{'";

    // Header JSON.
    QTest::newRow("not json") << image("hello   ") << "header"
                              << "starting with '{'";
    QTest::newRow("truncated json") << image("{\"w\":{") << "header"
                                    << "invalid JSON";
    QTest::newRow("trailing garbage") << image("{} x") << "header"
                                      << "invalid JSON";
    QTest::newRow("top-level array") << image("[{}]") << "header"
                                     << "starting with '{'";
    QTest::newRow("leading space") << image(" {}") << "header"
                                   << "starting with '{'";
    QTest::newRow("utf-8 BOM") << image("\xef\xbb\xbf{}") << "header"
                               << "starting with '{'";
    QTest::newRow("invalid utf-8 in key")
        << image(obj(entry("w\xff", "\"F32\"", "[2]", "[0,8]")), 8) << "header"
        << "UTF-8";
    QTest::newRow("invalid utf-8 in dtype")
        << image(obj(entry("w", "\"F3\xc0\"", "[2]", "[0,8]")), 8) << "header"
        << "UTF-8";
    QTest::newRow("lone surrogate escape")
        << image(obj(entry("w\\ud800", "\"F32\"", "[2]", "[0,8]")), 8) << "header"
        << "invalid JSON";
    QTest::newRow("nul after object") << image(QByteArray("{}\0 junk", 8)) << "header"
                                      << "NUL byte at header offset 2";
    QTest::newRow("comment") << image("{/*x*/}") << "header"
                             << "invalid JSON";
    QTest::newRow("deep nesting") << image(obj(entry("w", "\"F32\"", "[[[[2]]]]", "[0,8]")), 8)
                                  << "w.shape"
                                  << "nests deeper";
    QTest::newRow("duplicate tensor") << image(obj(okW + "," + okW), 8) << "w"
                                      << "duplicate key";
    QTest::newRow("duplicate field")
        << image("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":"
                 "[0,8]}}",
                 8)
        << "w.dtype"
        << "duplicate key";
    QTest::newRow("empty tensor name")
        << image(obj(entry("", "\"F32\"", "[2]", "[0,8]")), 8) << "header"
        << "empty tensor name";

    // Entries.
    QTest::newRow("entry is number") << image("{\"w\":5}") << "w"
                                     << "must be a JSON object";
    QTest::newRow("entry is array") << image("{\"w\":[]}") << "w"
                                    << "must be a JSON object";
    QTest::newRow("entry is null") << image("{\"w\":null}") << "w"
                                   << "must be a JSON object";
    QTest::newRow("unknown key")
        << image("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"offset\":0}}", 8)
        << "w.offset"
        << "unknown key";
    QTest::newRow("missing dtype")
        << image("{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8) << "w.dtype"
        << "missing";
    QTest::newRow("dtype number") << image(obj(entry("w", "4", "[2]", "[0,8]")), 8) << "w.dtype"
                                  << "must be a string";
    QTest::newRow("dtype unknown")
        << image(obj(entry("w", "\"F128\"", "[2]", "[0,8]")), 8) << "w.dtype"
        << "unknown dtype 'F128'";
    QTest::newRow("dtype lowercase")
        << image(obj(entry("w", "\"f32\"", "[2]", "[0,8]")), 8) << "w.dtype"
        << "unknown dtype 'f32'";
    QTest::newRow("dtype empty") << image(obj(entry("w", "\"\"", "[2]", "[0,8]")), 8) << "w.dtype"
                                 << "unknown dtype";
    QTest::newRow("missing shape")
        << image("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8) << "w.shape"
        << "missing";
    QTest::newRow("shape number") << image(obj(entry("w", "\"F32\"", "2", "[0,8]")), 8) << "w.shape"
                                  << "must be an array";
    QTest::newRow("shape object") << image(obj(entry("w", "\"F32\"", "{}", "[0,8]")), 8)
                                  << "w.shape"
                                  << "must be an array";
    QTest::newRow("negative dim") << image(obj(entry("w", "\"F32\"", "[2,-1]", "[0,8]")), 8)
                                  << "w.shape[1]"
                                  << "negative dimension -1";
    QTest::newRow("fractional dim")
        << image(obj(entry("w", "\"F32\"", "[2.5]", "[0,8]")), 8) << "w.shape[0]"
        << "non-negative integer";
    QTest::newRow("float-typed dim")
        << image(obj(entry("w", "\"F32\"", "[2.0]", "[0,8]")), 8) << "w.shape[0]"
        << "non-negative integer";
    QTest::newRow("exponent dim") << image(obj(entry("w", "\"F32\"", "[2e0]", "[0,8]")), 8)
                                  << "w.shape[0]"
                                  << "non-negative integer";
    QTest::newRow("string dim") << image(obj(entry("w", "\"F32\"", "[\"2\"]", "[0,8]")), 8)
                                << "w.shape[0]"
                                << "non-negative integer";
    QTest::newRow("null dim") << image(obj(entry("w", "\"F32\"", "[null]", "[0,8]")), 8)
                              << "w.shape[0]"
                              << "non-negative integer";
    QTest::newRow("dim beyond u64")
        << image(obj(entry("w", "\"F32\"", "[18446744073709551616]", "[0,8]")), 8) << "w.shape[0]"
        << "non-negative integer";
    // nlohmann throws out_of_range (not parse_error) for this: must still come out as qs::Error.
    QTest::newRow("dim overflows double")
        << image(obj(entry("w", "\"F32\"", "[1e400]", "[0,8]")), 8) << "header"
        << "number overflow";
    QTest::newRow("dim 2^63") << image(obj(entry("w", "\"F32\"", "[9223372036854775808]", "[0,8]")),
                                       8)
                              << "w.shape[0]"
                              << "exceeds 63 bits";
    QTest::newRow("rank 9") << image(obj(entry("w", "\"F32\"", "[1,1,1,1,1,1,1,1,2]", "[0,8]")), 8)
                            << "w.shape"
                            << "rank 9 exceeds the maximum of 8";
    QTest::newRow("numel overflow")
        << image(obj(entry("w", "\"U8\"", "[4294967296,4294967296]", "[0,8]")), 8) << "w.shape"
        << "element count overflows";
    QTest::newRow("numel overflow with zero later")
        << image(obj(entry("w", "\"U8\"", "[4294967296,4294967296,0]", "[0,0]"))) << "w.shape"
        << "element count overflows";
    QTest::newRow("byte size overflow")
        << image(obj(entry("w", "\"F64\"", "[4611686018427387904]", "[0,8]")), 8) << "w.shape"
        << "byte size overflows";
    QTest::newRow("F4 odd numel") << image(obj(entry("w", "\"F4\"", "[3]", "[0,2]")), 2)
                                  << "w.shape"
                                  << "odd element count 3";

    // Offsets.
    QTest::newRow("missing offsets")
        << image("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8) << "w.data_offsets"
        << "missing";
    QTest::newRow("offsets number")
        << image(obj(entry("w", "\"F32\"", "[2]", "8")), 8) << "w.data_offsets"
        << "array of two integers";
    QTest::newRow("offsets one element")
        << image(obj(entry("w", "\"F32\"", "[2]", "[8]")), 8) << "w.data_offsets"
        << "array of two integers";
    QTest::newRow("offsets three elements")
        << image(obj(entry("w", "\"F32\"", "[2]", "[0,8,16]")), 8) << "w.data_offsets"
        << "array of two integers";
    QTest::newRow("offset negative")
        << image(obj(entry("w", "\"F32\"", "[2]", "[-8,0]")), 8) << "w.data_offsets"
        << "begin offset must be a non-negative";
    QTest::newRow("offset float") << image(obj(entry("w", "\"F32\"", "[2]", "[0,8.0]")), 8)
                                  << "w.data_offsets"
                                  << "end offset must be a non-negative";
    QTest::newRow("end before begin")
        << image(obj(entry("w", "\"F32\"", "[0]", "[8,4]")), 8) << "w.data_offsets"
        << "end 4 is before begin 8";
    QTest::newRow("size mismatch")
        << image(obj(entry("w", "\"F32\"", "[2]", "[0,4]")), 4) << "w.data_offsets"
        << "spans 4 bytes";
    QTest::newRow("F4 size uses half bytes")
        << image(obj(entry("w", "\"F4\"", "[4]", "[0,4]")), 4) << "w.data_offsets"
        << "needs 2";
    QTest::newRow("first not at 0")
        << image(obj(entry("w", "\"F32\"", "[2]", "[4,12]")), 12) << "w.data_offsets"
        << "must begin at offset 0";
    QTest::newRow("gap") << image(obj(okW + "," + entry("v", "\"F32\"", "[1]", "[12,16]")), 16)
                         << "v.data_offsets"
                         << "gap of 4 bytes after tensor 'w'";
    QTest::newRow("overlap") << image(obj(okW + "," + entry("v", "\"F32\"", "[1]", "[4,8]")), 8)
                             << "v.data_offsets"
                             << "overlaps tensor 'w'";
    QTest::newRow("same range twice")
        << image(obj(okW + "," + entry("v", "\"F32\"", "[2]", "[0,8]")), 8) << "w.data_offsets"
        << "overlaps tensor 'v'";
    QTest::newRow("data longer than tensors") << image(obj(okW), 12) << "w.data_offsets"
                                              << "holds 12 bytes";
    QTest::newRow("data shorter than tensors") << image(obj(okW), 4) << "w.data_offsets"
                                               << "file truncated: last tensor ends at 8 but "
                                                  "the data section holds 4 bytes";
    QTest::newRow("no tensors but data") << image("{}", 8) << "header"
                                         << "no tensors";
    QTest::newRow("offset beyond u64")
        << image(obj(entry("w", "\"F32\"", "[2]", "[0,18446744073709551624]")), 8)
        << "w.data_offsets"
        << "end offset must be a non-negative";

    // Metadata.
    QTest::newRow("metadata string") << image("{\"__metadata__\":\"x\"}") << "__metadata__"
                                     << "must be an object of string to string";
    QTest::newRow("metadata array") << image("{\"__metadata__\":[]}") << "__metadata__"
                                    << "must be an object of string to string";
    QTest::newRow("metadata int value") << image("{\"__metadata__\":{\"k\":1}}") << "__metadata__.k"
                                        << "must be strings";
    QTest::newRow("metadata null value")
        << image("{\"__metadata__\":{\"k\":null}}") << "__metadata__.k"
        << "must be strings";
    QTest::newRow("metadata nested") << image("{\"__metadata__\":{\"k\":{}}}") << "__metadata__.k"
                                     << "must be strings";
}

void TestSafetensorsHostile::refuses() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, field);
    QFETCH(QString, reason);

    const Outcome outcome = parse(bytes);
    QVERIFY2(outcome.refused, "accepted a malformed file");
    QVERIFY2(outcome.message.contains("hostile.safetensors"), qPrintable(outcome.message));
    QVERIFY2(outcome.message.contains(reason), qPrintable(outcome.message));
    if (!field.isEmpty()) {
        QVERIFY2(outcome.message.contains("'" + field), qPrintable(outcome.message));
        QVERIFY2(QString::fromStdString(outcome.field).endsWith(field),
                 qPrintable(QString::fromStdString(outcome.field)));
    }

    // The same bytes through the file reader: same refusal, naming the real path.
    const QString path = qs::test::tempDir("st-hostile") + "/f.safetensors";
    QFile out(path);
    QVERIFY(out.open(QIODevice::WriteOnly));
    QCOMPARE(out.write(bytes), qint64(bytes.size()));
    out.close();
    try {
        SafetensorsFile::open(path.toStdString());
        QFAIL("SafetensorsFile::open accepted a malformed file");
    } catch (const qs::Error& e) {
        const QString msg = QString::fromUtf8(e.what());
        QVERIFY2(msg.contains(path) && msg.contains(reason), qPrintable(msg));
    }
}

void TestSafetensorsHostile::accepts_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QStringList>("namesByOffset");

    QTest::newRow("no tensors") << image("{}") << QStringList{};
    QTest::newRow("only metadata") << image("{\"__metadata__\":{\"a\":\"b\"}}") << QStringList{};
    QTest::newRow("empty metadata") << image("{\"__metadata__\":{}}") << QStringList{};
    QTest::newRow("keys out of offset order")
        << image(obj(entry("b", "\"F32\"", "[1]", "[8,12]") + "," +
                     entry("a", "\"F32\"", "[2]", "[0,8]")),
                 12)
        << QStringList{"a", "b"};
    QTest::newRow("zero-size tensors share an offset")
        << image(obj(entry("z2", "\"F32\"", "[0,7]", "[4,4]") + "," +
                     entry("w", "\"U8\"", "[4]", "[0,4]") + "," +
                     entry("z1", "\"I64\"", "[3,0]", "[4,4]")),
                 4)
        << QStringList{"w", "z1", "z2"};
    QTest::newRow("scalar") << image(obj(entry("s", "\"F64\"", "[]", "[0,8]")), 8)
                            << QStringList{"s"};
    QTest::newRow("rank 8") << image(obj(entry("r", "\"U8\"", "[1,1,1,1,1,1,1,2]", "[0,2]")), 2)
                            << QStringList{"r"};
    QTest::newRow("F4 even") << image(obj(entry("p", "\"F4\"", "[2,3]", "[0,3]")), 3)
                             << QStringList{"p"};
    QTest::newRow("trailing padding")
        << image(obj(entry("w", "\"F32\"", "[2]", "[0,8]")) + "   \n", 8) << QStringList{"w"};
    QTest::newRow("escaped unicode name")
        << image(obj(entry("caf\\u00e9", "\"BF16\"", "[1]", "[0,2]")), 2) << QStringList{"café"};
}

void TestSafetensorsHostile::accepts() {
    QFETCH(QByteArray, bytes);
    QFETCH(QStringList, namesByOffset);
    SafetensorsHeader header;
    try {
        header = parseSafetensorsHeader(reinterpret_cast<const uint8_t*>(bytes.constData()),
                                        uint64_t(bytes.size()), "good.safetensors");
    } catch (const qs::Error& e) {
        QFAIL(e.what());
    }
    QStringList names;
    for (const TensorInfo& t : header.tensors)
        names << QString::fromStdString(t.name);
    QCOMPARE(names, namesByOffset);
    uint64_t headerBytes = 0;
    for (int i = 7; i >= 0; --i)
        headerBytes = headerBytes << 8 | uint8_t(bytes[i]);
    QCOMPARE(header.dataOffset, 8 + headerBytes);
}

void TestSafetensorsHostile::mutatedFilesNeverCrash() {
    // Random byte edits and truncations of a valid file: each must parse or throw qs::Error
    // (under the asan preset this also proves no out-of-bounds read).
    std::vector<TensorBlob> blobs = {{"a", DType::F32, {2, 3}, std::string(24, '\1')},
                                     {"b.weight", DType::F4, {4}, std::string(2, '\2')},
                                     {"c", DType::I64, {}, std::string(8, '\3')}};
    const QString path = qs::test::tempDir("st-mutate") + "/seed.safetensors";
    writeSafetensors(path.toStdString(), blobs, {{"format", "pt"}});
    QFile seedFile(path);
    QVERIFY(seedFile.open(QIODevice::ReadOnly));
    const QByteArray seed = seedFile.readAll();
    QVERIFY(!parse(seed).refused);

    QRandomGenerator rng(20240611);
    int refused = 0;
    const int rounds = 20000;
    for (int round = 0; round < rounds; ++round) {
        QByteArray bytes = seed;
        const int edits = 1 + int(rng.bounded(4));
        for (int e = 0; e < edits; ++e) {
            const int pos = int(rng.bounded(bytes.size()));
            switch (rng.bounded(4)) {
            case 0:
                bytes[pos] = char(rng.bounded(256));
                break;
            case 1:
                bytes.truncate(pos);
                break;
            case 2:
                bytes.insert(pos, char(rng.bounded(256)));
                break;
            default: // digits are where the interesting arithmetic lives
                bytes[pos] = char('0' + rng.bounded(10));
                break;
            }
            if (bytes.isEmpty())
                break;
        }
        try {
            parseSafetensorsHeader(reinterpret_cast<const uint8_t*>(bytes.constData()),
                                   uint64_t(bytes.size()), "mutant");
        } catch (const qs::Error&) {
            ++refused;
        }
    }
    QVERIFY(refused > rounds / 2); // most edits break something
}

QS_TEST_GUILESS_MAIN(TestSafetensorsHostile)
#include "tst_safetensors_hostile.moc"
