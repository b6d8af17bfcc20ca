#pragma once

#include <QString>

namespace qs {

// Engine errors name recipe fields ("field 'calibration.data'"); the user of the GUI needs the
// control that sets it, never a command-line flag. Returns `message` with a "Set it in: …" line
// when it names a field the recipe panel edits, unchanged otherwise.
QString withGuiField(const QString& message);

} // namespace qs
