#include "export/FakeQuantCheckpointWriter.h"
#include "export/FormatWriter.h"
#include "io/TensorDType.h"

#include "export/TensorBlocks.h"

#include "util/Error.h"
#include "util/HostTensor.h"

#include <algorithm>
#include <climits>
#include <map>

namespace qs {

namespace {

at::ScalarType scalarTypeOf(DType t, const std::string& name) {
    const std::optional<at::ScalarType> dense = denseScalarType(t);
    if (!dense || !at::isFloatingType(*dense))
        throw Error(name, "dtype", "cannot store fake-quantized values as " + dtypeName(t));
    return *dense;
}

} // namespace

FakeQuantCheckpointWriter::FakeQuantCheckpointWriter(const ExportContext& context)
    : m_source(*context.source), m_sourceDir(context.sourceDir), m_outDir(context.outDir),
      m_folder(context.outDir), m_headUntied(context.headUntied) {
    const Checkpoint& source = m_source;
    const std::string& sourceDir = m_sourceDir;
    const int numBlocks = context.numBlocks;
    std::vector<std::string> names = source.tensorNames();
    std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        const int ba = blockOfTensorName(a), bb = blockOfTensorName(b);
        return ba != bb ? ba < bb : a < b;
    });
    for (const std::string& n : names) {
        TensorInfo info = source.info(n);
        info.name = n;
        const int b = blockOfTensorName(n);
        if (b != -1 && b != INT_MAX && b >= numBlocks)
            throw Error(sourceDir, n, "belongs to a block beyond num_hidden_layers");
        m_layout.push_back(info);
        m_blockOf.push_back(b);
    }
    m_writer = std::make_unique<SafetensorsWriter>(
        m_folder.tempPath("model.safetensors"), m_layout,
        std::map<std::string, std::string>{{"format", "pt"}, {"quantscope", "fake-quantized"}});
}

FakeQuantCheckpointWriter::~FakeQuantCheckpointWriter() {
    m_writer.reset(); // removes its temporary file unless committed (then m_folder its folder)
}

void FakeQuantCheckpointWriter::copyRaw(const std::string& name) {
    const TensorInfo& info = m_source.info(name);
    m_writer->writeNext(m_source.fileOf(name).data(info), info.byteSize());
    m_source.fileOf(name).releasePages(info); // copied: its mapped pages need not stay resident
}

void FakeQuantCheckpointWriter::writeNextUntil(int blockLimit) {
    while (m_next < m_layout.size() && m_blockOf[m_next] < blockLimit) {
        copyRaw(m_layout[m_next].name);
        ++m_next;
    }
}

void FakeQuantCheckpointWriter::writeLeading() {
    writeNextUntil(0);
}

void FakeQuantCheckpointWriter::writeBlock(int index, DecoderBlock& block,
                                           const std::vector<LayerPlan>& plans) {
    writeNextUntil(index);
    const std::map<std::string, const at::Tensor*> weights = blockTensors(block, plans);
    // Experts stored fused: their tensors rebuilt from the experts' fake-quantized linears.
    const std::map<std::string, at::Tensor> fused = block.fusedTensors();
    while (m_next < m_layout.size() && m_blockOf[m_next] == index) {
        const TensorInfo& info = m_layout[m_next];
        auto it = weights.find(info.name);
        const auto f = fused.find(info.name);
        if (it == weights.end() && f == fused.end()) {
            copyRaw(info.name);
        } else {
            const at::Tensor& current = f != fused.end() ? f->second : *it->second;
            const at::Tensor t = toHost(current.to(scalarTypeOf(info.dtype, info.name)));
            if (uint64_t(t.nbytes()) != info.byteSize())
                throw Error(m_outDir, info.name, "quantized weight size differs from the source");
            m_writer->writeNext(t.data_ptr(), info.byteSize());
        }
        ++m_next;
    }
}

void FakeQuantCheckpointWriter::commit(const std::string& recipeJson) {
    while (m_next < m_layout.size()) { // tensors after the blocks
        copyRaw(m_layout[m_next].name);
        ++m_next;
    }
    m_writer->commit();
    m_folder.copySideFiles(m_sourceDir, true, m_headUntied);
    m_folder.commit(recipeJson);
}

} // namespace qs

namespace qs {

namespace {

// A fake-quantized export is a plain checkpoint folder.
std::string openFakeExport(const std::string& exportDir) {
    return exportDir;
}

} // namespace

// Float values: every recipe fits, so no problems check.
FormatWriter fakeFormatWriter() {
    FormatWriter w;
    w.format = {"fake",      "hf_fake",
                {"hf_fake"}, "fake-quantized Hugging Face checkpoint (float weights)",
                {},          true};
    w.create = [](const ExportContext& context) -> std::unique_ptr<Exporter> {
        return std::make_unique<FakeQuantCheckpointWriter>(context);
    };
    w.reader = openFakeExport;
    return w;
}

} // namespace qs
