// The bounds of a recipe's numeric fields, in one table: the recipe's validation checks them
// (Recipe::validate, the one place a bound is enforced, with one message), the CLI's flags and
// the GUI's spin boxes take their ranges from here. Torch-free.
#pragma once

#include <cstdint>
#include <string>

namespace qs {

struct FieldLimit {
    const char* field; // the recipe's JSON field, as errors name it
    int64_t min;
    int64_t max;
    // A value below `min` that still means something ("0 = all windows"); -1: none.
    int64_t special = -1;
    const char* specialMeaning = "";
    // Whether `value` is allowed (in range or the special value).
    bool allows(int64_t value) const {
        return (value >= min && value <= max) || (special >= 0 && value == special);
    }
    // "value 1 outside [2, 16777216] (0 = the model's context length)": what a refusal says.
    std::string refusal(int64_t value) const;
    // Throws qs::Error(source, field, refusal(value)) unless allows(value).
    void check(int64_t value, const std::string& source) const;
};

namespace limits {

// A window predicts its tokens 1..L-1 from the ones before: one token predicts nothing.
constexpr int64_t kMinWindowTokens = 2;
// 16M tokens: beyond any model's context; keeps window products far from int64 overflow.
constexpr int64_t kMaxWindowTokens = int64_t(1) << 24;

constexpr FieldLimit calibrationSamples{"calibration.num_samples", 1, 1000000000};
constexpr FieldLimit calibrationSeqLen{"calibration.seq_len", kMinWindowTokens, kMaxWindowTokens};
constexpr FieldLimit evaluationSeqLen{"evaluation.seq_len", kMinWindowTokens, kMaxWindowTokens, 0,
                                      "0 = the model's context length, at most 512"};
constexpr FieldLimit evaluationMaxWindows{"evaluation.max_windows", 1, int64_t(1) << 40, 0,
                                          "0 = all windows"};
// The group size of a scheme named with one ({"name": ..., "group_size": N}; Quark's
// --group_size): elements per group along the input dimension.
constexpr FieldLimit groupSize{"group_size", 1, int64_t(1) << 20};

} // namespace limits

} // namespace qs
