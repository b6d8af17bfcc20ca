#include "RecipePanel.h"

#include "LimitedSpinBox.h"
#include "WheelGuard.h"

#include "AlgorithmPanel.h"

#include "RecipeDocument.h"
#include "RecipeExclusionsModel.h"
#include "RecipeOverridesModel.h"
#include "quant/SchemeRegistry.h"
#include "recipe/LayerPattern.h"
#include "util/Error.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

#include <set>

namespace qs {

namespace {

constexpr int PreviewLimit = 500; // more rows than this only slow the list down

void selectData(QComboBox* box, const QString& value) {
    const QSignalBlocker blocker(box);
    box->setCurrentIndex(box->findData(value));
}

QSpinBox* makeSpinBox(int min, int max, QWidget* parent) {
    auto* box = new QSpinBox(parent);
    box->setRange(min, max);
    box->setKeyboardTracking(false); // one edit per value entered, not per digit
    return box;
}

} // namespace

RecipePanel::RecipePanel(RecipeDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_overrides(new RecipeOverridesModel(this)),
      m_exclusions(new RecipeExclusionsModel(this)) {
    setObjectName(QStringLiteral("recipePanel"));
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    // The data files first: they are what a run needs before anything else. The algorithms
    // follow the scheme they act on, above the (tall) override and exclusion lists, so that at
    // the default window size they are in view rather than below the fold.
    layout->addWidget(createDataGroup());
    layout->addWidget(createSchemeGroup());
    m_algorithms = new AlgorithmPanel(m_document, content);
    layout->addWidget(m_algorithms);
    layout->addWidget(createPatternGroup());
    layout->addStretch(1);

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("recipeMessage"));
    m_message->setWordWrap(true);
    m_message->setStyleSheet(QStringLiteral("color: #b00020"));
    m_message->hide();
    connect(m_algorithms, &AlgorithmPanel::editMessage, this, [this](const QString& message) {
        m_message->setText(message);
        m_message->setVisible(!message.isEmpty());
    });

    auto* scroll = new QScrollArea(this);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_message);
    outer->addWidget(scroll, 1);

    WheelGuard::install(content);

    connect(m_document, &RecipeDocument::recipeChanged, this, &RecipePanel::followRecipe);
    followRecipe(m_document->recipe());
}

void RecipePanel::fillSchemeBox(QComboBox* box) {
    // Some scheme names are long; a box as wide as the longest would widen the whole dock.
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(14);
    box->clear();
    box->addItem(RecipeDocument::NoScheme, RecipeDocument::NoScheme);
    box->setItemData(0, tr("No quantization"), Qt::ToolTipRole);
    for (const bool legacy : {false, true}) {
        if (legacy)
            box->insertSeparator(box->count());
        for (const quant::SchemeName& s : quant::schemeNames()) {
            if (s.legacy != legacy)
                continue;
            const QString name = QString::fromStdString(s.name);
            const QString description = QString::fromStdString(s.description) +
                                        (legacy ? tr(" (older Quark name)") : QString());
            box->addItem(name, name);
            box->setItemData(box->count() - 1, description, Qt::ToolTipRole);
            box->setItemData(box->count() - 1, name + QStringLiteral(": ") + description,
                             Qt::StatusTipRole);
        }
    }
}

template <typename Edit> void RecipePanel::edit(Edit&& editFn) {
    try {
        editFn();
        m_message->hide();
    } catch (const Error& e) {
        m_message->setText(QString::fromStdString(e.what()));
        m_message->show();
        followRecipe(m_document->recipe()); // put the widget back to what the recipe says
    }
}

