#pragma once

namespace qs {

struct LayerPlan;

// Fills what a plan's report says of the plan itself (name, kind, block, shape, scheme, note):
// the weight pass does it for every block it quantizes, and a resumed run for the blocks it
// restores (ResumeState.h), so both give the same report.
void fillReportHeader(LayerPlan& plan);

} // namespace qs
