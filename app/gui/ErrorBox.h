#pragma once

#include <QString>

class QWidget;

namespace qs {

// What an error box shows: `text` in the box itself, and the whole message as the box's
// detailed text (a scrollable area behind "Show Details…") when it is too long for the box;
// `detail` is empty when the message fits.
struct ErrorBoxText {
    QString text;
    QString detail;
};

// A message longer than `maxLines` lines or `maxChars` characters keeps its first lines (the
// summary: a refusal's reason comes first, the layers it names follow one a line) and says how
// many lines more the details hold; a box sized to a 35-layer refusal would be taller than the
// screen, its OK button out of reach.
ErrorBoxText splitErrorText(const QString& message, int maxLines = 8, int maxChars = 700);

// An error message box over `parent`, non-blocking: window-modal but opened with open(), so jobs
// keep reporting while it is up. The message gets the recipe panel's control when it names a
// recipe field (withGuiField); a long message goes to the box's details (splitErrorText). Object
// name "errorBox", for tests.
void showErrorBox(QWidget* parent, const QString& title, const QString& message);

} // namespace qs
