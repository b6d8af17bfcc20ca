#include "util/AtomicFile.h"

#include "util/Error.h"

#include <QSaveFile>
#include <QString>

namespace qs {

void writeFileAtomically(const std::string& path, const std::string& bytes) {
    QSaveFile file(QString::fromStdString(path));
    if (!file.open(QIODevice::WriteOnly))
        throw Error(path, "", "cannot open for writing: " + file.errorString().toStdString());
    if (file.write(bytes.data(), qint64(bytes.size())) != qint64(bytes.size()))
        throw Error(path, "", "write failed: " + file.errorString().toStdString());
    if (!file.commit())
        throw Error(path, "", "cannot commit: " + file.errorString().toStdString());
}

} // namespace qs
