#pragma once

#include "model/DecoderModel.h"

namespace qs {

// Meta's OPT decoder: learned positions (offset 2), LayerNorm, ReLU MLP (fc1/fc2), biases,
// optional project_in/out when word_embed_proj_dim differs from hidden_size.
class OptModel : public DecoderModel {
public:
    using DecoderModel::DecoderModel;

    at::Tensor embed(const at::Tensor& ids) override;
    std::unique_ptr<DecoderBlock> loadBlock(int index) override;
    at::Tensor logits(const at::Tensor& hidden) override;

private:
    at::Tensor m_embedding, m_positions, m_projectIn, m_projectOut;
    at::Tensor m_finalNormWeight, m_finalNormBias, m_head;
    bool m_headLoaded = false;
};

} // namespace qs
