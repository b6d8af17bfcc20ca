#include "io/GgufTensorNames.h"

#include "io/GgufArchitecture.h"

namespace qs {

std::string ggufNameOfHfTensor(const std::string& n) {
    return ggufNameOf(ggufLlamaArchitecture(), n).name;
}

std::string hfNameOfGgufTensor(const std::string& n) {
    return hfNameOf(ggufLlamaArchitecture(), n);
}

} // namespace qs
