#include "algo/ResidualRotation.h"

#include "model/ModelFamily.h"
#include "recipe/AlgorithmCatalog.h"
#include "util/Error.h"
#include "util/Join.h"
#include "util/Strings.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace qs::algo {

namespace {

// Why a family cannot be rotated by this transform; empty when it can. The rotation needs every
// norm of the residual stream to be a plain RMSNorm whose weight can be folded into linears that
// this transform knows by name.
std::string refusal(const ModelConfig& c) {
    const std::string family = "'" + c.modelType + "'";
    if (c.modelType == "opt" || c.layout.layerNorm)
        return family + " uses LayerNorm, whose mean subtraction and bias do not commute with a "
                        "rotation (they would first have to be folded into the preceding "
                        "linears, which is not implemented)";
    if (c.layout.normPlusOne || c.layout.sandwichNorms || c.layout.embedScale)
        return family + " uses Gemma's (1 + w) RMSNorm and norms on the sublayer outputs, "
                        "which this rotation does not fold";
    if (c.layout.fusedQkv || c.layout.fusedGateUp)
        return family + " has fused qkv_proj / gate_up_proj projections, which this rotation "
                        "does not address yet";
    if (c.moe.numExperts > 0)
        return family + " is a mixture of experts: the router and the experts are not rotated "
                        "yet";
    const ModelFamily* declared = findFamily(c.modelType);
    if (!declared || !declared->capabilities().rotation)
        return family + " is not among the families rotation supports (" +
               join(familiesWith(&FamilyCapabilities::rotation), ", ") + ")";
    return {};
}

// A checkpoint tensor in float32 on the compute device: exact for F32, F16 and BF16 storage
// (F64 storage stays float64), so folding and rotating start from the stored values.
at::Tensor loadExact(const Checkpoint& ckpt, const std::string& name, at::Device device) {
    const at::ScalarType t = ckpt.info(name).dtype == DType::F64 ? at::kDouble : at::kFloat;
    return loadTensor(ckpt, name, t, device);
}

// Rows per chunk of the float64 work: about 8M elements, so the temporaries of a 70B-sized
// linear stay in the tens of megabytes next to the weight itself.
int64_t chunkRows(int64_t n) {
    return std::max<int64_t>(1, (int64_t(8) << 20) / n);
}

} // namespace

RotationOptions rotationOptionsFromParams(const nlohmann::json& params, const std::string& source,
                                          const std::string& field) {
    // The catalog has validated names and types (AlgorithmCatalog.cpp); here: what runs.
    auto flag = [&](const char* key) {
        return algorithmParam("rotation", params, key).get<bool>();
    };
    if (!flag("r1"))
        throw Error(source, field + ".r1",
                    "rotation without r1 is not implemented (r2 and r4 run beside r1)");
    if (flag("r3"))
        throw Error(source, field + ".r3",
                    "r3 is not implemented (R1, the offline R2 and the online R4 run); set it to "
                    "false");
    if (flag("online_r1_rotation"))
        throw Error(source, field + ".online_r1_rotation",
                    "online R1 is not implemented (R1 is fused offline into the weights)");
    if (flag("trainable"))
        throw Error(source, field + ".trainable", "trainable rotations are not implemented");
    if (params.contains("online_config") && !params["online_config"].is_null())
        throw Error(source, field + ".online_config", "online rotations are not implemented");
    RotationOptions o;
    if (params.contains("rotation_size") && params["rotation_size"].is_number_integer())
        o.rotationSize = params["rotation_size"].get<int64_t>();
    o.randomR1 = flag("random_r1");
    o.r4 = flag("r4");
    o.r2 = flag("r2");
    o.randomR2 = flag("random_r2");
    if (o.randomR2 && !o.r2)
        throw Error(source, field + ".random_r2", "random_r2 needs r2");
    if (o.randomR1 && o.rotationSize > 0)
        throw Error(source, field + ".random_r1",
                    "random_r1 with a rotation_size is refused (as Quark refuses it)");
    return o;
}

