#include "export/StoredTensor.h"

namespace qs {

std::string storedRoleName(StoredRole role) {
    switch (role) {
    case StoredRole::Codes:
        return "codes";
    case StoredRole::Scale:
        return "scale";
    case StoredRole::ZeroPoint:
        return "zero_point";
    case StoredRole::BlockScale:
        return "block_scale";
    case StoredRole::Blocks:
        return "blocks";
    case StoredRole::FloatWeight:
        return "float_weight";
    case StoredRole::ActivationScale:
        return "activation_scale";
    case StoredRole::Other:
        return "other";
    case StoredRole::Graph:
        return "graph";
    }
    return "other";
}

bool isWeightRole(StoredRole role) {
    return role == StoredRole::Codes || role == StoredRole::Scale ||
           role == StoredRole::ZeroPoint || role == StoredRole::BlockScale ||
           role == StoredRole::Blocks || role == StoredRole::FloatWeight;
}

} // namespace qs
