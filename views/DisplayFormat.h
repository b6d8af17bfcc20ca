#pragma once

#include <QString>

#include <cstdint>
#include <string>
#include <vector>

namespace qs::display {

// How numbers look everywhere in the GUI, so the tree, the summary and the eval panel agree.

// 1234567 → "1,234,567" with the current locale's group separator (always grouped, even in the
// C locale, which omits separators by default).
QString count(int64_t value);
// 1234567 → "1.23M", 260000 → "260K", 6738415616 → "6.74B"; below 1000 the plain number.
QString compactCount(int64_t value);
// {4096, 11008} → "[4096, 11008]"; an empty shape → "".
QString shape(const std::vector<int64_t>& dims);
// 1056768 → "1.01 MiB" (IEC units, as file managers on Linux show them).
QString bytes(uint64_t value);
// ("cpu", "bfloat16") → "cpu · bfloat16": where a result was computed; "" when neither is known.
QString compute(const std::string& device, const std::string& dtype);
// The first `maxLines` lines of a status message (a run's refusal can name 35 layers, one a
// line), "…" where more were cut: a word-wrapped status label grows with its text and would
// raise the minimum height of its dock, and with it the window's. The whole text goes in a
// tooltip.
QString statusLines(const QString& message, int maxLines = 3);

} // namespace qs::display
