#pragma once

#include <QStringList>
#include <QWidget>

class QLabel;
class QListWidget;
class QPushButton;

namespace qs {

// What the window shows before a model is open: open a folder, open the built-in demo model, or
// pick one of the recently opened model folders.
class StartPage : public QWidget {
    Q_OBJECT
public:
    explicit StartPage(QWidget* parent = nullptr);

    // Most recent first. Folders that no longer exist are listed greyed out and do not open.
    void setRecentModels(const QStringList& directories);
    // While a model is being opened the buttons are disabled so a second click does not queue a
    // second job.
    void setBusy(bool busy);
    void setFooterText(const QString& text);

    QPushButton* openFolderButton() const { return m_openFolder; }
    QPushButton* openDemoButton() const { return m_openDemo; }
    QListWidget* recentList() const { return m_recent; }

Q_SIGNALS:
    void openFolderRequested();
    void openDemoRequested();
    void openRecentRequested(const QString& directory);

private:
    QPushButton* m_openFolder;
    QPushButton* m_openDemo;
    QLabel* m_recentTitle;
    QListWidget* m_recent;
    QLabel* m_footer;
    bool m_busy = false;
};

} // namespace qs