ResidualRotation::ResidualRotation(const ModelConfig& config, const RotationOptions& options,
                                   const std::string& source)
    : m_config(config), m_rotation([&] {
          const std::string why = refusal(config);
          if (!why.empty())
              throw Error(source, "algorithms.rotation", "cannot rotate " + why);
          const int64_t n = config.hiddenSize;
          if (options.rotationSize > 0 && n % options.rotationSize != 0)
              throw Error(source, "algorithms.rotation.rotation_size",
                          std::to_string(options.rotationSize) +
                              " does not divide the hidden size " + std::to_string(n));
          return OrthogonalRotation(n, options.rotationSize, options.randomR1, options.seed);
      }()) {
    if (options.r4)
        m_r4 =
            std::make_shared<OrthogonalRotation>(config.intermediateSize, 0, false, options.seed);
    if (options.r2) {
        if (config.headDim <= 0 || config.numHeads * config.headDim <= 0)
            throw Error(source, "algorithms.rotation.r2", "the model has no head_dim");
        m_r2 =
            std::make_shared<OrthogonalRotation>(config.headDim, 0, options.randomR2, options.seed);
    }
}

// x with every head of its last dimension (heads of R2's size) times R2, or R2^T: float64.
at::Tensor ResidualRotation::perHead(const at::Tensor& x, bool transpose) const {
    const int64_t d = m_r2->size();
    if (x.size(-1) % d != 0)
        throw Error("rotation", "r2",
                    "a dimension of " + std::to_string(x.size(-1)) +
                        " is not a whole number of heads of " + std::to_string(d));
    std::vector<int64_t> heads = x.sizes().vec();
    heads.back() = x.size(-1) / d;
    heads.push_back(d);
    const at::Tensor h = x.reshape(heads);
    return (transpose ? m_r2->applyTranspose(h) : m_r2->apply(h)).reshape(x.sizes());
}

void ResidualRotation::prepareBlock(DecoderBlock& block) const {
    if (!m_r4)
        return;
    const std::shared_ptr<const OrthogonalRotation> r4 = m_r4;
    for (LinearLayer* l : block.linears())
        if (l->kind == "down_proj")
            l->onlineInput = [r4](const at::Tensor& x) { return r4->apply(x).to(x.scalar_type()); };
}

at::Tensor ResidualRotation::unrotatedInput(const std::string& layer, const at::Tensor& x,
                                            const Checkpoint& ckpt) const {
    const size_t dot = layer.rfind('.');
    const std::string kind = dot == std::string::npos ? layer : layer.substr(dot + 1);
    const size_t sub = layer.rfind('.', dot == std::string::npos || dot == 0 ? 0 : dot - 1);
    const std::string block = sub == std::string::npos ? "" : layer.substr(0, sub + 1);
    std::string norm;
    if (kind == "q_proj" || kind == "k_proj" || kind == "v_proj")
        norm = block + "input_layernorm.weight";
    else if (kind == "gate_proj" || kind == "up_proj")
        norm = block + "post_attention_layernorm.weight";
    if (!norm.empty())
        return m_rotation.applyTranspose(x) * loadExact(ckpt, norm, x.device()).to(at::kDouble);
    if (kind == "down_proj" && m_r4)
        return m_r4->applyTranspose(x);
    if (kind == "o_proj" && m_r2)
        return perHead(x, true);
    return x.to(at::kDouble);
}

std::string ResidualRotation::description() const {
    std::string d = "rotation r1 " + m_rotation.description();
    if (m_r2)
        d += ", r2 " + m_r2->description();
    if (m_r4)
        d += ", r4 " + m_r4->description();
    return d;
}