QWidget* RecipePanel::createSchemeGroup() {
    auto* group = new QGroupBox(tr("Quantization"));
    m_global = new QComboBox(group);
    m_global->setObjectName(QStringLiteral("globalScheme"));
    fillSchemeBox(m_global);
    m_global->setToolTip(tr("Scheme for every linear layer not excluded or overridden"));
    connect(m_global, &QComboBox::activated, this, [this] {
        edit([this] {
            // A name that takes a group size gets the one in the box (kept across such names).
            const QString name = m_global->currentData().toString();
            m_document->setGlobalScheme(name, groupSizeFor(name));
        });
    });

    m_groupSize = makeSpinBox(1, 1, group);
    m_groupSize->setObjectName(QStringLiteral("groupSize"));
    applyFieldLimit(m_groupSize, limits::groupSize);
    m_groupSize->setValue(quant::kDefaultGroupSize);
    connect(m_groupSize, &QSpinBox::valueChanged, this,
            [this](int v) { edit([this, v] { m_document->setGlobalGroupSize(v); }); });

    m_kvCache = new QComboBox(group);
    m_kvCache->addItem(tr("none"), QStringLiteral("none"));
    m_kvCache->addItem(tr("fp8 (E4M3, per tensor, static)"), QStringLiteral("fp8"));
    m_kvCache->setToolTip(tr("Quantizes the output of every k_proj and v_proj"));
    connect(m_kvCache, &QComboBox::activated, this, [this] {
        edit([this] {
            m_document->setKvCacheFp8(m_kvCache->currentData().toString() == QLatin1String("fp8"));
        });
    });

    m_unfit = new QComboBox(group);
    for (const std::string& policy : Recipe::knownUnfitPolicies())
        m_unfit->addItem(QString::fromStdString(policy), QString::fromStdString(policy));
    m_unfit->setToolTip(tr("error: stop on a layer whose shape the scheme cannot take; skip: "
                           "leave such layers unquantized"));
    connect(m_unfit, &QComboBox::activated, this, [this] {
        edit([this] { m_document->setUnfitPolicy(m_unfit->currentData().toString()); });
    });

    auto* form = new QFormLayout(group);
    form->addRow(tr("Global scheme:"), m_global);
    form->addRow(tr("Group size:"), m_groupSize);
    form->addRow(tr("KV cache:"), m_kvCache);
    form->addRow(tr("Unfit layers:"), m_unfit);
    return group;
}

