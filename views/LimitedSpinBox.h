#pragma once

#include "recipe/RecipeLimits.h"

#include <QString>

class QSpinBox;

namespace qs {

// Gives `box` the range of a recipe field (recipe/RecipeLimits.h, the bounds the recipe's
// validation checks): [min, max] clamped to what a QSpinBox holds, plus the field's special
// value (0 = "all", "model context") shown as `specialText`. Values between the special value
// and the minimum (an evaluation window of 1 token) are stepped over, so the box never offers a
// value the recipe would refuse.
void applyFieldLimit(QSpinBox* box, const FieldLimit& limit, const QString& specialText = {});

} // namespace qs
