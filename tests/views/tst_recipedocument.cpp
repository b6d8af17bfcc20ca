// RecipeDocument, RecipePanel and JsonView: every edit is one undo step and undo restores the
// recipe JSON byte for byte; bad input throws and changes nothing; the exact-name pattern for a
// layer matches that layer only; the panel's pattern preview lists the linears a pattern matches;
// its models pass QAbstractItemModelTester while the recipe changes; the JSON view parses back to
// the document's recipe. The algorithm panel has its own test (tst_algorithmpanel).
#include "JsonView.h"
#include "RecipeDocument.h"
#include "RecipeExclusionsModel.h"
#include "RecipeOverridesModel.h"
#include "RecipePanel.h"
#include "TestMain.h"
#include "quant/SchemeRegistry.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/LayerPattern.h"
#include "util/Error.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>

namespace {

std::string jsonOf(const qs::Recipe& r) {
    return r.toOrderedJson().dump();
}

qs::ModuleNode linear(const std::string& name, int block) {
    qs::ModuleNode n;
    n.name = name;
    n.kind = "linear";
    n.shape = {8, 8};
    n.blockIndex = block;
    return n;
}

// Two blocks with attention and MLP linears, plus a name with fnmatch metacharacters.
qs::ModelInfo smallModel() {
    qs::ModelInfo info;
    info.tree.name = "model";
    info.tree.kind = "model";
    for (int b = 0; b < 2; ++b) {
        qs::ModuleNode block;
        block.name = "model.layers." + std::to_string(b);
        block.kind = "block";
        block.blockIndex = b;
        for (const char* k :
             {"self_attn.q_proj", "self_attn.o_proj", "mlp.up_proj", "mlp.down_proj"})
            block.children.push_back(linear(block.name + "." + k, b));
        info.tree.children.push_back(block);
    }
    return info;
}

QStringList previewItems(const qs::RecipePanel& panel) {
    QStringList items;
    for (int i = 0; i < panel.previewList()->count(); ++i)
        items << panel.previewList()->item(i)->text();
    return items;
}

} // namespace

class TestRecipeDocument : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void everyEditUndoesExactly() {
        qs::RecipeDocument doc;
        QSignalSpy changed(&doc, &qs::RecipeDocument::recipeChanged);
        std::vector<std::string> states{jsonOf(doc.recipe())};
        auto step = [&](auto edit) {
            edit();
            states.push_back(jsonOf(doc.recipe()));
            QVERIFY(states.back() != states[states.size() - 2]);
        };
        step([&] { doc.setGlobalScheme(QStringLiteral("int8")); });
        step([&] { doc.addOverride(QStringLiteral("*down_proj"), QStringLiteral("fp8")); });
        step([&] {
            doc.editOverride(0, QStringLiteral("*up_proj"),
                             QStringLiteral("w_int8_a_int8_per_token_dynamic"));
        });
        step([&] { doc.addOverride(QStringLiteral("re:.*\\.0\\..*"), QStringLiteral("int8")); });
        step([&] { doc.removeOverride(0); });
        step([&] { doc.addExclusion(QStringLiteral("lm_head")); });
        step([&] { doc.excludeLayer(QStringLiteral("model.layers.0.mlp.down_proj")); });
        step([&] { doc.removeExclusion(0); });
        step([&] { doc.setLayerTypeOverride(QStringLiteral("o_proj"), QStringLiteral("fp8")); });
        step([&] { doc.setKvCacheFp8(true); });
        step([&] { doc.setCalibrationData(QStringLiteral("/data/calib.txt")); });
        step([&] { doc.setCalibrationSamples(8); });
        step([&] { doc.setCalibrationSeqLen(128); });
        step([&] { doc.setCalibrationSeed(7); });
        step([&] { doc.setCalibrationMode(QStringLiteral("sequential")); });
        step([&] { doc.setEvaluationData(QStringLiteral("/data/eval.txt")); });
        step([&] { doc.setEvaluationSeqLen(256); });
        step([&] { doc.setEvaluationMaxWindows(4); });
        step([&] { doc.setUnfitPolicy(QStringLiteral("skip")); });
        step([&] { doc.setLayerTypeOverride(QStringLiteral("o_proj"), QStringLiteral("none")); });
        step([&] { doc.setGlobalScheme(QStringLiteral("none")); });

        const int edits = int(states.size()) - 1;
        QCOMPARE(doc.undoStack()->count(), edits);
        QCOMPARE(changed.count(), edits);
        // The signal carries the recipe as it is now.
        QCOMPARE(jsonOf(changed.last().at(0).value<qs::Recipe>()), states.back());

