#include "calib/PlanReport.h"

#include "calib/LayerPlan.h"

namespace qs {

void fillReportHeader(LayerPlan& p) {
    LayerReport& rep = p.report;
    rep.name = p.name;
    rep.kind = p.kind;
    rep.block = p.block;
    rep.shape = p.shape;
    rep.quantized = p.quantized();
    rep.note = p.note;
    rep.quantScheme = p.scheme;
    rep.scheme = p.scheme ? p.scheme->label() : std::string();
}

} // namespace qs
