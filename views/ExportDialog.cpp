#include "ExportDialog.h"

#include "export/ExportFormat.h"

#include "util/Error.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QStandardPaths>
#include <QVBoxLayout>

#include <algorithm>

namespace qs {

namespace {

// Display names; the table itself (availability, descriptions) is core's ExportFormat.
QString labelOf(const ExportFormat& f) {
    if (f.name == "fake")
        return ExportDialog::tr("Fake-quantized Hugging Face (safetensors)");
    if (f.name == "quark")
        return ExportDialog::tr("Quark HF format (real quantized)");
    if (f.name == "gguf")
        return ExportDialog::tr("GGUF (llama.cpp)");
    if (f.name == "onnx")
        return ExportDialog::tr("ONNX (QuantizeLinear/DequantizeLinear)");
    if (f.name == "awq")
        return ExportDialog::tr("AWQ checkpoint (Quark's awq mode: AutoAWQ GEMM, vLLM)");
    return QString::fromStdString(f.name);
}

const char* const GgufTarget = "gguf";

bool quantizesActivations(const std::optional<quant::QuantScheme>& s) {
    return s && (s->input || s->output);
}

// Whether any layer of the recipe quantizes its input or output (the KV cache included).
bool quantizesActivations(const Recipe& recipe) {
    if (recipe.kvCache || quantizesActivations(recipe.global))
        return true;
    for (const LayerOverride& o : recipe.layerOverrides)
        if (quantizesActivations(o.scheme))
            return true;
    for (const auto& [kind, scheme] : recipe.layerTypeOverrides)
        if (quantizesActivations(scheme))
            return true;
    return false;
}

} // namespace

ExportDialog::ExportDialog(const QString& modelDirectory, const Recipe& recipe, QWidget* parent)
    : QDialog(parent), m_modelDirectory(modelDirectory), m_recipe(recipe),
      m_outDir(new QLineEdit(this)), m_recipePath(new QLineEdit(this)),
      m_formats(new QListWidget(this)), m_ggufType(new QComboBox(this)),
      m_copy(new QPushButton(tr("Copy headless command"), this)), m_status(new QLabel(this)),
      m_activationWarning(new QLabel(this)),
      m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this)) {
    setObjectName(QStringLiteral("exportDialog"));
    setWindowTitle(tr("Quantize and Export"));

    m_outDir->setObjectName(QStringLiteral("outputDirectory"));
    m_outDir->setPlaceholderText(tr("folder for the quantized model"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, &ExportDialog::chooseDirectory);
    connect(m_outDir, &QLineEdit::textChanged, this, [this] {
        if (!m_recipePathChosen) {
            const QString dir = outputDirectory();
            const QSignalBlocker blocker(m_recipePath);
            m_recipePath->setText(dir.isEmpty() ? QString() : dir + QLatin1String(".recipe.json"));
        }
        updateState();
    });
    m_recipePath->setObjectName(QStringLiteral("recipePath"));
    connect(m_recipePath, &QLineEdit::textEdited, this, [this] {
        m_recipePathChosen = true;
        updateState();
    });

    for (const ExportFormat& f : exportFormats()) {
        auto* item = new QListWidgetItem(labelOf(f), m_formats);
        item->setData(Qt::UserRole, QString::fromStdString(f.recipeTarget));
        item->setFlags(f.available ? Qt::ItemIsEnabled | Qt::ItemIsUserCheckable : Qt::NoItemFlags);
        item->setCheckState(Qt::Unchecked);
        item->setToolTip(f.available ? QString::fromStdString(f.description)
                                     : tr("Not written by this build"));
    }
    m_ggufType->setObjectName(QStringLiteral("ggufType"));
    // The values GGUF's option declares (its record in the format table), the default first.
    if (const ExportFormat* gguf = findExportFormat(GgufTarget))
        if (const ExportOption* type = findExportOption(*gguf, "gguf_type"))
            for (const std::string& t : type->allowed)
                m_ggufType->addItem(QString::fromStdString(t), QString::fromStdString(t));
    m_ggufType->setToolTip(
        tr("ggml type of the GGUF weights. auto: each quantized layer's own codes in the block "
           "that holds them (int4 sym: q4_0, 4-bit asym: q4_1, int8 sym: q8_0). A fixed type "
           "must hold every quantized layer's codes exactly, else the run is refused naming the "
           "layer; q4_k/q6_k and unquantized tensors are rounded by ggml's reference "
           "quantizers."));
    setExportTargets(recipe.exportTargets);
    connect(m_formats, &QListWidget::itemChanged, this, [this] { updateState(); });
    // Every format in view: a list that scrolls hides the last one (ONNX was cut in half).
    m_formats->setFixedHeight(m_formats->sizeHintForRow(0) * m_formats->count() +
                              2 * m_formats->frameWidth() + 4);
    m_formats->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_activationWarning->setObjectName(QStringLiteral("activationWarning"));
    m_activationWarning->setWordWrap(true);
    m_activationWarning->setStyleSheet(QStringLiteral("color: #9a5b00"));
    m_activationWarning->setText(
        tr("The recipe quantizes activations, which the fake-quantized and GGUF files do not "
           "store: loaded, they quantize the weights only, so their perplexity differs from this "
           "run's (and from the Quark and ONNX files')."));

    auto* note = new QLabel(tr("The recipe is always written beside the weights as "
                               "<b>quantscope_recipe.json</b>."),
                            this);
    note->setWordWrap(true);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_copy->setToolTip(tr("Save the recipe to the file above and copy the quantscope-cli command "
                          "that replays this export"));
    connect(m_copy, &QPushButton::clicked, this, &ExportDialog::copyHeadlessCommand);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* outRow = new QHBoxLayout;
    outRow->addWidget(m_outDir, 1);
    outRow->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Output folder:"), outRow);
    form->addRow(tr("Formats:"), m_formats);
    form->addRow(tr("GGUF weights:"), m_ggufType);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_activationWarning);
    layout->addWidget(note);
    auto* headless = new QFormLayout;
    headless->addRow(tr("Recipe file for the command:"), m_recipePath);
    layout->addLayout(headless);
    auto* copyRow = new QHBoxLayout;
    copyRow->addWidget(m_copy);
    copyRow->addStretch(1);
    layout->addLayout(copyRow);
    layout->addWidget(m_status);
    layout->addWidget(m_buttons);
    resize(620, sizeHint().height());
    updateState();
}

