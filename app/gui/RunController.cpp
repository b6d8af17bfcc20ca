#include "RunController.h"

#include "DisplayFormat.h"
#include "EvalPanel.h"
#include "ExportDialog.h"
#include "LayerTreeModel.h"
#include "RecipeDefaults.h"
#include "RecipeDocument.h"
#include "RunPanel.h"
#include "WorkbenchPage.h"
#include "engine/Engine.h"
#include "recipe/Provenance.h"

#include <QDir>
#include <QDockWidget>
#include <QStatusBar>
#include <QStringList>
#include <QTime>

#include <utility>

namespace qs {

namespace {
constexpr int StatusMessageMs = 8000;
} // namespace

RunController::RunController(Engine* engine, RecipeDocument* recipe, WorkbenchPage* workbench,
                             RunPanel* runPanel, QDockWidget* runDock, QStatusBar* statusBar,
                             QWidget* window)
    : QObject(window), m_engine(engine), m_recipe(recipe), m_workbench(workbench),
      m_runPanel(runPanel), m_runDock(runDock), m_statusBar(statusBar), m_window(window) {
    connect(m_runPanel, &RunPanel::analyzeRequested, this, [this] { startRun(RunKind::Analyze); });
    connect(m_runPanel, &RunPanel::quantizeRequested, this, &RunController::openExportDialog);
    // Evaluate is the evaluation panel's: its settings, its button, its figures.
    EvalPanel* eval = m_workbench->evalPanel();
    connect(eval, &EvalPanel::evaluateRequested, this, [this] { startRun(RunKind::Evaluate); });
    connect(eval, &EvalPanel::cancelRequested, this, &RunController::cancelRun);
    connect(m_runPanel, &RunPanel::sensitivityRequested, this,
            [this] { startRun(RunKind::Sensitivity); });
    connect(m_runPanel, &RunPanel::cancelRequested, this, &RunController::cancelRun);
    connect(m_runPanel, &RunPanel::compareRequested, this, &RunController::compareWith);
}

void RunController::compareWith(int id) {
    for (const RunRecord& r : m_history) {
        if (r.id == id) {
            m_workbench->setComparison(r.reports, r.shortLabel);
            return;
        }
    }
    m_workbench->setComparison({}, QString());
}

void RunController::setModelDirectory(const QString& directory) {
    m_modelDirectory = directory;
    m_runPanel->setModelLoaded(!directory.isEmpty());
    if (directory.isEmpty())
        return;
    // Results belong to the model that made them: another model starts without any.
    m_runPanel->clearSensitivity();
    m_workbench->evalPanel()->clearResult();
    m_reportsBeforeRun.clear();
    m_lastFp.reset();
    m_lastQuantized.reset();
    m_lastFidelity.reset();
    // Runs are compared within one model.
    m_history.clear();
    m_runPanel->clearRuns();
    m_workbench->setComparison({}, QString());
}

bool RunController::startRun(RunKind kind, const QString& outDir,
                             const std::vector<std::string>& exportTargets,
                             const ExportOptions& exportOptions) {
    if (isRunning() || m_modelDirectory.isEmpty())
        return false;
    RunRequest request;
    request.analyze = kind == RunKind::Analyze;
    request.evaluate = request.evaluateFullPrecision = kind == RunKind::Evaluate;
    request.sensitivity = kind == RunKind::Sensitivity;
    request.recipe = m_recipe->recipe();
    m_runDocumentHash = LayerTreeModel::layerRecipeHash(request.recipe);
    if (kind == RunKind::Quantize)
        request.outDir = outDir.toStdString();
    if (!exportTargets.empty())
        request.recipe.exportTargets = exportTargets;
    request.exportOptions = exportOptions;
    // Every run computes on the device and in the precision chosen in the evaluation panel.
    EvalPanel* eval = m_workbench->evalPanel();
    request.device = eval->device().toStdString();
    request.dtype = eval->dtype().toStdString();
    QString title;
    switch (kind) {
    case RunKind::Analyze:
        m_reportsBeforeRun.clear();
        for (const LayerReport* r : m_workbench->layerTreeModel()->reports())
            m_reportsBeforeRun.push_back(*r);
        m_reportsRecipeHashBeforeRun = m_workbench->layerTreeModel()->reportsRecipeHash();
        m_workbench->clearLayerReports();
        // The reports that stream in belong to this recipe; editing it later marks them stale.
        m_workbench->layerTreeModel()->setReportsRecipeHash(m_runDocumentHash);
        title = tr("Analyzing");
        break;
    case RunKind::Quantize:
        title = tr("Quantizing to %1").arg(QDir::toNativeSeparators(outDir));
        break;
    case RunKind::Evaluate:
        eval->setRunning(true);
        title = tr("Evaluating");
        break;
    case RunKind::Sensitivity:
        m_runPanel->clearSensitivity();
        // The rows stream in before the outcome names the compute (and stay if cancelled).
        m_runPanel->setSensitivityCompute(request.device, request.dtype);
        title = tr("Measuring sensitivity");
        break;
    }
    // The next model opened proposes the calibration text this run used.
    RecipeDefaults::rememberCalibration(
        QString::fromStdString(request.recipe.calibration.dataPath));
    if (kind == RunKind::Evaluate || kind == RunKind::Sensitivity)
        RecipeDefaults::rememberEvaluation(
            QString::fromStdString(request.recipe.evaluation.dataPath));
    m_kind = kind;
    m_runRecipe = request.recipe;
    Job* job = m_engine->run(request);
    m_job = job;
    connect(job, &Job::progress, m_runPanel, &RunPanel::setProgress);
    if (kind == RunKind::Evaluate)
        connect(job, &Job::progress, eval, &EvalPanel::setProgress);
    connect(job, &Job::layerReports, m_workbench,
            [this](int /*block*/, const std::vector<LayerReport>& layers) {
                m_workbench->addLayerReports(layers);
            });
    connect(job, &Job::sensitivityRow, this, [this](const SensitivityRow& row) {
        m_runPanel->addSensitivityRow(row);
        m_workbench->setSensitivity(row);
    });
    connect(job, &Job::runFinished, this, &RunController::onRunFinished);
    connect(job, &Job::failed, this, &RunController::onFailed);
    connect(job, &Job::cancelled, this, &RunController::onCancelled);
    m_runPanel->setRunning(title);
    eval->setBusy(true);
    // The panel that shows this run's results comes to the front: the evaluation's figures are
    // in the Evaluation tab, the rest in the Runs tab.
    if (kind == RunKind::Evaluate)
        m_workbench->evalDock()->raise();
    else
        m_runDock->raise();
    Q_EMIT runStarted(job);
    return true;
}

void RunController::cancelRun() {
    if (m_job)
        m_job->cancel();
}

ExportDialog* RunController::openExportDialog() {
    if (m_modelDirectory.isEmpty() || isRunning())
        return nullptr;
    auto* dialog = new ExportDialog(m_modelDirectory, m_recipe->recipe(), m_window);
    const EvalPanel* eval = m_workbench->evalPanel();
    dialog->setCompute(eval->device(), eval->dtype());
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        startRun(RunKind::Quantize, dialog->outputDirectory(), dialog->exportTargets(),
                 dialog->exportOptions());
    });
    dialog->open();
    return dialog;
}

