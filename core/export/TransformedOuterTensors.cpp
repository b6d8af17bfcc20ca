#include "export/TransformedOuterTensors.h"

#include "export/TensorBlocks.h"
#include "io/Checkpoint.h"
#include "io/TensorDType.h"
#include "model/DecoderModel.h"

#include <ATen/ATen.h>

#include <climits>
#include <vector>

namespace qs {

bool writeTransformedOuterTensors(const DecoderModel& model, const Checkpoint& source,
                                  const std::string& path) {
    std::vector<TensorInfo> layout;
    for (const std::string& n : source.tensorNames()) {
        const int b = blockOfTensorName(n);
        if (b != -1 && b != INT_MAX)
            continue;
        TensorInfo t = source.info(n);
        if (!denseScalarType(t.dtype) || !at::isFloatingType(*denseScalarType(t.dtype)))
            continue; // integer buffers are not weights a transform changes
        t.name = n;
        layout.push_back(t);
    }
    const bool untie = model.config().tieWordEmbeddings && !source.contains("lm_head.weight");
    if (untie) {
        for (const std::string& n : source.tensorNames())
            if (n.size() >= 19 && n.compare(n.size() - 19, 19, "embed_tokens.weight") == 0) {
                TensorInfo head = source.info(n); // the tied head's shape and dtype
                head.name = "lm_head.weight";
                layout.push_back(head);
                break;
            }
    }
    SafetensorsWriter writer(path, layout, {{"format", "pt"}, {"quantscope", "transformed"}});
    for (const TensorInfo& t : layout) {
        const at::Tensor w = model.loadWeight(t.name)
                                 .to(at::Device(at::kCPU), *denseScalarType(t.dtype))
                                 .contiguous();
        writer.writeNext(w.data_ptr(), uint64_t(w.nbytes()));
    }
    writer.commit();
    return untie;
}

} // namespace qs
