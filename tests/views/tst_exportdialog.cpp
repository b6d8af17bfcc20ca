// ExportDialog: only the fake-quantized HF format is available (the others disabled with a
// reason), the recipe path follows the output folder, the headless command is quoted for a POSIX
// shell (checked by running it through /bin/sh), and Copy saves a recipe that loads back.
#include "ExportDialog.h"
#include "TestSupport.h"
#include "quant/SchemeRegistry.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QtTest>

namespace {

// What /bin/sh makes of a command line: its words, one per line.
QStringList shellWords(const QString& commandLine) {
    QProcess sh;
    sh.start(QStringLiteral("/bin/sh"),
             {QStringLiteral("-c"), QStringLiteral("printf '%s\\n' ") + commandLine});
    sh.waitForFinished(10000);
    return QString::fromUtf8(sh.readAllStandardOutput())
        .split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

} // namespace

class TestExportDialog : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void onlyTheAvailableFormatIsEnabled() {
        qs::ExportDialog dialog(QStringLiteral("/models/m"), qs::Recipe{});
        QListWidget* formats = dialog.formatList();
        QCOMPARE(formats->count(), 4);
        QCOMPARE(formats->item(0)->text(),
                 QStringLiteral("Fake-quantized Hugging Face (safetensors)"));
        QVERIFY(formats->item(0)->flags() & Qt::ItemIsEnabled);
        QCOMPARE(formats->item(0)->checkState(), Qt::Checked);
        for (int i = 1; i < formats->count(); ++i) {
            QVERIFY(!(formats->item(i)->flags() & Qt::ItemIsEnabled));
            QCOMPARE(formats->item(i)->toolTip(), QStringLiteral("exporter not implemented yet"));
        }
        QVERIFY(!dialog.buttonBox()->button(QDialogButtonBox::Ok)->isEnabled());
        dialog.setOutputDirectory(QStringLiteral("/out/q"));
        QVERIFY(dialog.buttonBox()->button(QDialogButtonBox::Ok)->isEnabled());
        QCOMPARE(dialog.recipePath(), QStringLiteral("/out/q.recipe.json"));
    }

    void commandSurvivesTheShell() {
        const QString model = QStringLiteral("/models/it's a \"model\" $HOME `x`");
        qs::ExportDialog dialog(model, qs::Recipe{});
        dialog.setOutputDirectory(QStringLiteral("/out/dir with space"));
        dialog.setRecipePath(QStringLiteral("/tmp/r;rm -rf x.json"));
        const QString command = dialog.headlessCommand();
        QVERIFY(command.startsWith(QStringLiteral("quantscope-cli quantize '")));
        QCOMPARE(shellWords(command),
                 QStringList({QStringLiteral("quantscope-cli"), QStringLiteral("quantize"), model,
                              QStringLiteral("--recipe"), QStringLiteral("/tmp/r;rm -rf x.json"),
                              QStringLiteral("--out"), QStringLiteral("/out/dir with space")}));
        QCOMPARE(qs::ExportDialog::shellQuote(QStringLiteral("a'b")), QStringLiteral("'a'\\''b'"));
    }

    void copySavesTheRecipe() {
        const QString dir = qs::test::tempDir(QStringLiteral("export-dialog"));
        qs::Recipe recipe;
        recipe.global = qs::quant::resolveScheme("int8");
        recipe.exclude = {"lm_head"};
        qs::ExportDialog dialog(QStringLiteral("/models/m"), recipe);
        dialog.setOutputDirectory(dir + QStringLiteral("/out"));
        QVERIFY(dialog.copyButton()->isEnabled());
        QTest::mouseClick(dialog.copyButton(), Qt::LeftButton);
        const QString saved = dir + QStringLiteral("/out.recipe.json");
        QVERIFY2(QFileInfo::exists(saved), qPrintable(dialog.statusLabel()->text()));
        QCOMPARE(qs::Recipe::load(saved.toStdString()).toOrderedJson(), recipe.toOrderedJson());
        QCOMPARE(QApplication::clipboard()->text(), dialog.headlessCommand());
        QVERIFY(dialog.headlessCommand().contains(QStringLiteral("--recipe '") + saved +
                                                  QStringLiteral("'")));
    }
};

QTEST_MAIN(TestExportDialog)
#include "tst_exportdialog.moc"
