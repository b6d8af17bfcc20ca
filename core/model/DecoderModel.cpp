#include "model/DecoderModel.h"
#include "io/TensorDType.h"

#include "util/Error.h"
#include "util/LargeTensor.h"

#include <c10/core/ScalarType.h>

#include <cstdint>

#include <limits>

namespace qs {

at::Tensor DecoderBlock::applyLinear(LinearLayer& layer, const at::Tensor& x,
                                     const ForwardContext& ctx) {
    return runLinear(layer, x, ctx);
}

at::Tensor runLinear(LinearLayer& layer, const at::Tensor& in, const ForwardContext& ctx) {
    const at::Tensor x = layer.onlineInput ? layer.onlineInput(in) : in;
    if (!ctx.hook)
        return at::linear(x, layer.weight, layer.bias);
    const at::Tensor input = ctx.hook->onInput(layer, x);
    return ctx.hook->onOutput(layer, input, at::linear(input, layer.weight, layer.bias));
}

DecoderModel::DecoderModel(ModelConfig config, std::shared_ptr<const Checkpoint> checkpoint,
                           ComputeOptions compute)
    : m_config(std::move(config)), m_checkpoint(std::move(checkpoint)), m_compute(compute) {}

ForwardContext DecoderModel::makeContext(int64_t seqLen) const {
    ForwardContext ctx;
    const auto opts = at::TensorOptions().dtype(m_compute.dtype).device(m_compute.device);
    at::Tensor mask = at::full({seqLen, seqLen}, -std::numeric_limits<float>::infinity(), opts);
    mask = at::triu(mask, 1);
    ctx.mask = mask;
    bool anySlides = false;
    for (int64_t i = 0; i < m_config.numLayers; ++i)
        anySlides = anySlides || m_config.slides(i);
    if (anySlides) {
        // Sliding window: token i sees j in (i - window, i], exactly `window` keys.
        const at::Tensor far =
            at::tril(at::ones({seqLen, seqLen}, opts.dtype(at::kBool)), -m_config.slidingWindow);
        ctx.slidingMask = mask.masked_fill(far, -std::numeric_limits<float>::infinity());
    }
    return ctx;
}

void DecoderModel::setWeightTransform(std::shared_ptr<const WeightTransform> transform) {
    m_weightTransform = std::move(transform);
}

std::unique_ptr<DecoderBlock> DecoderModel::finishBlock(std::unique_ptr<DecoderBlock> block) const {
    if (m_weightTransform)
        m_weightTransform->prepareBlock(*block);
    return block;
}

at::Tensor DecoderModel::loadWeight(const std::string& name) const {
    if (m_weightTransform)
        return m_weightTransform->load(name, *m_checkpoint, m_compute);
    return loadTensorShared(m_checkpoint, name, m_compute.dtype, m_compute.device);
}

at::Tensor DecoderModel::loadOptional(const std::string& name) const {
    return m_checkpoint->contains(name) ? loadWeight(name) : at::Tensor();
}

at::Tensor loadTensor(const Checkpoint& checkpoint, const std::string& name, at::ScalarType dtype,
                      at::Device device) {
    const TensorInfo& info = checkpoint.info(name);
    const SafetensorsFile& file = checkpoint.fileOf(name);
    const std::optional<at::ScalarType> dense = denseScalarType(info.dtype);
    if (!dense)
        throw Error(file.path(), name,
                    "dtype " + dtypeName(info.dtype) +
                        " cannot be loaded as a dense tensor (quantized storage)");
    const at::ScalarType stored = *dense;
    // The mapping is read-only; from_blob only wraps it and the copy below owns fresh memory.
    void* ptr = const_cast<uint8_t*>(file.data(info));
    const at::Tensor view = at::from_blob(ptr, info.shape, at::TensorOptions().dtype(stored));
    at::Tensor copy;
    if (device.is_cpu()) {
        // A fresh buffer on huge pages where the kernel gives them: a 1B-shaped checkpoint is
        // 4.4 GB of float32, a million first-touch faults with 4 KiB pages (util/LargeTensor.h).
        copy = emptyLargeCpu(info.shape, dtype);
        copy.copy_(view);
    } else {
        // Through pinned staging: the copy to the device then waits for nothing the device is
        // still running, so the next block loads while this one computes (DeviceRunAhead.h
        // bounds how far ahead). The staging buffer returns to LibTorch's caching host allocator,
        // which reuses it only once the copy that reads it has finished. The dtype is converted
        // here, on the host, as a copy from pageable memory would too.
        at::Tensor staged =
            at::empty(info.shape, at::TensorOptions().dtype(dtype).pinned_memory(true));
        staged.copy_(view);
        copy = staged.to(device, dtype, /*non_blocking=*/true, /*copy=*/true);
    }
    file.releasePages(info);
    return copy;
}

at::Tensor loadTensorShared(const std::shared_ptr<const Checkpoint>& checkpoint,
                            const std::string& name, at::ScalarType dtype, at::Device device) {
    const TensorInfo& info = checkpoint->info(name);
    const SafetensorsFile& file = checkpoint->fileOf(name);
    const std::optional<at::ScalarType> dense = denseScalarType(info.dtype);
    const uint8_t* bytes = file.data(info);
    const bool inPlace = device.is_cpu() && dense && *dense == dtype &&
                         reinterpret_cast<uintptr_t>(bytes) % c10::elementSize(dtype) == 0;
    if (!inPlace)
        return loadTensor(*checkpoint, name, dtype, device);
    // The deleter owns the checkpoint (and with it the mapping) for as long as the tensor lives.
    auto release = [checkpoint, file = &file, info = &info](void*) { file->releasePages(*info); };
    return at::from_blob(const_cast<uint8_t*>(bytes), info.shape, release,
                         at::TensorOptions().dtype(dtype));
}

} // namespace qs
