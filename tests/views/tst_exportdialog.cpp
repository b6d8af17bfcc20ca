// ExportDialog: the formats are core's table (those this build writes checkable, the others
// disabled with the reason), the chosen ones become the recipe's export targets and the GGUF type
// a flag of the headless command, the recipe path follows the output folder, the headless command
// is quoted for a POSIX shell (checked by running it through /bin/sh), and Copy saves a recipe that
// loads back.
#include "ExportDialog.h"
#include "TestMain.h"
#include "TestSupport.h"
#include "export/ExportFormat.h"
#include "quant/SchemeRegistry.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
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
    void formatsFollowTheRegistry() {
        qs::ExportDialog dialog(QStringLiteral("/models/m"), qs::Recipe{});
        QListWidget* formats = dialog.formatList();
        QCOMPARE(formats->count(), int(qs::exportFormats().size()));
        for (int i = 0; i < formats->count(); ++i) {
            const qs::ExportFormat& f = qs::exportFormats()[size_t(i)];
            QCOMPARE(bool(formats->item(i)->flags() & Qt::ItemIsUserCheckable), f.available);
            if (!f.available)
                QCOMPARE(formats->item(i)->toolTip(), QStringLiteral("Not written by this build"));
        }
        // A recipe without export targets: the fake-quantized checkpoint, as the CLI's default.
        QCOMPARE(dialog.exportTargets(), std::vector<std::string>{"hf_fake"});
        QVERIFY(!dialog.ggufTypeBox()->isEnabled());
        QVERIFY(!dialog.buttonBox()->button(QDialogButtonBox::Ok)->isEnabled());
        dialog.setOutputDirectory(QStringLiteral("/out/q"));
        QVERIFY(dialog.buttonBox()->button(QDialogButtonBox::Ok)->isEnabled());
        QCOMPARE(dialog.recipePath(), QStringLiteral("/out/q.recipe.json"));
        // No format checked: nothing to write.
        formats->item(0)->setCheckState(Qt::Unchecked);
        QVERIFY(!dialog.buttonBox()->button(QDialogButtonBox::Ok)->isEnabled());
        // Issue 28: every format in view, none half hidden behind a scroll.
        QVERIFY(formats->height() >= formats->count() * formats->sizeHintForRow(0));
    }

    // Issue 28: fake-quantized and GGUF files keep the weights' quantization only; with a recipe
    // that quantizes activations the dialog says so while such a format is checked.
    void weightOnlyFormatsWarnOfActivations() {
        qs::Recipe w8a8;
        w8a8.global = qs::quant::resolveScheme("int8");
        qs::ExportDialog dialog(QStringLiteral("/models/m"), w8a8);
        QVERIFY(dialog.activationWarning()->isVisibleTo(&dialog)); // hf_fake, the default
        dialog.setExportTargets({"quark"});
        QVERIFY(!dialog.activationWarning()->isVisibleTo(&dialog));
        dialog.setExportTargets({"quark", "gguf"});
        QVERIFY(dialog.activationWarning()->isVisibleTo(&dialog));
        qs::Recipe weightOnly;
        weightOnly.global = qs::quant::resolveScheme("uint4_wo_32");
        qs::ExportDialog plain(QStringLiteral("/models/m"), weightOnly);
        QVERIFY(!plain.activationWarning()->isVisibleTo(&plain));
    }

    void chosenFormatsGoIntoTheRecipeAndCommand() {
        qs::Recipe recipe;
        recipe.exportTargets = {"hf_format", "gguf"}; // an alias counts as its format
        qs::ExportDialog dialog(QStringLiteral("/models/m"), recipe);
        QCOMPARE(dialog.exportTargets(), (std::vector<std::string>{"quark", "gguf"}));
        QVERIFY(dialog.ggufTypeBox()->isEnabled());
        dialog.ggufTypeBox()->setCurrentIndex(
            dialog.ggufTypeBox()->findData(QStringLiteral("q4_0")));
        dialog.setOutputDirectory(QStringLiteral("/out/q"));
        QVERIFY(dialog.headlessCommand().endsWith(QStringLiteral(" --gguf-type q4_0")));
        QCOMPARE(dialog.recipeToWrite().exportTargets, (std::vector<std::string>{"quark", "gguf"}));
        QListWidget* formats = dialog.formatList();
        for (int i = 0; i < formats->count(); ++i)
            if (formats->item(i)->data(Qt::UserRole).toString() == QStringLiteral("gguf"))
                formats->item(i)->setCheckState(Qt::Unchecked);
        QVERIFY(!dialog.ggufTypeBox()->isEnabled());
        QVERIFY(!dialog.headlessCommand().contains(QStringLiteral("--gguf-type")));
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
        // The GUI's device and precision, so the command computes what the GUI's run computes.
        dialog.setCompute(QStringLiteral("cpu"), QStringLiteral("bfloat16"));
        QCOMPARE(shellWords(dialog.headlessCommand()).mid(7),
                 QStringList({QStringLiteral("--device"), QStringLiteral("cpu"),
                              QStringLiteral("--dtype"), QStringLiteral("bfloat16")}));
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
        recipe.exportTargets = {"hf_fake"}; // the dialog's choice is part of the saved recipe
        QCOMPARE(qs::Recipe::load(saved.toStdString()).toOrderedJson(), recipe.toOrderedJson());
        QCOMPARE(QApplication::clipboard()->text(), dialog.headlessCommand());
        QVERIFY(dialog.headlessCommand().contains(QStringLiteral("--recipe '") + saved +
                                                  QStringLiteral("'")));
    }
};

QS_TEST_MAIN(TestExportDialog)
#include "tst_exportdialog.moc"
