// Layer patterns from hostile or careless recipes: "re:" patterns are matched by a linear-time
// automaton with the std::regex_match semantics of ordinary patterns, refuse what it cannot do by
// name, and cannot hang or overflow the stack (fuzz/regressions/fuzz_layer_pattern).

#include "TestMain.h"
#include "recipe/LayerPattern.h"
#include "util/Error.h"

#include <QElapsedTimer>
#include <QtTest>

#include <regex>
#include <string>

using namespace qs;

namespace {

std::string errorOf(const std::string& pattern) {
    try {
        validateLayerPattern(pattern, "recipe.json", "exclude[0]");
    } catch (const Error& e) {
        if (e.field() != "exclude[0]")
            return "wrong field: " + e.field();
        return e.what();
    }
    return "accepted";
}

} // namespace

class TestLayerPattern : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every row is also checked against std::regex_match, the documented semantics.
    void regexSemantics_data() {
        QTest::addColumn<QString>("expression");
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("expected");
        auto row = [](const char* e, const char* n, bool m) {
            QTest::addRow("%s ~ %s", e, n) << QString(e) << QString(n) << m;
        };
        row(R"(.*layers\.(0|1)\..*)", "model.layers.1.mlp.down_proj", true);
        row(R"(.*layers\.(0|1)\..*)", "model.layers.11.mlp.down_proj", false);
        row(R"(.*layers\.(0|1)\.mlp\..*)", "model.layers.0.mlp.gate_proj", true);
        row(".*k_proj", "model.layers.0.self_attn.k_proj", true);
        row(".*k_proj", "model.layers.0.self_attn.k_proj_x", false); // full match
        row("model", "model.layers.0.self_attn.k_proj", false);
        row("lm_head", "lm_head", true);
        row("^lm_head$", "lm_head", true);
        row("a^b", "ab", false);
        row(R"(model\.layers\.\d{1,2}\.mlp\.(gate|up)_proj)", "model.layers.12.mlp.up_proj", true);
        row(R"(model\.layers\.\d{1,2}\.mlp\.(gate|up)_proj)", "model.layers.123.mlp.up_proj",
            false);
        row("a{2,3}", "aaa", true);
        row("a{2,3}", "aaaa", false);
        row("a{2,}", "aaaaaaa", true);
        row("a{2}", "a", false);
        row("[^a-c]+\\d", "xyz9", true);
        row("[^a-c]+\\d", "xbz9", false);
        row("[\\w.]+", "model.norm_1", true);
        row("[\\W]", ".", true);
        row("\\S+\\s\\D", "ab x", true);
        row("(?:ab)*c", "ababc", true);
        row("(?:ab)*?c", "abac", false);
        row("x*?y+?", "xxyy", true);
        row(".*\\bq_proj", "model.q_proj", true);
        row(".*\\bq_proj", "model_q_proj", false);
        row(".*\\Bq_proj", "model_q_proj", true);
        row("\\x41\\u0042", "AB", true);
        row("[]a", "a", false); // "[]" is an empty class in ECMAScript
        row("[^]", "\n", true); // and "[^]" any character
        row(".", "\n", false);
        row("a|b|", "", true);
        row("(a|b)?c", "c", true);
        row("\\.\\*\\?\\(\\)\\[", ".*?()[", true);
        row("[a\\-z]", "-", true);
        row("[\\d-]", "-", true);
    }
    void regexSemantics() {
        QFETCH(QString, expression);
        QFETCH(QString, name);
        QFETCH(bool, expected);
        const std::string e = expression.toStdString(), n = name.toStdString();
        validateLayerPattern("re:" + e, "r", "f");
        QCOMPARE(matchesLayerPattern("re:" + e, n), expected);
        QCOMPARE(std::regex_match(n, std::regex(e, std::regex::ECMAScript)), expected);
    }

    void catastrophicPatternReturnsPromptly() {
        // Backtracking engines take 2^n steps here (a hang, which ctest's time-out reports);
        // std::regex also recursed per character (a crash). The time is printed, not bounded:
        // wall-clock bounds fail on a loaded machine.
        const std::string name = std::string(200000, 'a') + "b";
        QElapsedTimer timer;
        timer.start();
        QVERIFY(!matchesLayerPattern("re:(a+)+$", name));
        QVERIFY(!matchesLayerPattern("re:(a|aa)*c", name));
        QVERIFY(matchesLayerPattern("re:(a+)+b", name));
        QVERIFY(matchesLayerPattern("re:(.*a){20}.*", name));
        qInfo("four patterns over a %zu-character name: %lld ms", name.size(),
              static_cast<long long>(timer.elapsed()));
    }

    void refusedFeaturesAreNamed_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("reason");
        QTest::newRow("backreference") << R"(re:(a)\1)"
                                       << "backreference";
        QTest::newRow("lookahead") << "re:(?=a)a"
                                   << "lookahead";
        QTest::newRow("negative lookahead") << "re:(?!a)b"
                                            << "lookahead";
        QTest::newRow("lookbehind") << "re:(?<=a)b"
                                    << "lookbehind";
        QTest::newRow("named group") << "re:(?<n>a)"
                                     << "named groups";
        QTest::newRow("posix class") << "re:[[:alpha:]]"
                                     << "POSIX";
        QTest::newRow("stacked quantifiers") << "re:a**"
                                             << "nothing to repeat";
        QTest::newRow("unbalanced") << "re:(a"
                                    << "missing ')'";
        QTest::newRow("unmatched paren") << "re:a)"
                                         << "unmatched ')'";
        QTest::newRow("unclosed class") << "re:[a-"
                                        << "missing ']'";
        QTest::newRow("reversed range") << "re:[z-a]"
                                        << "out of order";
        QTest::newRow("bad braces") << "re:a{2"
                                    << "'}'";
        QTest::newRow("count limit") << "re:a{1001}"
                                     << "over 1000";
        QTest::newRow("state limit") << "re:(a{1000}){1000}"
                                     << "10000 states";
        QTest::newRow("nesting limit")
            << "re:" + QString(100, '(') + "a" + QString(100, ')') << "nested deeper than 64";
        QTest::newRow("pattern length") << "*" + QString(5000, 'a') << "4096";
        QTest::newRow("empty regex") << "re:"
                                     << "empty regular expression";
        QTest::newRow("empty") << ""
                               << "empty layer pattern";
    }
    void refusedFeaturesAreNamed() {
        QFETCH(QString, pattern);
        QFETCH(QString, reason);
        const std::string msg = errorOf(pattern.toStdString());
        QVERIFY2(msg.find("recipe.json") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find(reason.toStdString()) != std::string::npos, msg.c_str());
        // A pattern validation refuses matches nothing (an empty "re:" matched the empty name).
        QVERIFY(!matchesLayerPattern(pattern.toStdString(), ""));
        QVERIFY(!matchesLayerPattern(pattern.toStdString(), "a"));
    }

    void deepNestingWithinLimitsIsFine() {
        const std::string pattern = "re:" + std::string(60, '(') + "a" + std::string(60, ')');
        validateLayerPattern(pattern, "r", "f");
        QVERIFY(matchesLayerPattern(pattern, "a"));
    }

    void exactPatternNamesOneLayer_data() {
        QTest::addColumn<QString>("name");
        QTest::newRow("plain") << "model.layers.0.mlp.down_proj";
        QTest::newRow("wildcards") << "odd[*]?.name";
        // Found by fuzz_layer_pattern: the pattern of this name was read as a regex.
        QTest::newRow("re prefix") << "re:(]+)+$";
        QTest::newRow("re only") << "re:";
    }
    void exactPatternNamesOneLayer() {
        QFETCH(QString, name);
        const std::string n = name.toStdString();
        const std::string pattern = exactLayerPattern(n);
        QVERIFY(!isRegexPattern(pattern));
        validateLayerPattern(pattern, "r", "f");
        QVERIFY(matchesLayerPattern(pattern, n));
        QVERIFY(!matchesLayerPattern(pattern, n + "x"));
        QVERIFY(!matchesLayerPattern(pattern, "x" + n));
    }
};

QS_TEST_GUILESS_MAIN(TestLayerPattern)
#include "tst_layerpattern.moc"