QString ExportDialog::outputDirectory() const {
    const QString text = m_outDir->text().trimmed();
    return text.isEmpty() ? QString() : QDir::cleanPath(QFileInfo(text).absoluteFilePath());
}

void ExportDialog::setOutputDirectory(const QString& directory) {
    m_outDir->setText(directory);
}

QString ExportDialog::recipePath() const {
    const QString text = m_recipePath->text().trimmed();
    return text.isEmpty() ? QString() : QDir::cleanPath(QFileInfo(text).absoluteFilePath());
}

void ExportDialog::setRecipePath(const QString& path) {
    m_recipePathChosen = true;
    m_recipePath->setText(path);
    updateState();
}

QString ExportDialog::shellQuote(const QString& text) {
    QString quoted = text;
    quoted.replace(QLatin1Char('\''), QLatin1String("'\\''"));
    return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

void ExportDialog::setCompute(const QString& device, const QString& dtype) {
    m_device = device;
    m_dtype = dtype;
}

QString ExportDialog::headlessCommand() const {
    // The CLI by name where the shell finds it; from a build tree (not on PATH) the one beside
    // this program, by its path, so the copied line runs as pasted.
    QString cli = QStringLiteral("quantscope-cli");
    const QString beside = QCoreApplication::applicationDirPath() + QLatin1Char('/') + cli;
    if (QStandardPaths::findExecutable(cli).isEmpty() && QFileInfo(beside).isExecutable())
        cli = shellQuote(beside);
    QString command = QStringLiteral("%4 quantize %1 --recipe %2 --out %3")
                          .arg(shellQuote(m_modelDirectory), shellQuote(recipePath()),
                               shellQuote(outputDirectory()), cli);
    if (!m_device.isEmpty())
        command += QStringLiteral(" --device ") + shellQuote(m_device);
    if (!m_dtype.isEmpty())
        command += QStringLiteral(" --dtype ") + shellQuote(m_dtype);
    const std::vector<std::string> targets = exportTargets();
    if (std::find(targets.begin(), targets.end(), GgufTarget) != targets.end())
        command += QStringLiteral(" --gguf-type ") + ggufType();
    return command;
}

std::vector<std::string> ExportDialog::exportTargets() const {
    std::vector<std::string> targets;
    for (int i = 0; i < m_formats->count(); ++i)
        if (m_formats->item(i)->checkState() == Qt::Checked)
            targets.push_back(m_formats->item(i)->data(Qt::UserRole).toString().toStdString());
    return targets;
}

void ExportDialog::setExportTargets(const std::vector<std::string>& targets) {
    bool any = false;
    for (int i = 0; i < m_formats->count(); ++i) {
        QListWidgetItem* item = m_formats->item(i);
        const std::string target = item->data(Qt::UserRole).toString().toStdString();
        const ExportFormat* f = findExportFormat(target);
        const bool checked = f && f->available &&
                             std::any_of(targets.begin(), targets.end(), [&](const std::string& t) {
                                 return findExportFormat(t) == f;
                             });
        item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
        any = any || checked;
    }
    if (!any) // the recipe names none this build writes: the fake-quantized checkpoint
        m_formats->item(0)->setCheckState(Qt::Checked);
    updateState();
}

QString ExportDialog::ggufType() const {
    return m_ggufType->currentData().toString();
}

ExportOptions ExportDialog::exportOptions() const {
    const std::vector<std::string> targets = exportTargets();
    if (std::find(targets.begin(), targets.end(), GgufTarget) == targets.end())
        return {};
    return {{"gguf_type", ggufType().toStdString()}};
}

Recipe ExportDialog::recipeToWrite() const {
    Recipe recipe = m_recipe;
    recipe.exportTargets = exportTargets();
    return recipe;
}

bool ExportDialog::copyHeadlessCommand() {
    const QString path = recipePath();
    if (path.isEmpty() || outputDirectory().isEmpty())
        return false;
    try {
        QDir().mkpath(QFileInfo(path).absolutePath());
        recipeToWrite().save(path.toStdString());
    } catch (const std::exception& e) {
        m_status->setText(tr("Cannot write the recipe: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
    const QString command = headlessCommand();
    QApplication::clipboard()->setText(command);
    m_status->setText(
        tr("Copied; the recipe was saved to %1:<br><code>%2</code>")
            .arg(QDir::toNativeSeparators(path).toHtmlEscaped(), command.toHtmlEscaped()));
    return true;
}

void ExportDialog::chooseDirectory() {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Output Folder"), outputDirectory());
    if (!dir.isEmpty())
        m_outDir->setText(dir);
}

void ExportDialog::updateState() {
    const std::vector<std::string> targets = exportTargets();
    m_ggufType->setEnabled(std::find(targets.begin(), targets.end(), GgufTarget) != targets.end());
    const bool weightsOnlyFile = std::any_of(targets.begin(), targets.end(), [](const auto& t) {
        return t == "hf_fake" || t == GgufTarget;
    });
    m_activationWarning->setVisible(weightsOnlyFile && quantizesActivations(m_recipe));
    const bool ready = !outputDirectory().isEmpty() && !targets.empty();
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(ready);
    m_copy->setEnabled(ready && !recipePath().isEmpty());
}

} // namespace qs
