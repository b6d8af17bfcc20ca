// Wherever a scheme is chosen (the recipe panel's global scheme and overrides, the layer tree's
// "Override scheme…" dialog) every name of the scheme registry is offered, Quark's older long
// names included, each with its one-line description; the group size of Quark's per-group names
// is a control of its own, enabled only for them, and a recipe field (undoable, round-tripping).
#include "RecipeDocument.h"
#include "RecipeOverridesModel.h"
#include "RecipePanel.h"
#include "SchemeDialog.h"
#include "TestMain.h"
#include "quant/SchemeRegistry.h"
#include "util/Error.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>

namespace {

void choose(QComboBox* box, const QString& name) {
    const int index = box->findData(name);
    QVERIFY2(index >= 0, qPrintable(name));
    box->setCurrentIndex(index);
    Q_EMIT box->activated(index);
}

// Every registry name is an item of `box`, with its description as tooltip and status tip.
void checkEveryNameDescribed(const QComboBox* box) {
    for (const qs::quant::SchemeName& s : qs::quant::schemeNames()) {
        const int index = box->findData(QString::fromStdString(s.name));
        QVERIFY2(index >= 0, s.name.c_str());
        const QString tip = box->itemData(index, Qt::ToolTipRole).toString();
        QVERIFY2(tip.startsWith(QString::fromStdString(s.description)), s.name.c_str());
        QVERIFY2(box->itemData(index, Qt::StatusTipRole)
                     .toString()
                     .contains(QString::fromStdString(s.description)),
                 s.name.c_str());
    }
}

} // namespace

class TestSchemeChoice : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void panelOffersEveryNameWithItsDescription() {
        qs::RecipeDocument doc;
        qs::RecipePanel panel(&doc);
        checkEveryNameDescribed(panel.globalSchemeBox());
        checkEveryNameDescribed(panel.overrideSchemeBox());
        QVERIFY(panel.globalSchemeBox()->findData("w_int8_a_int8_per_token_dynamic") >= 0);
    }

    void groupSizeControl() {
        qs::RecipeDocument doc;
        qs::RecipePanel panel(&doc);
        QAbstractItemModelTester tester(panel.overridesModel());
        QSpinBox* group = panel.groupSizeBox();
        QVERIFY(!group->isEnabled()); // no scheme
        QSignalSpy changed(&doc, &qs::RecipeDocument::recipeChanged);

        choose(panel.globalSchemeBox(), "w_uint4_per_group_asym");
        QCOMPARE(doc.recipe().global->weight.groupSize, 128);
        QVERIFY(group->isEnabled());
        QCOMPARE(group->value(), 128);
        const int before = changed.count();
        group->setValue(32);
        QTRY_COMPARE(changed.count(), before + 1);
        QCOMPARE(doc.recipe().global->weight.groupSize, 32);
        QCOMPARE(doc.recipe().global->name, std::string("w_uint4_per_group_asym"));
        QCOMPARE(doc.recipe().toJson()["global"],
                 (nlohmann::json{{"name", "w_uint4_per_group_asym"}, {"group_size", 32}}));
        // The combo still shows the name.
        QCOMPARE(panel.globalSchemeBox()->currentData().toString(),
                 QStringLiteral("w_uint4_per_group_asym"));

        // Another per-group name keeps the group size; an override with one takes it too.
        choose(panel.globalSchemeBox(), "w_int4_per_group_sym");
        QCOMPARE(doc.recipe().global->weight.groupSize, 32);
        panel.patternEdit()->setText(QStringLiteral("*o_proj"));
        panel.overrideSchemeBox()->setCurrentIndex(
            panel.overrideSchemeBox()->findData(QStringLiteral("w_uint4_per_group_sym")));
        QTest::mouseClick(panel.addOverrideButton(), Qt::LeftButton);
        QCOMPARE(doc.recipe().layerOverrides.at(0).scheme.weight.groupSize, 32);
        QCOMPARE(panel.overridesModel()
                     ->index(0, qs::RecipeOverridesModel::SchemeColumn)
                     .data()
                     .toString(),
                 QStringLiteral("w_uint4_per_group_sym (group 32)"));

        // Names that fix their group size, or have none: the box is disabled and says why.
        choose(panel.globalSchemeBox(), "uint4_wo_64");
        QVERIFY(!group->isEnabled());
        QCOMPARE(group->value(), 64);
        QVERIFY(group->toolTip().contains("fixes its group size"));
        choose(panel.globalSchemeBox(), "int8");
        QVERIFY(!group->isEnabled());

        // Undo walks back through the group size edit.
        doc.undoStack()->undo(); // int8
        doc.undoStack()->undo(); // uint4_wo_64
        doc.undoStack()->undo(); // the override
        doc.undoStack()->undo(); // w_int4_per_group_sym
        QCOMPARE(doc.recipe().global->name, std::string("w_uint4_per_group_asym"));
        QCOMPARE(group->value(), 32);
        QVERIFY(group->isEnabled());
        doc.undoStack()->undo(); // group size 32
        QCOMPARE(doc.recipe().global->weight.groupSize, 128);
        QCOMPARE(group->value(), 128);
    }

    void groupSizeRefusedWithoutAPerGroupName() {
        qs::RecipeDocument doc;
        doc.setGlobalScheme(QStringLiteral("int8"));
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.setGlobalGroupSize(32));
        QCOMPARE(doc.undoStack()->count(), 1);
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.setGlobalScheme(QStringLiteral("int4_wo_128"), 32));
    }

    // The layer tree's "Override scheme…": every name, the current one's description under the
    // box, the group size for the names that take one.
    void overrideDialog() {
        qs::SchemeDialog dialog(QStringLiteral("model.layers.0.mlp.up_proj"));
        checkEveryNameDescribed(dialog.schemeBox());
        QCOMPARE(dialog.schemeBox()->findData(qs::RecipeDocument::NoScheme), -1);
        dialog.setScheme(QStringLiteral("w_int8_a_int8_per_token_dynamic"));
        QCOMPARE(dialog.descriptionLabel()->text(),
                 QString::fromStdString(
                     qs::quant::findSchemeName("w_int8_a_int8_per_token_dynamic")->description));
        QVERIFY(!dialog.groupSizeBox()->isEnabled());
        QCOMPARE(dialog.groupSize(), 0);

        dialog.setScheme(QStringLiteral("w_uint4_per_group_asym"), 32);
        QVERIFY(dialog.groupSizeBox()->isEnabled());
        QSignalSpy chosen(&dialog, &qs::SchemeDialog::schemeChosen);
        dialog.accept();
        QCOMPARE(chosen.count(), 1);
        QCOMPARE(chosen.at(0).at(0).toString(), QStringLiteral("w_uint4_per_group_asym"));
        QCOMPARE(chosen.at(0).at(1).toInt(), 32);

        qs::RecipeDocument doc;
        doc.addOverride(qs::RecipeDocument::exactLayerPattern("model.layers.0.mlp.up_proj"),
                        chosen.at(0).at(0).toString(), chosen.at(0).at(1).toInt());
        QCOMPARE(doc.recipe().layerOverrides.at(0).scheme.weight.groupSize, 32);
        const qs::Recipe back = qs::Recipe::fromJson(doc.recipe().toJson(), "r.json");
        QVERIFY(back == doc.recipe());
    }
};

QS_TEST_MAIN(TestSchemeChoice)
#include "tst_schemechoice.moc"
