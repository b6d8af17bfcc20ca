#pragma once

#include "calib/LayerPlan.h"
#include "model/DecoderModel.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace qs {

// The streams of hidden states the pipeline carries from one block to the next
// (CalibrationPipeline.h): the reference and quantized calibration streams and the evaluation
// windows' stream, each undefined when the run does not need it.
struct ResumeStreams {
    at::Tensor reference;
    at::Tensor quantized;
    at::Tensor evaluation;
};

// What a killed run needs to continue after its last finished block, kept in one folder
// (docs/distributed.md, "Resume after a kill"):
//
//   state.json                 the key (what determines the result), the finished blocks,
//                              their times; written last, by rename, so it only ever names
//                              files that are complete
//   block-NNNNN.safetensors    a finished block as the exporters saw it: its linears' weights
//                              and biases, its norms, every plan's codes, scales, zero points
//                              and frozen activation parameters, the transforms' names
//   streams-NNNNN.safetensors  the streams at the block boundary NNNNN (the next block's inputs)
//
// Every file is written under a temporary name and renamed into place after an fsync, so a kill
// at any moment leaves either the previous state or the new one. A block's plans are what the
// planner makes of the freshly loaded block plus what is saved here, so the saved part is only
// what the passes computed.
class ResumeState {
public:
    // `dir`: the state's folder (created on the first save); `key`: one member per input that
    // decides the result (recipe, model files, data, threads, world size ...).
    ResumeState(std::string dir, nlohmann::ordered_json key);

    const std::string& dir() const { return m_dir; }
    // Reads state.json when there is one and returns how many blocks are finished (0: none, a
    // fresh run). Throws qs::Error naming state.json and the first key field that differs, with
    // both values, when the state is another run's; or naming the file and field that is
    // unreadable.
    int open();
    int finishedBlocks() const { return m_finished; }
    // The finished blocks' calibration and quantization times (seconds), in block order.
    const std::vector<double>& blockSeconds() const { return m_seconds; }

    // Puts finished block `index` back as it was when its exporters saw it: `block` freshly
    // loaded, `plans` freshly planned for it. Throws qs::Error naming the block file and the
    // tensor that is missing or has another shape.
    void restoreBlock(int index, DecoderBlock& block, std::vector<LayerPlan>& plans,
                      const at::Device& device) const;
    // The streams at the boundary after the last finished block, on `device`.
    ResumeStreams restoreStreams(const at::Device& device) const;

    // Records finished block `index` (`block` and `plans` as the exporters saw them unless
    // `withBlock` is false: a rank that writes no export keeps only its streams) and the
    // streams that enter the next block. The previous boundary's streams are kept until
    // dropOlderStreams(), so ranks that stopped one block apart can all go back to the earlier.
    void saveBlock(int index, DecoderBlock& block, const std::vector<LayerPlan>& plans,
                   const ResumeStreams& streams, double seconds, bool withBlock);
    // Removes streams files older than the last finished block's.
    void dropOlderStreams();
    // Continue from `finished` blocks rather than the saved count (a distributed run resumes
    // where every rank has state); its streams must still be there.
    void rewindTo(int finished);
    // Removes the folder (a run that committed its export needs it no more).
    void remove();

private:
    std::string path(const std::string& file) const { return m_dir + "/" + file; }
    void writeManifest() const;

    std::string m_dir;
    nlohmann::ordered_json m_key;
    int m_finished = 0;
    std::vector<double> m_seconds;
};

} // namespace qs
