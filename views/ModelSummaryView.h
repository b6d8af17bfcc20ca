#pragma once

#include "model/ModelInfo.h"

#include <QWidget>

class QTreeWidget;
class QTreeWidgetItem;

namespace qs {

// Key/value table of what is known about the open checkpoint (qs::ModelInfo): folder, family,
// architecture, the config summary, files, size, parameters and tokenizer.
class ModelSummaryView : public QWidget {
    Q_OBJECT
public:
    explicit ModelSummaryView(QWidget* parent = nullptr);

    void setModelInfo(const ModelInfo& info);
    void clear();

    // The value shown for a key (e.g. "Family", "hidden_size"), searched at every level; empty
    // when the key is not shown.
    QString value(const QString& key) const;
    QTreeWidget* table() const { return m_table; }

private:
    QTreeWidgetItem* addRow(const QString& key, const QString& value,
                            QTreeWidgetItem* parent = nullptr);

    QTreeWidget* m_table;
};

} // namespace qs
