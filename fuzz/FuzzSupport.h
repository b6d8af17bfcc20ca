// Helpers shared by the file-reading fuzz targets.
//
// Multi-file inputs: readers that open a folder (a checkpoint with its index, a tokenizer with
// its configs, a model's config with its weights) take one fuzz input holding several files
// separated by the line "\n--8<--\n" (kSeparator, also in every dictionary). A missing part is a
// missing file, so the fuzzer also explores "which files are there". make_corpus.py writes the
// seeds in the same layout.
//
// Files go to one scratch folder per process (under $TMPDIR, else /tmp), emptied before each
// input: the readers under test take paths, and opening real files is part of what is fuzzed.
#pragma once

#include "util/Error.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace qsfuzz {

inline constexpr const char* kSeparator = "\n--8<--\n";

// Splits the input into at most `maxParts` parts; the last part keeps any further separators.
inline std::vector<std::string> splitParts(const uint8_t* data, size_t size, size_t maxParts) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const std::string sep(kSeparator);
    std::vector<std::string> parts;
    size_t begin = 0;
    while (parts.size() + 1 < maxParts) {
        const size_t at = input.find(sep, begin);
        if (at == std::string::npos)
            break;
        parts.push_back(input.substr(begin, at - begin));
        begin = at + sep.size();
    }
    parts.push_back(input.substr(begin));
    parts.resize(maxParts); // absent parts are empty
    return parts;
}

class ScratchDir {
public:
    ScratchDir() : m_dir(QDir::tempPath() + "/qs-fuzz-XXXXXX") {
        if (!m_dir.isValid())
            std::abort(); // not a finding: the machine cannot run this target
    }
    std::string path() const { return m_dir.path().toStdString(); }
    std::string file(const std::string& name) const { return path() + "/" + name; }

    // Removes every file written for the previous input.
    void clear() {
        QDir dir(m_dir.path());
        for (const QString& name : dir.entryList(QDir::Files | QDir::Hidden | QDir::System))
            dir.remove(name);
    }
    void write(const std::string& name, const std::string& bytes) const {
        QFile f(QString::fromStdString(file(name)));
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
            f.write(bytes.data(), qint64(bytes.size())) != qint64(bytes.size()))
            std::abort();
    }

private:
    QTemporaryDir m_dir;
};

// The one scratch folder of this process.
inline ScratchDir& scratch() {
    static ScratchDir dir;
    return dir;
}

// Runs `body`; qs::Error is a clean refusal. Any other exception escapes to libFuzzer, which
// reports it as a crash (an uncaught exception is a finding).
template <typename F> void expectCleanRefusal(F&& body) {
    try {
        body();
    } catch (const qs::Error&) {
    }
}

} // namespace qsfuzz