QWidget* RecipePanel::createPatternGroup() {
    auto* group = new QGroupBox(tr("Overrides and exclusions"));
    m_pattern = new QLineEdit(group);
    m_pattern->setObjectName(QStringLiteral("layerPattern"));
    m_pattern->setPlaceholderText(tr("*down_proj, model.layers.1[0-5].*, re:.*\\.0\\..*"));
    m_pattern->setClearButtonEnabled(true);
    m_pattern->setToolTip(tr("fnmatch pattern over full layer names, or re:<regex> (full "
                             "match)"));
    m_previewLabel = new QLabel(group);
    m_preview = new QListWidget(group);
    m_preview->setObjectName(QStringLiteral("patternPreview"));
    m_preview->setMaximumHeight(110);
    m_preview->setSelectionMode(QAbstractItemView::NoSelection);
    connect(m_pattern, &QLineEdit::textChanged, this, &RecipePanel::updatePreview);

    m_overrideScheme = new QComboBox(group);
    fillSchemeBox(m_overrideScheme);
    m_overrideScheme->removeItem(0); // an override always names a scheme
    m_addOverride = new QPushButton(tr("Override"), group);
    m_addOverride->setToolTip(tr("Give the layers matching the pattern this scheme (the last "
                                 "matching override wins)"));
    m_exclude = new QPushButton(tr("Exclude"), group);
    m_exclude->setToolTip(tr("Leave the layers matching the pattern unquantized"));
    connect(m_addOverride, &QPushButton::clicked, this, [this] {
        edit([this] {
            const QString name = m_overrideScheme->currentData().toString();
            m_document->addOverride(m_pattern->text(), name, groupSizeFor(name));
        });
    });
    connect(m_exclude, &QPushButton::clicked, this,
            [this] { edit([this] { m_document->addExclusion(m_pattern->text()); }); });

    m_overridesView = new QTableView(group);
    m_overridesView->setObjectName(QStringLiteral("overridesView"));
    m_overridesView->setModel(m_overrides);
    m_overridesView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_overridesView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_overridesView->horizontalHeader()->setSectionResizeMode(RecipeOverridesModel::PatternColumn,
                                                              QHeaderView::Stretch);
    m_overridesView->horizontalHeader()->setSectionResizeMode(RecipeOverridesModel::SchemeColumn,
                                                              QHeaderView::ResizeToContents);
    m_overridesView->setWordWrap(false);
    m_overridesView->setTextElideMode(Qt::ElideMiddle);
    m_overridesView->verticalHeader()->hide();
    m_overridesView->setMaximumHeight(120);
    auto* removeOverride = new QPushButton(tr("Remove"), group);
    connect(removeOverride, &QPushButton::clicked, this, [this] {
        const QModelIndex current = m_overridesView->currentIndex();
        if (current.isValid())
            edit([this, current] { m_document->removeOverride(current.row()); });
    });
    // Picking an override puts it back into the editor, so it can be refined and re-added.
    connect(m_overridesView, &QTableView::clicked, this, [this](const QModelIndex& index) {
        m_pattern->setText(
            index.siblingAtColumn(RecipeOverridesModel::PatternColumn).data().toString());
        const int scheme = m_overrideScheme->findData(
            index.siblingAtColumn(RecipeOverridesModel::SchemeColumn).data(Qt::UserRole));
        if (scheme >= 0)
            m_overrideScheme->setCurrentIndex(scheme);
    });

    m_exclusionsView = new QListView(group);
    m_exclusionsView->setObjectName(QStringLiteral("exclusionsView"));
    m_exclusionsView->setModel(m_exclusions);
    m_exclusionsView->setMaximumHeight(100);
    auto* removeExclusion = new QPushButton(tr("Remove"), group);
    connect(removeExclusion, &QPushButton::clicked, this, [this] {
        const QModelIndex current = m_exclusionsView->currentIndex();
        if (current.isValid())
            edit([this, current] { m_document->removeExclusion(current.row()); });
    });
    connect(m_exclusionsView, &QListView::clicked, this,
            [this](const QModelIndex& index) { m_pattern->setText(index.data().toString()); });

    m_typeKind = new QComboBox(group);
    m_typeKind->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_typeKind->setToolTip(tr("Linear kind: the last part of the layer names"));
    m_typeScheme = new QComboBox(group);
    fillSchemeBox(m_typeScheme);
    m_typeScheme->setItemText(0, tr("(no type override)"));
    auto* setType = new QPushButton(tr("Set"), group);
    connect(setType, &QPushButton::clicked, this, [this] {
        edit([this] {
            m_document->setLayerTypeOverride(m_typeKind->currentText(),
                                             m_typeScheme->currentData().toString());
        });
    });
    m_typeOverrides = new QLabel(group);
    m_typeOverrides->setWordWrap(true);

    auto* actions = new QHBoxLayout;
    actions->addWidget(m_overrideScheme, 1);
    actions->addWidget(m_addOverride);
    actions->addWidget(m_exclude);
    auto* typeRow = new QHBoxLayout;
    typeRow->addWidget(m_typeKind);
    typeRow->addWidget(m_typeScheme, 1);
    typeRow->addWidget(setType);

    auto* layout = new QVBoxLayout(group);
    layout->addWidget(new QLabel(tr("Layer pattern:"), group));
    layout->addWidget(m_pattern);
    layout->addWidget(m_previewLabel);
    layout->addWidget(m_preview);
    layout->addLayout(actions);
    auto* overridesTitle = new QHBoxLayout;
    overridesTitle->addWidget(new QLabel(tr("Overrides (last match wins):"), group), 1);
    overridesTitle->addWidget(removeOverride);
    layout->addLayout(overridesTitle);
    layout->addWidget(m_overridesView);
    auto* exclusionsTitle = new QHBoxLayout;
    exclusionsTitle->addWidget(new QLabel(tr("Excluded (never quantized):"), group), 1);
    exclusionsTitle->addWidget(removeExclusion);
    layout->addLayout(exclusionsTitle);
    layout->addWidget(m_exclusionsView);
    layout->addWidget(new QLabel(tr("Per layer kind:"), group));
    layout->addLayout(typeRow);
    layout->addWidget(m_typeOverrides);
    updatePreview();
    return group;
}

