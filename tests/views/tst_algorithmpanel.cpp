// AlgorithmPanel and RecipeDocument's algorithm edits: what the engine runs is enabled and the
// rest says why not; checking an algorithm adds it at its place in Quark's order, a parameter
// typed into its editor lands in the recipe with its JSON type, a value the catalog refuses is
// reported and changes nothing; every edit is one undo step.
#include "AlgorithmPanel.h"
#include "RecipeDocument.h"
#include "RecipePanel.h"
#include "TestMain.h"
#include "recipe/AlgorithmCatalog.h"
#include "util/Error.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QUndoStack>
#include <QtTest>

namespace {

QStringList algorithmNames(const qs::Recipe& r) {
    QStringList out;
    for (const qs::AlgorithmSpec& a : r.algorithms)
        out << QString::fromStdString(a.name);
    return out;
}

const nlohmann::json& paramsOf(const qs::Recipe& r, const std::string& name) {
    for (const qs::AlgorithmSpec& a : r.algorithms)
        if (a.name == name)
            return a.params;
    qFatal("algorithm %s not in the recipe", name.c_str());
}

} // namespace

class TestAlgorithmPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void runnableAlgorithmsAreEnabled() {
        qs::RecipeDocument doc;
        qs::AlgorithmPanel panel(&doc);
        for (const qs::AlgorithmInfo& info : qs::algorithmCatalog()) {
            QCheckBox* box = panel.algorithmBox(QString::fromStdString(info.name));
            QVERIFY(box);
            QCOMPARE(box->isEnabled(), info.runnable);
            QVERIFY(!box->isChecked());
            if (!info.runnable)
                QVERIFY(box->toolTip().contains(QStringLiteral("Not run")));
            for (const qs::AlgorithmParameterInfo& p : info.parameters)
                QVERIFY(panel.parameterEditor(QString::fromStdString(info.name),
                                              QString::fromStdString(p.name)));
        }
        QVERIFY(panel.algorithmBox(QStringLiteral("gptq"))->isEnabled());
    }

    void checkingAddsAndUndoRemoves() {
        qs::RecipeDocument doc;
        qs::AlgorithmPanel panel(&doc);
        panel.show();
        QCheckBox* gptq = panel.algorithmBox(QStringLiteral("gptq"));
        QWidget* damp =
            panel.parameterEditor(QStringLiteral("gptq"), QStringLiteral("damp_percent"));
        QVERIFY(!damp->isVisibleTo(&panel));
        gptq->click();
        QCOMPARE(algorithmNames(doc.recipe()), QStringList{QStringLiteral("gptq")});
        QVERIFY(paramsOf(doc.recipe(), "gptq").empty()); // Quark's defaults
        QVERIFY(damp->isVisibleTo(&panel));
        QVERIFY(panel.orderLabel()->text().contains(QStringLiteral("gptq")));
        doc.undoStack()->undo();
        QVERIFY(doc.recipe().algorithms.empty());
        QVERIFY(!gptq->isChecked());
        QVERIFY(!damp->isVisibleTo(&panel));
    }

    void enablingKeepsQuarksOrder() {
        qs::RecipeDocument doc;
        doc.setAlgorithmEnabled(QStringLiteral("gptq"), true);
        doc.setAlgorithmEnabled(QStringLiteral("rotation"), true);
        doc.setAlgorithmEnabled(QStringLiteral("smoothquant"), true);
        QCOMPARE(algorithmNames(doc.recipe()),
                 (QStringList{QStringLiteral("rotation"), QStringLiteral("smoothquant"),
                              QStringLiteral("gptq")}));
        doc.setAlgorithmEnabled(QStringLiteral("smoothquant"), false);
        QCOMPARE(algorithmNames(doc.recipe()),
                 (QStringList{QStringLiteral("rotation"), QStringLiteral("gptq")}));
        QCOMPARE(doc.undoStack()->count(), 4);
        QVERIFY_THROWS_EXCEPTION(qs::Error,
                                 doc.setAlgorithmEnabled(QStringLiteral("svdquant"), true));
    }

    void typedParametersLandWithTheirTypes() {
        qs::RecipeDocument doc;
        qs::AlgorithmPanel panel(&doc);
        QSignalSpy messages(&panel, &qs::AlgorithmPanel::editMessage);
        panel.algorithmBox(QStringLiteral("gptq"))->click();

        auto* damp = qobject_cast<QLineEdit*>(
            panel.parameterEditor(QStringLiteral("gptq"), QStringLiteral("damp_percent")));
        QVERIFY(damp);
        damp->setText(QStringLiteral("0.05"));
        Q_EMIT damp->editingFinished();
        QCOMPARE(paramsOf(doc.recipe(), "gptq").at("damp_percent").get<double>(), 0.05);

        auto* block = qobject_cast<QLineEdit*>(
            panel.parameterEditor(QStringLiteral("gptq"), QStringLiteral("block_size")));
        block->setText(QStringLiteral("64"));
        Q_EMIT block->editingFinished();
        QVERIFY(paramsOf(doc.recipe(), "gptq").at("block_size").is_number_integer());

        // Out of the catalog's range: refused with the field, recipe and editor unchanged.
        const std::string before = doc.recipe().toOrderedJson().dump();
        damp->setText(QStringLiteral("2"));
        Q_EMIT damp->editingFinished();
        QCOMPARE(doc.recipe().toOrderedJson().dump(), before);
        QVERIFY(messages.last().at(0).toString().contains(QStringLiteral("damp_percent")));
        QCOMPARE(damp->text(), QStringLiteral("0.05"));

        // Booleans are a default/true/false choice; Quark's rule desc_act needs static_groups.
        auto* descAct = qobject_cast<QComboBox*>(
            panel.parameterEditor(QStringLiteral("gptq"), QStringLiteral("desc_act")));
        auto* staticGroups = qobject_cast<QComboBox*>(
            panel.parameterEditor(QStringLiteral("gptq"), QStringLiteral("static_groups")));
        QVERIFY(descAct && staticGroups);
        staticGroups->setCurrentIndex(staticGroups->findData(QStringLiteral("false")));
        Q_EMIT staticGroups->activated(staticGroups->currentIndex());
        QVERIFY(messages.last().at(0).toString().contains(QStringLiteral("static_groups")));
        QVERIFY(!paramsOf(doc.recipe(), "gptq").contains("static_groups"));
        QCOMPARE(staticGroups->currentIndex(), 0); // back to "default"
        descAct->setCurrentIndex(descAct->findData(QStringLiteral("false")));
        Q_EMIT descAct->activated(descAct->currentIndex());
        QCOMPARE(paramsOf(doc.recipe(), "gptq").at("desc_act").get<bool>(), false);
        QVERIFY(messages.last().at(0).toString().isEmpty());

        // Clearing a field goes back to Quark's default; undo restores the typed value.
        damp->clear();
        Q_EMIT damp->editingFinished();
        QVERIFY(!paramsOf(doc.recipe(), "gptq").contains("damp_percent"));
        doc.undoStack()->undo();
        QCOMPARE(damp->text(), QStringLiteral("0.05"));
    }

    void listsAreTypedAsJson() {
        qs::RecipeDocument doc;
        doc.setAlgorithmEnabled(QStringLiteral("gptq"), true);
        doc.setAlgorithmParameter(QStringLiteral("gptq"), QStringLiteral("inside_layer_modules"),
                                  QStringLiteral("[\"self_attn.q_proj\", \"mlp.up_proj\"]"));
        QCOMPARE(paramsOf(doc.recipe(), "gptq").at("inside_layer_modules").size(), size_t(2));
        QCOMPARE(doc.algorithmParameterText(QStringLiteral("gptq"),
                                            QStringLiteral("inside_layer_modules")),
                 QStringLiteral("[\"self_attn.q_proj\",\"mlp.up_proj\"]"));
        QVERIFY_THROWS_EXCEPTION(qs::Error,
                                 doc.setAlgorithmParameter(QStringLiteral("gptq"),
                                                           QStringLiteral("inside_layer_modules"),
                                                           QStringLiteral("[unclosed")));
        QVERIFY_THROWS_EXCEPTION(qs::Error,
                                 doc.setAlgorithmParameter(QStringLiteral("awq"),
                                                           QStringLiteral("scaling_layers"),
                                                           QStringLiteral("[]")));
    }

    void recipePanelShowsTheMessage() {
        qs::RecipeDocument doc;
        qs::RecipePanel panel(&doc);
        panel.show();
        QVERIFY(panel.algorithmPanel());
        panel.algorithmPanel()->algorithmBox(QStringLiteral("gptq"))->click();
        auto* damp = qobject_cast<QLineEdit*>(panel.algorithmPanel()->parameterEditor(
            QStringLiteral("gptq"), QStringLiteral("damp_percent")));
        damp->setText(QStringLiteral("-1"));
        Q_EMIT damp->editingFinished();
        QVERIFY(panel.messageLabel()->isVisible());
        QVERIFY(panel.messageLabel()->text().contains(QStringLiteral("damp_percent")));
    }
};

QS_TEST_MAIN(TestAlgorithmPanel)
#include "tst_algorithmpanel.moc"
