// util/AtomicFile: a whole file under a temporary name, renamed into place, so that a failure
// never leaves a half-written output nor damages the file it replaces, and names the path and
// the OS reason. Failures are made for real: a folder that does not exist, a write past the
// process's file-size limit (RLIMIT_FSIZE, which binds root too), a rename onto a folder.
#include "TestMain.h"
#include "TestSupport.h"

#include "util/AtomicFile.h"
#include "util/Error.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QtTest>

#include <csignal>
#include <string>

#include <sys/resource.h>

namespace {

QByteArray contents(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The folder's entries, hidden ones included (a leftover temporary is ".NAME.XXXXXX").
QStringList entries(const QString& dir) {
    return QDir(dir).entryList(QDir::Files | QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot,
                               QDir::Name);
}

std::string errorOf(const std::string& path, const std::string& bytes) {
    try {
        qs::writeFileAtomically(path, bytes);
    } catch (const qs::Error& e) {
        return e.what();
    }
    return {};
}

} // namespace

class TestAtomicFile : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void writesAndReplaces() {
        const QString dir = qs::test::tempDir("atomic");
        const QString path = dir + "/out.json";
        std::string bytes(100000, '\0');
        for (size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = char(i * 7 + 3);
        qs::writeFileAtomically(path.toStdString(), bytes);
        QCOMPARE(contents(path), QByteArray::fromStdString(bytes));
        QCOMPARE(QFile::permissions(path) &
                     (QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup |
                      QFileDevice::WriteGroup | QFileDevice::ReadOther | QFileDevice::WriteOther),
                 QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup |
                     QFileDevice::ReadOther); // 0644
        qs::writeFileAtomically(path.toStdString(), "second");
        QCOMPARE(contents(path), QByteArray("second"));
        qs::writeFileAtomically(path.toStdString(), "");
        QCOMPARE(QFileInfo(path).size(), 0);
        QCOMPARE(entries(dir), QStringList{"out.json"}); // no temporary left
    }

    void missingFolderIsNamed() {
        const QString dir = qs::test::tempDir("atomic-missing");
        const std::string path = (dir + "/no/such/out.json").toStdString();
        const std::string error = errorOf(path, "x");
        QVERIFY2(error.find(path) != std::string::npos, error.c_str());
        QVERIFY2(error.find("No such file or directory") != std::string::npos, error.c_str());
        QVERIFY(entries(dir).isEmpty());
    }

    // A write that fails half-way (the file-size limit stops it at 4 KiB: EFBIG) leaves the
    // file it was to replace as it was, and no temporary.
    void failedWriteKeepsTheOldFile() {
        const QString dir = qs::test::tempDir("atomic-limit");
        const QString path = dir + "/out.bin";
        qs::writeFileAtomically(path.toStdString(), "old contents");
        rlimit saved{};
        QVERIFY(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
        void (*previous)(int) = std::signal(SIGXFSZ, SIG_IGN); // EFBIG instead of the signal
        rlimit small = saved;
        small.rlim_cur = 4096;
        QVERIFY(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        const std::string error = errorOf(path.toStdString(), std::string(1 << 20, 'n'));
        ::setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, previous);
        QVERIFY2(error.find(path.toStdString()) != std::string::npos, error.c_str());
        QVERIFY2(error.find("write failed: File too large") != std::string::npos, error.c_str());
        QCOMPARE(contents(path), QByteArray("old contents"));
        QCOMPARE(entries(dir), QStringList{"out.bin"});
    }

    // The final name is a folder: the rename fails, is named, and the folder stays as it was.
    void renameOntoAFolderIsNamed() {
        const QString dir = qs::test::tempDir("atomic-rename");
        const QString path = dir + "/taken";
        QVERIFY(QDir().mkpath(path + "/inside"));
        const std::string error = errorOf(path.toStdString(), "x");
        QVERIFY2(error.find("cannot rename into place") != std::string::npos, error.c_str());
        QVERIFY(QFileInfo(path + "/inside").isDir());
        QCOMPARE(entries(dir), QStringList{"taken"});
    }
};

QS_TEST_GUILESS_MAIN(TestAtomicFile)
#include "tst_atomicfile.moc"