QWidget* RecipePanel::createDataGroup() {
    auto* group = new QGroupBox(tr("Data"));
    m_calibData = new QLineEdit(group);
    m_calibData->setObjectName(QStringLiteral("calibrationData"));
    m_calibData->setPlaceholderText(tr("calibration text (UTF-8)"));
    connect(m_calibData, &QLineEdit::editingFinished, this, [this] {
        edit([this] { m_document->setCalibrationData(m_calibData->text().trimmed()); });
    });
    auto* browseCalib = new QPushButton(tr("…"), group);
    browseCalib->setToolTip(tr("Choose the calibration text file"));
    connect(browseCalib, &QPushButton::clicked, this, [this] {
        const QString path = chooseTextFile(tr("Calibration Text"), m_calibData->text());
        if (!path.isEmpty())
            edit([this, path] { m_document->setCalibrationData(path); });
    });
    m_calibSamples = makeSpinBox(1, 1, group);
    applyFieldLimit(m_calibSamples, limits::calibrationSamples);
    connect(m_calibSamples, &QSpinBox::valueChanged, this,
            [this](int v) { edit([this, v] { m_document->setCalibrationSamples(v); }); });
    m_calibSeqLen = makeSpinBox(1, 1, group);
    applyFieldLimit(m_calibSeqLen, limits::calibrationSeqLen);
    connect(m_calibSeqLen, &QSpinBox::valueChanged, this,
            [this](int v) { edit([this, v] { m_document->setCalibrationSeqLen(v); }); });
    m_calibSeed = makeSpinBox(0, std::numeric_limits<int>::max(), group);
    connect(m_calibSeed, &QSpinBox::valueChanged, this, [this](int v) {
        edit([this, v] { m_document->setCalibrationSeed(static_cast<quint64>(v)); });
    });

    m_calibMode = new QComboBox(group);
    m_calibMode->setObjectName(QStringLiteral("calibrationMode"));
    for (const std::string& mode : knownCalibrationModes())
        m_calibMode->addItem(QString::fromStdString(mode), QString::fromStdString(mode));
    m_calibMode->setToolTip(
        tr("What static activation observers see while they calibrate. float: the "
           "full-precision model (Quark's behaviour). sequential: the model quantized upstream, "
           "so ranges follow the error each layer will see."));
    connect(m_calibMode, &QComboBox::activated, this, [this] {
        edit([this] { m_document->setCalibrationMode(m_calibMode->currentData().toString()); });
    });
    auto* calibRow = new QHBoxLayout;
    calibRow->addWidget(m_calibData, 1);
    calibRow->addWidget(browseCalib);
    auto* form = new QFormLayout(group);
    // The file first: it must be visible without scrolling at the default window size. The
    // evaluation text and windows are set where the model is evaluated (EvalPanel).
    form->addRow(tr("Calibration:"), calibRow);
    form->addRow(tr("Calib samples:"), m_calibSamples);
    form->addRow(tr("Calib sequence length:"), m_calibSeqLen);
    form->addRow(tr("Seed:"), m_calibSeed);
    form->addRow(tr("Observers see:"), m_calibMode);
    return group;
}

void RecipePanel::setModelInfo(const ModelInfo& info) {
    std::vector<const ModuleNode*> linears;
    info.tree.collect("linear", linears);
    m_linears.clear();
    std::set<std::string> kinds;
    for (const ModuleNode* node : linears) {
        m_linears << QString::fromStdString(node->name);
        kinds.insert(layerKindOf(node->name));
    }
    m_typeKind->clear();
    for (const std::string& kind : kinds)
        m_typeKind->addItem(QString::fromStdString(kind));
    m_exclusions->setLayerNames(m_linears);
    updatePreview();
}

void RecipePanel::clearModel() {
    setModelInfo(ModelInfo{});
}

QStringList RecipePanel::matchingLayers(const QString& pattern) const {
    const std::string p = pattern.trimmed().toStdString();
    QStringList out;
    try {
        validateLayerPattern(p, "pattern", "pattern");
    } catch (const Error&) {
        return out;
    }
    for (const QString& layer : m_linears)
        if (matchesLayerPattern(p, layer.toStdString()))
            out << layer;
    return out;
}

