#pragma once

#include <QString>

class QWidget;

namespace qs {

// An error message box over `parent`, non-blocking: window-modal but opened with open(), so jobs
// keep reporting while it is up. The message gets the recipe panel's control when it names a
// recipe field (withGuiField). Object name "errorBox", for tests.
void showErrorBox(QWidget* parent, const QString& title, const QString& message);

} // namespace qs
