#include "LimitedSpinBox.h"

#include <QSpinBox>

#include <algorithm>
#include <limits>

namespace qs {

void applyFieldLimit(QSpinBox* box, const FieldLimit& limit, const QString& specialText) {
    const int64_t intMax = std::numeric_limits<int>::max();
    const int max = int(std::min(limit.max, intMax));
    const bool special = limit.special >= 0;
    const int min = int(special ? std::min(limit.special, limit.min) : limit.min);
    box->setRange(min, max);
    if (special && !specialText.isEmpty() && limit.special == min)
        box->setSpecialValueText(specialText);
    if (!special || limit.min - limit.special <= 1)
        return;
    // A value in the gap comes from a step or a typed number: leave the gap in the direction
    // of the step (up from the special value: the minimum; down from the minimum: the special).
    QObject::connect(box, &QSpinBox::valueChanged, box, [box, limit](int v) {
        if (v > limit.special && v < limit.min) {
            const int previous = box->property("qsLastValue").toInt();
            box->setValue(previous >= limit.min ? int(limit.special) : int(limit.min));
            return;
        }
        box->setProperty("qsLastValue", v);
    });
}

} // namespace qs
