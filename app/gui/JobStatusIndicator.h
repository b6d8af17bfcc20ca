#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QSet>

class QProgressBar;
class QStatusBar;
class QToolButton;

namespace qs {

class Engine;
class Job;

// The status bar's view of every engine job, whoever started it: the latest job's title and
// progress message, a progress bar with the time left, "… failed" / "… cancelled", and a Cancel
// button for all jobs. Shown while a job has started and not finished. It follows each job the
// Engine announces (Engine::jobSubmitted), so the code that starts a job need not report to it.
class JobStatusIndicator : public QObject {
    Q_OBJECT
public:
    JobStatusIndicator(Engine* engine, QStatusBar* statusBar);

    QProgressBar* progressBar() const { return m_progress; }
    QToolButton* cancelButton() const { return m_cancel; }
    bool isBusy() const { return !m_started.isEmpty(); }

Q_SIGNALS:
    // Any job failed (after the status bar says so): for the window's error box.
    void jobFailed(const QString& title, const QString& message);

private:
    void follow(Job* job);
    void onProgress(const QString& title, double fraction, const QString& message);
    void update();

    QStatusBar* m_statusBar;
    QProgressBar* m_progress;
    QToolButton* m_cancel;
    QElapsedTimer m_clock; // since the latest job started, for the time left
    QSet<int> m_started;   // ids of the jobs started and not finished yet
};

} // namespace qs
