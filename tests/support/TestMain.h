// Every suite's main(): Qt Test's QTEST_MAIN, QTEST_GUILESS_MAIN and QTEST_APPLESS_MAIN with one
// difference. Qt Test exits 0 when a test function calls QSKIP, so a suite that skipped whole (a
// device suite on a machine without a GPU, a plugin suite in a build without the plugin) would
// show as "Passed" in ctest. qs::test::runSuite exits with kSuiteSkipped instead when no test
// function ran (every one skipped, or initTestCase did), and tests/CMakeLists.txt gives ctest
// that code as SKIP_RETURN_CODE: such a suite shows as "Skipped". A suite where some functions
// ran and others skipped passes, with its SKIP lines in the output. tests/CMakeLists.txt refuses
// a suite that uses Qt's macros directly.
#pragma once

#include <QtTest>

namespace qs::test {

// The exit code of a suite that ran no test function (automake's "skipped" code).
constexpr int kSuiteSkipped = 77;

// QTest::qExec(suite, argc, argv), and kSuiteSkipped where it passed but no test function ran.
// It adds a TAP log in a temporary file to Qt Test's loggers and reads which functions skipped;
// with logging options of the caller's own that it cannot combine with (-txt, -xml, ..., or -o
// without a format), it returns qExec's result as is.
int runSuite(QObject* suite, int argc, char** argv);

} // namespace qs::test

#define QS_TEST_MAIN_WRAPPER(TestObject, ...)                                                      \
    int main(int argc, char* argv[]) {                                                             \
        QT_PREPEND_NAMESPACE(QTest::Internal::callInitMain)<TestObject>();                         \
        __VA_ARGS__                                                                                \
        TestObject tc;                                                                             \
        QTEST_SET_MAIN_SOURCE_PATH                                                                 \
        return qs::test::runSuite(&tc, argc, argv);                                                \
    }

#define QS_TEST_MAIN(TestObject) QS_TEST_MAIN_WRAPPER(TestObject, QTEST_MAIN_SETUP())
#define QS_TEST_GUILESS_MAIN(TestObject)                                                           \
    QS_TEST_MAIN_WRAPPER(TestObject, QTEST_QAPP_SETUP(QCoreApplication))
#define QS_TEST_APPLESS_MAIN(TestObject) QS_TEST_MAIN_WRAPPER(TestObject)
