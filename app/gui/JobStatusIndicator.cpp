#include "JobStatusIndicator.h"

#include "RunPanel.h"
#include "engine/Engine.h"

#include <QProgressBar>
#include <QStatusBar>
#include <QToolButton>

namespace qs {

namespace {
constexpr int StatusMessageMs = 8000;
} // namespace

JobStatusIndicator::JobStatusIndicator(Engine* engine, QStatusBar* statusBar)
    : QObject(statusBar), m_statusBar(statusBar), m_progress(new QProgressBar(statusBar)),
      m_cancel(new QToolButton(statusBar)) {
    m_progress->setRange(0, 1000);
    m_progress->setMinimumWidth(220);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p%"));
    m_progress->hide();
    m_cancel->setText(tr("Cancel"));
    m_cancel->setToolTip(tr("Cancel the running and queued jobs"));
    m_cancel->setAutoRaise(true);
    m_cancel->hide();
    connect(m_cancel, &QToolButton::clicked, engine, &Engine::cancelAll);
    statusBar->addPermanentWidget(m_progress);
    statusBar->addPermanentWidget(m_cancel);
    connect(engine, &Engine::jobSubmitted, this, &JobStatusIndicator::follow);
}

void JobStatusIndicator::follow(Job* job) {
    const int id = job->id();
    const QString title = job->title();
    connect(job, &Job::started, this, [this, id, title] {
        m_started.insert(id);
        m_statusBar->showMessage(title + QStringLiteral("…"));
        m_progress->setValue(0);
        m_progress->setFormat(QStringLiteral("%p%"));
        m_clock.start();
        update();
    });
    connect(job, &Job::progress, this, [this, title](double fraction, const QString& message) {
        onProgress(title, fraction, message);
    });
    connect(job, &Job::failed, this, [this, title](const QString& message) {
        m_statusBar->showMessage(tr("%1 failed").arg(title), StatusMessageMs);
        Q_EMIT jobFailed(title, message);
    });
    connect(job, &Job::cancelled, this, [this, title] {
        m_statusBar->showMessage(tr("%1 cancelled").arg(title), StatusMessageMs);
    });
    connect(job, &Job::finished, this, [this, id] {
        m_started.remove(id);
        update();
    });
}

void JobStatusIndicator::onProgress(const QString& title, double fraction, const QString& message) {
    m_statusBar->showMessage(title.isEmpty()     ? message
                             : message.isEmpty() ? title
                                                 : title + QStringLiteral(": ") + message);
    if (fraction < 0.0)
        return;
    m_progress->setValue(static_cast<int>(qBound(0.0, fraction, 1.0) * 1000.0 + 0.5));
    const QString left =
        RunPanel::remainingText(fraction, m_clock.isValid() ? m_clock.elapsed() / 1000.0 : 0.0);
    m_progress->setFormat(left.isEmpty() ? QStringLiteral("%p%") : QStringLiteral("%p%, ") + left);
}

void JobStatusIndicator::update() {
    const bool busy = isBusy();
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    if (!busy)
        m_progress->setValue(0);
}

} // namespace qs
