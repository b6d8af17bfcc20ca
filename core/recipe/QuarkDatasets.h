// The dataset names Quark's LLM PTQ command lines take for --dataset and --evaluation_dataset
// (quark/torch/utils/llm/data_preparation.py and torch_llm_ptq.py, Quark 0.13): each is a
// download from the Hugging Face Hub. Quantscope reads local text files only; a flag or field
// that names one of these is refused before any work, saying what it downloads and how to pass
// a local file instead. Torch-free.
#pragma once

#include <string>
#include <vector>

namespace qs {

struct QuarkDataset {
    std::string name;      // as Quark's flag takes it: "pileval_for_awq_benchmark"
    std::string downloads; // what Quark fetches: "mit-han-lab/pile-val-backup (validation split)"
};

// Every name, calibration and evaluation.
const std::vector<QuarkDataset>& quarkDatasets();

// Throws qs::Error(source, field, ...) when `value` is one of Quark's dataset names (or names a
// Hub dataset such as "HuggingFaceH4/ultrachat_200k") and no local file of that name exists.
void rejectQuarkDatasetName(const std::string& value, const std::string& source,
                            const std::string& field);

} // namespace qs