        for (int i = edits; i > 0; --i) {
            doc.undoStack()->undo();
            QCOMPARE(jsonOf(doc.recipe()), states[size_t(i - 1)]);
        }
        QVERIFY(!doc.undoStack()->canUndo());
        for (int i = 1; i <= edits; ++i) {
            doc.undoStack()->redo();
            QCOMPARE(jsonOf(doc.recipe()), states[size_t(i)]);
        }
    }

    void resolutionFollowsTheEdits() {
        qs::RecipeDocument doc;
        doc.setGlobalScheme(QStringLiteral("int8"));
        doc.addOverride(QStringLiteral("*down_proj"), QStringLiteral("fp8"));
        doc.excludeLayer(QStringLiteral("model.layers.0.mlp.down_proj"));
        const qs::Recipe& r = doc.recipe();
        QVERIFY(!r.schemeFor("model.layers.0.mlp.down_proj", "down_proj"));
        QCOMPARE(r.schemeFor("model.layers.1.mlp.down_proj", "down_proj")->name,
                 std::string("fp8"));
        QCOMPARE(r.schemeFor("model.layers.1.mlp.up_proj", "up_proj")->name, std::string("int8"));
    }

    void typingMergesIntoOneStep() {
        qs::RecipeDocument doc;
        // typing "256" (a window of 2 is the least a recipe allows: recipe/RecipeLimits.h)
        for (int v : {2, 25, 256})
            doc.setCalibrationSeqLen(v);
        QCOMPARE(doc.undoStack()->count(), 1);
        QCOMPARE(doc.recipe().calibration.seqLen, int64_t(256));
        doc.undoStack()->undo();
        QCOMPARE(doc.recipe().calibration.seqLen, qs::Recipe{}.calibration.seqLen);
    }

    void unchangedEditPushesNothing() {
        qs::RecipeDocument doc;
        doc.setGlobalScheme(QStringLiteral("none")); // already none
        doc.addExclusion(QStringLiteral("lm_head"));
        doc.addExclusion(QStringLiteral("lm_head")); // already excluded
        QCOMPARE(doc.undoStack()->count(), 1);
        QCOMPARE(doc.recipe().exclude.size(), size_t(1));
    }

    void badInputThrowsAndChangesNothing() {
        qs::RecipeDocument doc;
        doc.setGlobalScheme(QStringLiteral("int8"));
        const std::string before = jsonOf(doc.recipe());
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.setGlobalScheme(QStringLiteral("int3_bogus")));
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.addExclusion(QStringLiteral("re:(")));
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.addExclusion(QStringLiteral("  ")));
        QVERIFY_THROWS_EXCEPTION(qs::Error,
                                 doc.addOverride(QStringLiteral("*"), QStringLiteral("none")));
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.setCalibrationSamples(0));
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.setUnfitPolicy(QStringLiteral("maybe")));
        QVERIFY_THROWS_EXCEPTION(
            qs::Error, doc.setLayerTypeOverride(QStringLiteral("a.b"), QStringLiteral("int8")));
        QCOMPARE(jsonOf(doc.recipe()), before);
        QCOMPARE(doc.undoStack()->count(), 1);
    }

    void exactPatternMatchesOnlyThatLayer() {
        const QString plain = QStringLiteral("model.layers.0.mlp.down_proj");
        QCOMPARE(qs::RecipeDocument::exactLayerPattern(plain), plain);
        const QString odd = QStringLiteral("blk[1].mlp*x?y]z");
        const std::string pattern = qs::RecipeDocument::exactLayerPattern(odd).toStdString();
        QCOMPARE(pattern, std::string("blk[[]1].mlp[*]x[?]y]z"));
        QVERIFY(qs::matchesLayerPattern(pattern, odd.toStdString()));
        // What the unescaped name would also have matched as a pattern:
        QVERIFY(qs::matchesLayerPattern(odd.toStdString(), "blk1.mlpAAxQy]z"));
        QVERIFY(!qs::matchesLayerPattern(pattern, "blk1.mlpAAxQy]z"));
        QVERIFY(!qs::matchesLayerPattern(pattern, "blk[1].mlpAxQy]z"));
        QVERIFY(!qs::matchesLayerPattern(pattern, "blk[1].mlp*xQy]z"));
    }

    void panelPreviewsThePattern() {
        qs::RecipeDocument doc;
        qs::RecipePanel panel(&doc);
        panel.setModelInfo(smallModel());
        panel.patternEdit()->setText(QStringLiteral("*down_proj"));
        QCOMPARE(previewItems(panel),
                 QStringList({QStringLiteral("model.layers.0.mlp.down_proj"),
                              QStringLiteral("model.layers.1.mlp.down_proj")}));
        QVERIFY(panel.previewLabel()->text().contains(QStringLiteral("2 of 8")));
        QVERIFY(panel.excludeButton()->isEnabled());
        panel.patternEdit()->setText(QStringLiteral("model.layers.1.*_proj"));
        QCOMPARE(previewItems(panel).size(), 4);
        panel.patternEdit()->setText(QStringLiteral("re:.*\\.0\\.self_attn\\..*"));
        QCOMPARE(previewItems(panel),
                 QStringList({QStringLiteral("model.layers.0.self_attn.q_proj"),
                              QStringLiteral("model.layers.0.self_attn.o_proj")}));
        panel.patternEdit()->setText(QStringLiteral("re:(unclosed"));
        QVERIFY(previewItems(panel).isEmpty());
        QVERIFY(!panel.excludeButton()->isEnabled());
        QVERIFY(!panel.addOverrideButton()->isEnabled());
    }

    void panelEditsGoThroughTheDocument() {
        qs::RecipeDocument doc;
        qs::RecipePanel panel(&doc);
        QAbstractItemModelTester overridesTester(panel.overridesModel());
        QAbstractItemModelTester exclusionsTester(panel.exclusionsModel());
        panel.setModelInfo(smallModel());

        QComboBox* global = panel.globalSchemeBox();
        QCOMPARE(global->itemText(0), QStringLiteral("none"));
        // Current names come before the legacy aliases.
        bool seenLegacy = false;
        for (int i = 1; i < global->count(); ++i) {
            const QString name = global->itemData(i).toString();
            if (name.isEmpty())
                continue; // separator
            const auto& names = qs::quant::schemeNames();
            const auto it = std::find_if(names.begin(), names.end(), [&](const auto& s) {
                return s.name == name.toStdString();
            });
            QVERIFY2(it != names.end(), qPrintable(name));
            QVERIFY2(!(seenLegacy && !it->legacy), qPrintable(name));
            seenLegacy = seenLegacy || it->legacy;
        }
        global->setCurrentIndex(global->findData(QStringLiteral("int8")));
        Q_EMIT global->activated(global->currentIndex());
        QCOMPARE(doc.recipe().global->name, std::string("int8"));

        panel.patternEdit()->setText(QStringLiteral("*down_proj"));
        panel.overrideSchemeBox()->setCurrentIndex(
            panel.overrideSchemeBox()->findData(QStringLiteral("fp8")));
        QTest::mouseClick(panel.addOverrideButton(), Qt::LeftButton);
        QTest::mouseClick(panel.excludeButton(), Qt::LeftButton);
        QCOMPARE(panel.overridesModel()->rowCount(), 1);
        QCOMPARE(panel.overridesModel()
                     ->index(0, qs::RecipeOverridesModel::SchemeColumn)
                     .data()
                     .toString(),
                 QStringLiteral("fp8"));
        QCOMPARE(panel.exclusionsModel()->rowCount(), 1);
        QVERIFY(panel.exclusionsModel()
                    ->index(0)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("2 layer")));

        panel.patternEdit()->setText(QStringLiteral("re:("));
        panel.excludeButton()->setEnabled(true); // as if clicked before the preview caught up
        QTest::mouseClick(panel.excludeButton(), Qt::LeftButton);
        QVERIFY(!panel.messageLabel()->isHidden());
        QCOMPARE(doc.recipe().exclude.size(), size_t(1));

        doc.undoStack()->undo(); // the exclusion
        doc.undoStack()->undo(); // the override
        QCOMPARE(panel.overridesModel()->rowCount(), 0);
        QCOMPARE(panel.exclusionsModel()->rowCount(), 0);
        doc.undoStack()->undo(); // the global scheme
        QCOMPARE(global->currentData().toString(), QStringLiteral("none"));

        doc.setCalibrationSamples(8);
        QCOMPARE(panel.calibrationSamplesBox()->value(), 8);

        // Calibration mode: Quark's float by default, both ways between panel and document.
        QComboBox* mode = panel.calibrationModeBox();
        QCOMPARE(mode->currentData().toString(), QStringLiteral("float"));
        mode->setCurrentIndex(mode->findData(QStringLiteral("sequential")));
        Q_EMIT mode->activated(mode->currentIndex());
        QCOMPARE(doc.recipe().calibration.mode, qs::CalibrationMode::Sequential);
        doc.undoStack()->undo();
        QCOMPARE(mode->currentData().toString(), QStringLiteral("float"));
        QVERIFY_THROWS_EXCEPTION(qs::Error, doc.setCalibrationMode(QStringLiteral("greedy")));
        QCOMPARE(doc.recipe().calibration.mode, qs::CalibrationMode::Float);
    }

    void jsonViewParsesBackToTheRecipe() {
        qs::RecipeDocument doc;
        qs::JsonView view;
        connect(&doc, &qs::RecipeDocument::recipeChanged, &view, &qs::JsonView::setRecipe);
        doc.setGlobalScheme(QStringLiteral("int8"));
        doc.excludeLayer(QStringLiteral("lm_head"));
        const auto parsed = nlohmann::json::parse(view.toPlainText().toStdString());
        QCOMPARE(jsonOf(qs::Recipe::fromJson(parsed, "view")), jsonOf(doc.recipe()));
        QCOMPARE(parsed.at("global").get<std::string>(), std::string("int8"));
        QVERIFY(view.isReadOnly());
        doc.undoStack()->undo();
        QVERIFY(nlohmann::json::parse(view.toPlainText().toStdString()).at("exclude").empty());
    }
};

QS_TEST_MAIN(TestRecipeDocument)
#include "tst_recipedocument.moc"
