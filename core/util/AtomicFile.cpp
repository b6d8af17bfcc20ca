#include "util/AtomicFile.h"

#include "util/Error.h"

#include <QDir>
#include <QFileInfo>
#include <QString>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace qs {

namespace {

std::string osReason() {
    return std::strerror(errno);
}

} // namespace

// POSIX calls rather than QSaveFile: on a full filesystem Qt 6.4's QSaveFile buffered the bytes,
// lost them at flush and still committed an empty file under the final name (measured on a full
// tmpfs). Every write, the fsync and the close are checked here; the rename happens only after.
void writeFileAtomically(const std::string& path, const std::string& bytes) {
    const QFileInfo info(QString::fromStdString(path));
    const std::string dir = QDir::toNativeSeparators(info.absolutePath()).toStdString();
    std::string pattern = dir + "/." + info.fileName().toStdString() + ".XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = ::mkstemp(name.data());
    if (fd < 0)
        throw Error(path, "", "cannot create a temporary file in " + dir + ": " + osReason());
    const std::string temp(name.data());
    auto fail = [&](const std::string& what) {
        const std::string reason = osReason();
        ::close(fd);
        ::unlink(temp.c_str());
        throw Error(path, "", what + ": " + reason);
    };
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail("write failed");
        }
        done += size_t(n);
    }
    if (::fchmod(fd, 0644) != 0)
        fail("cannot set permissions");
    if (::fsync(fd) != 0)
        fail("write failed");
    if (::close(fd) != 0) {
        const std::string reason = osReason();
        ::unlink(temp.c_str());
        throw Error(path, "", "write failed: " + reason);
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        const std::string reason = osReason();
        ::unlink(temp.c_str());
        throw Error(path, "", "cannot rename into place: " + reason);
    }
}

} // namespace qs
