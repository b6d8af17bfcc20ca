#pragma once

// Helpers shared by the tokenizer tests (header-only: tests/CMakeLists.txt builds one executable
// per tst_*.cpp).

#include <QFile>
#include <QtTest>

#include <cstdint>
#include <string>
#include <vector>

namespace qs::test {

// The file's bytes as they are (no newline translation: tinystories-eval.txt has CRLF).
inline std::string readBytes(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return f.readAll().toStdString();
}

// FNV-1a 64 over the ids as little-endian int32, the checksum the offline references were
// computed with.
inline uint64_t fnv1a(const std::vector<int32_t>& ids) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int32_t id : ids) {
        const auto u = static_cast<uint32_t>(id);
        for (int k = 0; k < 4; ++k) {
            h ^= (u >> (8 * k)) & 0xFF;
            h *= 0x100000001b3ULL;
        }
    }
    return h;
}

} // namespace qs::test

namespace QTest {

// Readable QCOMPARE failures for id vectors and strings.
template <> inline char* toString(const std::vector<int32_t>& ids) {
    QByteArray s = "[";
    for (size_t i = 0; i < ids.size() && i < 64; ++i)
        s += (i ? " " : "") + QByteArray::number(ids[i]);
    if (ids.size() > 64)
        s += " ... (" + QByteArray::number(qulonglong(ids.size())) + " ids)";
    return qstrdup(s + "]");
}

template <> inline char* toString(const std::string& text) {
    return toString(QString::fromStdString(text.size() > 200 ? text.substr(0, 200) + "..." : text));
}

} // namespace QTest
