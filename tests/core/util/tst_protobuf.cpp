// The hand-written protobuf wire format (util/Protobuf.h): bytes as protoc writes them for known
// fields, read back field by field, and truncated or malformed input refused with a qs::Error
// instead of a read past the end.
#include "TestMain.h"
#include "util/Error.h"
#include "util/Protobuf.h"

#include <QtTest>

#include <cstring>
#include <string>

namespace {

std::string hex(const std::string& b) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : b) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

} // namespace

class TestProtobuf : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // protobuf's encoding guide: field 1 varint 150 = 08 96 01; field 2 string "testing" =
    // 12 07 74 65 73 74 69 6e 67; a fixed32 is little endian behind key (n << 3 | 5).
    void writesTheWireFormat() {
        qs::ProtoWriter w;
        w.varint(1, 150);
        w.bytes(2, "testing");
        w.fixed32(3, 0x3f800000u); // 1.0f
        QCOMPARE(QString::fromStdString(hex(w.data())),
                 QStringLiteral("089601120774657374696e671d0000803f"));
        qs::ProtoWriter outer;
        outer.message(4, w);
        QCOMPARE(outer.data().substr(0, 2), std::string("\x22\x11", 2));
        QCOMPARE(qs::ProtoWriter::lengthPrefix(7, 300), std::string("\x3a\xac\x02", 3));
        qs::ProtoWriter negative; // int64 -1: ten bytes of two's complement
        negative.varint(1, uint64_t(int64_t(-1)));
        QCOMPARE(negative.data().size(), size_t(11));
    }

    void readsBackFieldByField() {
        qs::ProtoWriter inner;
        inner.bytes(1, "piece");
        float score = -2.5f;
        uint32_t bits;
        std::memcpy(&bits, &score, 4);
        inner.fixed32(2, bits);
        qs::ProtoWriter w;
        w.varint(9, 12345678901ull);
        w.message(1, inner);
        const std::string data = w.data();

        qs::ProtoReader r(data, "test.proto");
        qs::ProtoReader::Key k = r.key();
        QCOMPARE(k.field, 9u);
        QCOMPARE(k.wire, 0u);
        QCOMPARE(r.varint(), uint64_t(12345678901ull));
        k = r.key();
        QCOMPARE(k.field, 1u);
        QCOMPARE(k.wire, 2u);
        const std::string m = r.bytes("message");
        QVERIFY(r.atEnd());
        qs::ProtoReader p(m, "test.proto");
        p.key();
        QCOMPARE(p.bytes("piece"), std::string("piece"));
        p.key();
        QCOMPARE(p.fixed32("score"), bits);
        QVERIFY(p.atEnd());

        qs::ProtoReader s(data, "test.proto"); // skip both fields
        s.skip(s.key().wire);
        s.skip(s.key().wire);
        QVERIFY(s.atEnd());
    }

    void refusesTruncatedInput() {
        auto reason = [](const std::string& data, auto read) -> std::string {
            try {
                qs::ProtoReader r(data, "test.proto");
                read(r);
            } catch (const qs::Error& e) {
                return e.source() + " | " + e.field() + ": " + e.reason();
            }
            return "accepted";
        };
        QCOMPARE(reason(std::string("\x80", 1), [](qs::ProtoReader& r) { r.varint(); }),
                 std::string("test.proto | : truncated protobuf varint"));
        QCOMPARE(reason(std::string(11, '\xff'), [](qs::ProtoReader& r) { r.varint(); }),
                 std::string("test.proto | : protobuf varint too long"));
        QCOMPARE(reason(std::string("\x0a\x05"
                                    "abc",
                                    5),
                        [](qs::ProtoReader& r) {
                            r.key();
                            r.bytes("name");
                        }),
                 std::string("test.proto | name: truncated"));
        QCOMPARE(reason(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10),
                        [](qs::ProtoReader& r) {
                            r.key();
                            r.bytes("name"); // a length near 2^64 must not wrap
                        }),
                 std::string("test.proto | name: truncated"));
        QCOMPARE(
            reason(std::string("\x15\x01\x02", 3), [](qs::ProtoReader& r) { r.fixed32("score"); }),
            std::string("test.proto | score: truncated"));
        QCOMPARE(reason(std::string("\x0b", 1), [](qs::ProtoReader& r) { r.skip(r.key().wire); }),
                 std::string("test.proto | : unsupported protobuf wire type"));
        QCOMPARE(reason(std::string("\x09\x01\x02", 3),
                        [](qs::ProtoReader& r) { r.skip(r.key().wire); }),
                 std::string("test.proto | : truncated protobuf field"));
    }
};

QS_TEST_GUILESS_MAIN(TestProtobuf)
#include "tst_protobuf.moc"