void RunController::onRunFinished(const RunOutcome& summary) {
    m_job = nullptr;
    QString status;
    switch (m_kind) {
    case RunKind::Analyze: {
        status = tr("Analysis done");
        RunRecord record;
        record.id = m_history.empty() ? 1 : m_history.back().id + 1;
        record.recipe = m_runRecipe;
        for (const LayerReport* r : m_workbench->layerTreeModel()->reports())
            record.reports.push_back(*r);
        QStringList what{RecipeDocument::schemeLabel(m_runRecipe.global)};
        if (!m_runRecipe.layerOverrides.empty() || !m_runRecipe.layerTypeOverrides.empty())
            what << tr("%n override(s)", nullptr,
                       static_cast<int>(m_runRecipe.layerOverrides.size() +
                                        m_runRecipe.layerTypeOverrides.size()));
        if (!m_runRecipe.exclude.empty())
            what << tr("%n excluded", nullptr, static_cast<int>(m_runRecipe.exclude.size()));
        for (const AlgorithmSpec& a : m_runRecipe.algorithms)
            what << QString::fromStdString(a.name);
        record.label = tr("Run %1 · %2 · %3")
                           .arg(record.id)
                           .arg(what.join(QStringLiteral(", ")),
                                QTime::currentTime().toString(QStringLiteral("HH:mm:ss")));
        record.shortLabel = tr("run %1").arg(record.id);
        m_runPanel->addRun(record.id, record.label);
        m_history.push_back(std::move(record));
        // The comparison chosen stays: the new results against the same earlier run.
        compareWith(m_runPanel->comparedRun());
        break;
    }
    case RunKind::Quantize:
        status = tr("Quantized model written to %1")
                     .arg(QDir::toNativeSeparators(QString::fromStdString(summary.outDir)));
        break;
    case RunKind::Evaluate:
        m_lastFp = summary.fullPrecision;
        m_lastQuantized = summary.perplexity;
        m_lastFidelity = summary.fidelity;
        m_workbench->evalPanel()->showPerplexities(summary.fullPrecision, summary.perplexity,
                                                   summary.fidelity);
        status = tr("Evaluation done");
        break;
    case RunKind::Sensitivity:
        if (summary.sensitivity)
            m_runPanel->showSensitivityTotals(*summary.sensitivity);
        m_runPanel->setSensitivityCompute(summary.device, summary.dtype);
        status = tr("Sensitivity done");
        break;
    }
    // Every kind of run says where it computed, Analyze's layer reports and Quantize's files too.
    status = tr("%1 (%2)").arg(status, display::compute(summary.device, summary.dtype));
    if (!summary.skipped.empty())
        status += tr("; %n unfit layer(s) left unquantized", nullptr,
                     static_cast<int>(summary.skipped.size()));
    // The tree marks them while the recipe stays the one that ran (Sensitivity quantizes layer by
    // layer and reports none).
    if (m_kind != RunKind::Sensitivity)
        m_workbench->layerTreeModel()->setUnfitSkipped(summary.skipped, m_runDocumentHash);
    for (const std::string& w : summary.warnings)
        status += QStringLiteral("\n") + tr("Warning: %1").arg(QString::fromStdString(w));
    m_runPanel->setIdle(status);
    m_workbench->evalPanel()->setBusy(false);
    m_statusBar->showMessage(status, StatusMessageMs);
    Q_EMIT runFinished(summary);
}

void RunController::onFailed(const QString& message) {
    m_job = nullptr;
    m_runPanel->setIdle(tr("Failed: %1").arg(message));
    EvalPanel* eval = m_workbench->evalPanel();
    if (m_kind == RunKind::Evaluate)
        eval->showFailure(message);
    eval->setBusy(false);
    Q_EMIT runFailed(message);
}

void RunController::onCancelled() {
    m_job = nullptr;
    // A cancelled run leaves the previous results in place.
    if (m_kind == RunKind::Analyze) {
        m_workbench->clearLayerReports();
        m_workbench->layerTreeModel()->setReportsRecipeHash(m_reportsRecipeHashBeforeRun);
        m_workbench->addLayerReports(std::exchange(m_reportsBeforeRun, {}));
    } else if (m_kind == RunKind::Evaluate) {
        EvalPanel* eval = m_workbench->evalPanel();
        eval->showPerplexities(m_lastFp, m_lastQuantized, m_lastFidelity);
        eval->showCancelled();
    }
    m_workbench->evalPanel()->setBusy(false);
    m_runPanel->setIdle(tr("Cancelled"));
    Q_EMIT runCancelled();
}

} // namespace qs
