#include "StartPage.h"

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace qs {

namespace {
constexpr int DirectoryRole = Qt::UserRole + 1;
}

StartPage::StartPage(QWidget* parent)
    : QWidget(parent), m_openFolder(new QPushButton(tr("Open model folder…"), this)),
      m_openDemo(new QPushButton(tr("Open demo model"), this)),
      m_recentTitle(new QLabel(tr("Recent models"), this)), m_recent(new QListWidget(this)),
      m_footer(new QLabel(this)) {
    auto* title = new QLabel(tr("Quantscope"), this);
    QFont titleFont = title->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 2.2);
    titleFont.setBold(true);
    title->setFont(titleFont);
    auto* subtitle = new QLabel(
        tr("Post-training quantization workbench for large language models.\n"
           "Open a Hugging Face checkpoint folder (config.json + *.safetensors) to inspect its "
           "layers and measure its perplexity."),
        this);
    subtitle->setWordWrap(true);

    m_openFolder->setToolTip(tr("Choose a folder with config.json and safetensors files"));
    m_openDemo->setToolTip(tr("A small random Llama checkpoint written on first use, with "
                              "planted outlier channels"));
    m_openFolder->setMinimumHeight(m_openFolder->sizeHint().height() * 3 / 2);
    m_openDemo->setMinimumHeight(m_openFolder->minimumHeight());
    connect(m_openFolder, &QPushButton::clicked, this, &StartPage::openFolderRequested);
    connect(m_openDemo, &QPushButton::clicked, this, &StartPage::openDemoRequested);

    QFont sectionFont = m_recentTitle->font();
    sectionFont.setBold(true);
    m_recentTitle->setFont(sectionFont);
    m_recent->setSelectionMode(QAbstractItemView::NoSelection);
    m_recent->setMouseTracking(true);
    m_recent->setCursor(Qt::PointingHandCursor);
    m_recent->setTextElideMode(Qt::ElideMiddle);
    m_recent->setUniformItemSizes(true);
    connect(m_recent, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
        if (m_busy || !(item->flags() & Qt::ItemIsEnabled))
            return;
        Q_EMIT openRecentRequested(item->data(DirectoryRole).toString());
    });

    m_footer->setWordWrap(true);
    m_footer->setEnabled(false); // greyed: it is information, not an action

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_openFolder);
    buttons->addWidget(m_openDemo);
    buttons->addStretch(1);

    // A column of readable width in the middle of a large window.
    auto* column = new QVBoxLayout;
    column->addStretch(1);
    column->addWidget(title);
    column->addWidget(subtitle);
    column->addSpacing(16);
    column->addLayout(buttons);
    column->addSpacing(24);
    column->addWidget(m_recentTitle);
    column->addWidget(m_recent);
    column->addSpacing(8);
    column->addWidget(m_footer);
    column->addStretch(1);

    auto* outer = new QHBoxLayout(this);
    outer->addStretch(1);
    outer->addLayout(column, 4);
    outer->addStretch(1);

    setRecentModels({});
    // Room for the ten recent models the window keeps, no more: the page stays a compact column.
    const int rowHeight = qMax(m_recent->sizeHintForRow(0), fontMetrics().height() + 4);
    m_recent->setFixedHeight(10 * rowHeight + 2 * m_recent->frameWidth() + 4);
}

void StartPage::setRecentModels(const QStringList& directories) {
    m_recent->clear();
    for (const QString& directory : directories) {
        const QFileInfo info(directory);
        auto* item = new QListWidgetItem(
            QStringLiteral("%1 — %2").arg(info.fileName(), QDir::toNativeSeparators(directory)),
            m_recent);
        item->setData(DirectoryRole, directory);
        if (info.isDir() || info.isFile()) { // a checkpoint folder or a GGUF file
            item->setToolTip(tr("Open %1").arg(QDir::toNativeSeparators(directory)));
        } else {
            item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
            item->setToolTip(tr("Not found: %1").arg(QDir::toNativeSeparators(directory)));
        }
    }
    if (directories.isEmpty()) {
        auto* item = new QListWidgetItem(tr("No recent models yet."), m_recent);
        item->setFlags(Qt::NoItemFlags);
    }
}

void StartPage::setBusy(bool busy) {
    m_busy = busy;
    m_openFolder->setEnabled(!busy);
    m_openDemo->setEnabled(!busy);
}

void StartPage::setFooterText(const QString& text) {
    m_footer->setText(text);
}

} // namespace qs