at::Tensor ResidualRotation::load(const std::string& name, const Checkpoint& ckpt,
                                  const ComputeOptions& compute) const {
    const auto opts = at::TensorOptions().dtype(compute.dtype).device(compute.device);
    // W diag(g) Q for a linear reading the stream through the norm with weight `norm` (none
    // for the embedding): rows are independent, so they are rotated a chunk at a time.
    auto rotateInputs = [&](const std::string& weight, const std::string& norm) {
        const at::Tensor w = loadExact(ckpt, weight, compute.device);
        const at::Tensor g =
            norm.empty() ? at::Tensor() : loadExact(ckpt, norm, compute.device).to(at::kDouble);
        at::Tensor out = at::empty(w.sizes(), opts);
        const int64_t step = chunkRows(w.size(1));
        for (int64_t r = 0; r < w.size(0); r += step) {
            const int64_t len = std::min(step, w.size(0) - r);
            at::Tensor c = w.narrow(0, r, len).to(at::kDouble);
            if (g.defined())
                c = c * g;
            out.narrow(0, r, len).copy_(m_rotation.apply(c));
        }
        return out;
    };
    // Q^T W for a linear writing the stream: its columns are independent, (Q^T W)^T = W^T Q.
    // `inputs` (R4) first rotates the rows, W R4, kept in float64 for the second rotation.
    auto rotateOutputs = [&](const std::string& weight,
                             const std::function<at::Tensor(const at::Tensor&)>& inputs) {
        at::Tensor w = loadExact(ckpt, weight, compute.device);
        if (inputs) {
            at::Tensor rotated = at::empty(w.sizes(), w.options().dtype(at::kDouble));
            const int64_t step = chunkRows(w.size(1));
            for (int64_t r = 0; r < w.size(0); r += step) {
                const int64_t len = std::min(step, w.size(0) - r);
                rotated.narrow(0, r, len).copy_(inputs(w.narrow(0, r, len)));
            }
            w = rotated;
        }
        at::Tensor out = at::empty(w.sizes(), opts);
        const int64_t step = chunkRows(w.size(0));
        for (int64_t c = 0; c < w.size(1); c += step) {
            const int64_t len = std::min(step, w.size(1) - c);
            out.narrow(1, c, len).copy_(m_rotation.apply(w.narrow(1, c, len).t()).t());
        }
        return out;
    };
    auto ones = [&]() { return at::ones(ckpt.info(name).shape, opts); };

    if (name == "model.embed_tokens.weight")
        return rotateInputs(name, "");
    if (name == "model.norm.weight")
        return ones();
    if (name == "lm_head.weight")
        return rotateInputs(ckpt.contains(name) ? name : "model.embed_tokens.weight",
                            "model.norm.weight");
    const std::string layers = "model.layers.";
    if (name.compare(0, layers.size(), layers) == 0) {
        const size_t dot = name.find('.', layers.size());
        const std::string prefix = name.substr(0, dot + 1); // "model.layers.3."
        const std::string sub = name.substr(dot + 1);
        if (sub == "input_layernorm.weight" || sub == "post_attention_layernorm.weight")
            return ones();
        if (m_r2 && sub == "self_attn.v_proj.weight") {
            // R2^T W diag(g) Q, all in float64 and rounded once: v_proj is small (kv heads x
            // head_dim rows), so it is rotated whole. R2^T on each head's rows is R2 on the
            // columns of W^T, a head at a time.
            const at::Tensor g =
                loadExact(ckpt, prefix + "input_layernorm.weight", compute.device).to(at::kDouble);
            const at::Tensor w =
                m_rotation.apply(loadExact(ckpt, name, compute.device).to(at::kDouble) * g);
            return perHead(w.t(), false).t().to(opts);
        }
        if (m_r2 && sub == "self_attn.v_proj.bias")
            return perHead(loadExact(ckpt, name, compute.device).to(at::kDouble), false).to(opts);
        if (sub == "self_attn.q_proj.weight" || sub == "self_attn.k_proj.weight" ||
            sub == "self_attn.v_proj.weight")
            return rotateInputs(name, prefix + "input_layernorm.weight");
        if (sub == "mlp.gate_proj.weight" || sub == "mlp.up_proj.weight")
            return rotateInputs(name, prefix + "post_attention_layernorm.weight");
        if (sub == "self_attn.o_proj.weight") // Q^T W (per head R2 with r2)
            return rotateOutputs(name,
                                 m_r2 ? [this](const at::Tensor& x) { return perHead(x, false); }
                                      : std::function<at::Tensor(const at::Tensor&)>());
        if (sub == "mlp.down_proj.weight") // Q^T W (R4 with r4)
            return rotateOutputs(name,
                                 m_r4 ? [r4 = m_r4](const at::Tensor& x) { return r4->apply(x); }
                                      : std::function<at::Tensor(const at::Tensor&)>());
        if (sub == "self_attn.o_proj.bias" || sub == "mlp.down_proj.bias")
            return m_rotation.apply(loadExact(ckpt, name, compute.device)).to(opts);
        if (endsWith(sub, "_proj.weight"))
            // A linear this transform does not know would silently break the model.
            throw Error(ckpt.fileOf(name).path(), name,
                        "rotation does not know whether this linear reads or writes the "
                        "residual stream");
    }
    return loadTensor(ckpt, name, compute.dtype, compute.device);
}

std::string ResidualRotation::notExportable() const {
    return m_r4 ? "r4 rotates down_proj's input online, at inference, which no export format "
                  "holds (export the recipe without r4, or evaluate and analyse this one)"
                : std::string();
}

} // namespace qs::algo