void RecipePanel::updatePreview() {
    const QString pattern = m_pattern->text().trimmed();
    m_preview->clear();
    bool valid = !pattern.isEmpty();
    if (valid) {
        try {
            validateLayerPattern(pattern.toStdString(), "pattern", "pattern");
        } catch (const Error& e) {
            valid = false;
            m_previewLabel->setText(QString::fromStdString(e.reason()));
        }
    } else {
        m_previewLabel->setText(tr("Type a pattern to see the layers it matches."));
    }
    m_addOverride->setEnabled(valid);
    m_exclude->setEnabled(valid);
    if (!valid)
        return;
    const QStringList matches = matchingLayers(pattern);
    m_previewLabel->setText(tr("Matches %n of %1 linear layer(s):", nullptr, int(matches.size()))
                                .arg(m_linears.size()));
    for (int i = 0; i < matches.size() && i < PreviewLimit; ++i)
        m_preview->addItem(matches[i]);
    if (matches.size() > PreviewLimit)
        m_preview->addItem(tr("… and %1 more").arg(matches.size() - PreviewLimit));
}

int RecipePanel::groupSizeFor(const QString& schemeName) const {
    const quant::SchemeName* entry = quant::findSchemeName(schemeName.toStdString());
    return entry && entry->takesGroupSize ? m_groupSize->value() : 0;
}

void RecipePanel::updateGroupSizeBox(const Recipe& recipe) {
    const quant::SchemeName* entry =
        recipe.global ? quant::findSchemeName(recipe.global->name) : nullptr;
    const bool perGroup =
        recipe.global && recipe.global->weight.granularity == quant::Granularity::PerGroup;
    const bool takes = entry && entry->takesGroupSize;
    {
        const QSignalBlocker blocker(m_groupSize);
        if (perGroup)
            m_groupSize->setValue(int(recipe.global->weight.groupSize));
        // Otherwise the box keeps its value, which the next name that takes one gets.
    }
    m_groupSize->setEnabled(takes);
    const QString name = recipe.global ? QString::fromStdString(recipe.global->name) : QString();
    m_groupSize->setToolTip(
        takes      ? tr("Elements per group along the input dimension (Quark's --group_size; a "
                             "layer's inputs must be a multiple of it). Overrides added with a per-group "
                             "name take it too.")
        : perGroup ? tr("%1 fixes its group size; Quark's per-group names (w_uint4_per_group_asym, "
                        "...) take one")
                         .arg(name.isEmpty() ? tr("This scheme") : name)
                   : tr("The scheme does not quantize weights per group"));
}

void RecipePanel::followRecipe(const Recipe& recipe) {
    selectData(m_global, recipe.global && !recipe.global->name.empty()
                             ? QString::fromStdString(recipe.global->name)
                             : RecipeDocument::schemeLabel(recipe.global));
    updateGroupSizeBox(recipe);
    selectData(m_kvCache, recipe.kvCache ? QStringLiteral("fp8") : QStringLiteral("none"));
    selectData(m_unfit, QString::fromStdString(recipe.unfitPolicy));
    m_overrides->setRecipe(recipe);
    m_exclusions->setRecipe(recipe);
    QStringList types;
    for (const auto& [kind, scheme] : recipe.layerTypeOverrides)
        types << QStringLiteral("%1 → %2").arg(QString::fromStdString(kind),
                                               RecipeDocument::schemeLabel(scheme));
    m_typeOverrides->setText(types.isEmpty() ? tr("No per-kind overrides.")
                                             : types.join(QStringLiteral("; ")));

    auto setSpin = [](QSpinBox* box, int64_t value) {
        const QSignalBlocker blocker(box);
        box->setValue(static_cast<int>(std::min<int64_t>(value, box->maximum())));
    };
    auto setText = [](QLineEdit* edit, const std::string& text) {
        const QSignalBlocker blocker(edit);
        edit->setText(QString::fromStdString(text));
    };
    setText(m_calibData, recipe.calibration.dataPath);
    setSpin(m_calibSamples, recipe.calibration.numSamples);
    setSpin(m_calibSeqLen, recipe.calibration.seqLen);
    setSpin(m_calibSeed, static_cast<int64_t>(recipe.calibration.seed));
    selectData(m_calibMode, QString::fromStdString(calibrationModeName(recipe.calibration.mode)));
}

QString RecipePanel::chooseTextFile(const QString& title, const QString& current) {
    const QString start = current.isEmpty() ? QString() : QFileInfo(current).absolutePath();
    return QFileDialog::getOpenFileName(this, title, start,
                                        tr("Text files (*.txt);;All files (*)"));
}

} // namespace qs
