#include "ModelSummaryView.h"

#include "DisplayFormat.h"

#include <QDir>
#include <QHeaderView>
#include <QTreeWidget>
#include <QTreeWidgetItemIterator>
#include <QVBoxLayout>

#include <map>

namespace qs {

ModelSummaryView::ModelSummaryView(QWidget* parent)
    : QWidget(parent), m_table(new QTreeWidget(this)) {
    m_table->setColumnCount(2);
    m_table->setHeaderLabels({tr("Property"), tr("Value")});
    m_table->setRootIsDecorated(true);
    m_table->setUniformRowHeights(true);
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setTextElideMode(Qt::ElideMiddle); // long folder paths keep both ends
    m_table->header()->setStretchLastSection(true);
    m_table->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_table);
}

QTreeWidgetItem* ModelSummaryView::addRow(const QString& key, const QString& value,
                                          QTreeWidgetItem* parent) {
    auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(m_table);
    item->setText(0, key);
    item->setText(1, value);
    item->setToolTip(1, value);
    return item;
}

void ModelSummaryView::setModelInfo(const ModelInfo& info) {
    m_table->clear();
    const QString directory = QDir::toNativeSeparators(QString::fromStdString(info.directory));
    addRow(tr("Folder"), directory);
    addRow(tr("Family"), QString::fromStdString(info.family));
    addRow(tr("Architecture"), QString::fromStdString(info.architecture));
    addRow(tr("Parameters"),
           QStringLiteral("%1 (%2)").arg(display::count(info.totalParameters),
                                         display::compactCount(info.totalParameters)));
    addRow(tr("Size on disk"),
           QStringLiteral("%1 (%2 bytes)")
               .arg(display::bytes(info.checkpointBytes),
                    display::count(static_cast<int64_t>(info.checkpointBytes))));

    const auto fileCount = static_cast<int>(info.checkpointFiles.size());
    if (fileCount == 1) {
        addRow(tr("Files"), QString::fromStdString(info.checkpointFiles.front()));
    } else {
        QTreeWidgetItem* files = addRow(tr("Files"), tr("%1 files").arg(fileCount));
        for (const std::string& file : info.checkpointFiles)
            addRow(QString(), QString::fromStdString(file), files);
        files->setExpanded(fileCount <= 4);
    }
    if (!info.sourceFile.empty())
        addRow(tr("Opened from"),
               QDir::toNativeSeparators(QString::fromStdString(info.sourceFile)));
    if (!info.stored.empty()) {
        std::map<std::string, int> counts; // stored scheme -> layers
        for (const auto& [layer, scheme] : info.stored.layers)
            ++counts[scheme];
        QStringList parts;
        for (const auto& [scheme, n] : counts)
            parts << QStringLiteral("%1 \u00d7 %2").arg(n).arg(QString::fromStdString(scheme));
        QTreeWidgetItem* stored =
            addRow(tr("Stored quantization"), QString::fromStdString(info.stored.format));
        addRow(tr("Layers"), parts.join(QStringLiteral(", ")), stored);
        addRow(tr("On load"), tr("dequantized to float"), stored);
        stored->setExpanded(true);
    }
    addRow(tr("Tokenizer"), info.tokenizerFiles.empty()
                                ? tr("none found")
                                : QString::fromStdString(info.tokenizerFiles));

    if (!info.configSummary.empty()) {
        QTreeWidgetItem* config = addRow(tr("Config"), QStringLiteral("config.json"));
        for (const auto& [key, value] : info.configSummary)
            addRow(QString::fromStdString(key), QString::fromStdString(value), config);
        config->setExpanded(true);
    }
}

void ModelSummaryView::clear() {
    m_table->clear();
}

QString ModelSummaryView::value(const QString& key) const {
    for (QTreeWidgetItemIterator it(m_table); *it; ++it)
        if ((*it)->text(0) == key)
            return (*it)->text(1);
    return {};
}

} // namespace qs
