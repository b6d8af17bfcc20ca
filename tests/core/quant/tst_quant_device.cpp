// One numeric definition per quantizer on every device: CUDA (the ATen path) and the CPU (fused
// kernels where they apply, ATen elsewhere) give bit-identical codes, scales, zero points and
// fake-quantized values for every registry scheme's weight, input and output spec, static and
// dynamic, on random and edge-case tensors. Where no GPU is visible the whole suite skips, saying
// why, and ctest shows it Skipped: every check here compares two devices. The CPU's own kernels
// are checked against the ATen reference path on the same tensors by tst_quant_fused, and
// against the formulas by tst_quant_int and tst_quant_float, in every build.
#include "QuantTestHelpers.h"
#include "TestDevice.h"
#include "TestMain.h"

#include "calib/ActivationQuantizer.h"
#include "calib/LayerPlan.h"
#include "quant/Observer.h"
#include "quant/Quantize.h"
#include "quant/SchemeRegistry.h"
#include "quant/TypeTraits.h"

#include <ATen/Parallel.h>

#include <QtTest>

#include <limits>

using namespace qs::quant;
using namespace qs::quant::test;

namespace {

at::Tensor edgeRows() {
    at::Tensor x = randomWeights({8, 128}, 7, 30);
    for (int i = 0; i < 128; ++i)
        x[0][i] = (float(i - 64) + 0.5f) / 16.0f; // ties on a 1/16 grid
    x[1].fill_(0.0f);
    x[2].fill_(-0.3f);
    for (int i = 0; i < 128; ++i)
        x[3][i] = float(i) * 1e-41f; // subnormals
    x[4][3] = 1e30f;
    x[4][4] = -1e30f;
    x[5][7] = std::numeric_limits<float>::quiet_NaN();
    x[6][9] = std::numeric_limits<float>::infinity();
    return x;
}

// Bit equality of two tensors on any devices (float: NaN equals NaN; integers: exact).
QString difference(const char* what, const at::Tensor& cpu, const at::Tensor& dev) {
    if (cpu.defined() != dev.defined())
        return QString("%1: defined on one device only").arg(what);
    if (!cpu.defined())
        return {};
    const at::Tensor d = dev.to(at::kCPU);
    if (cpu.sizes() != d.sizes() || cpu.scalar_type() != d.scalar_type())
        return QString("%1: shape or dtype differs").arg(what);
    if (at::isFloatingType(cpu.scalar_type())) {
        const int64_t i = firstDifference(cpu, d);
        if (i >= 0)
            return QString("%1: element %2 is %3 on the CPU, %4 on the device")
                .arg(what)
                .arg(i)
                .arg(double(values(cpu)[size_t(i)]), 0, 'g', 9)
                .arg(double(values(d)[size_t(i)]), 0, 'g', 9);
        return {};
    }
    return at::equal(cpu.contiguous(), d.contiguous()) ? QString() : QString("%1 differ").arg(what);
}

QString paramsDifference(const QuantParams& a, const QuantParams& b) {
    for (const QString& d :
         {difference("scale", a.scale, b.scale), difference("zero point", a.zeroPoint, b.zeroPoint),
          difference("global scale", a.globalScale, b.globalScale),
          difference("scale codes", a.scaleCodes, b.scaleCodes)})
        if (!d.isEmpty())
            return d;
    return {};
}

// MX6 and BFP16 are fake quantization only (quantize() refuses them, as Quark cannot export them).
bool hasCodes(const QuantSpec& spec) {
    const Kernel k = traits(spec.dtype).kernel;
    return k != Kernel::Mx6 && k != Kernel::Bfp16;
}

struct NamedSpec {
    std::string label;
    QuantSpec spec;
    bool isWeight;
};

std::vector<NamedSpec> registrySpecs() {
    std::vector<NamedSpec> out;
    for (const SchemeName& n : schemeNames()) {
        if (n.legacy)
            continue;
        const QuantScheme s = resolveScheme(n.name);
        out.push_back({n.name + " weight", s.weight, true});
        if (s.input)
            out.push_back({n.name + " input", *s.input, false});
        if (s.output)
            out.push_back({n.name + " output", *s.output, false});
    }
    return out;
}

} // namespace

class TestQuantDevice : public QObject {
    Q_OBJECT

    at::Device m_device = at::kCPU;

private Q_SLOTS:
    void initTestCase() {
        at::set_num_threads(2);
        std::string why;
        const auto device = qs::test::acceleratorUnderTest(&why);
        if (!device)
            QSKIP(why.c_str());
        m_device = *device;
    }

    // Dynamic quantization (statistics from the tensor itself): codes, every parameter and the
    // fake-quantized values, for weights ([out, in]) and activations ([batch, tokens, in]).
    void dynamicQuantizationAgrees() {
        int checked = 0;
        for (const NamedSpec& s : registrySpecs()) {
            for (const at::Tensor& base : {edgeRows(), randomWeights({32, 256}, 11, 20)}) {
                const at::Tensor x = s.isWeight ? base : base.reshape({2, -1, base.size(1)});
                const at::Tensor xd = x.to(m_device);
                QString d;
                if (hasCodes(s.spec)) {
                    const QuantizedTensor qc = quantize(x, s.spec);
                    const QuantizedTensor qd = quantize(xd, s.spec);
                    d = difference("codes", qc.codes, qd.codes);
                    if (d.isEmpty())
                        d = paramsDifference(qc.params, qd.params);
                }
                if (d.isEmpty())
                    d = difference("fake-quantized", fakeQuantize(x, s.spec),
                                   fakeQuantize(xd, s.spec));
                QVERIFY2(d.isEmpty(), qPrintable(QString::fromStdString(s.label) + ": " + d));
                ++checked;
            }
        }
        QVERIFY(checked >= 40);
    }

    // Static activation quantizers: observe calibration batches on each device, freeze, apply
    // to data that leaves the observed range. Parameters and outputs agree bit for bit.
    void staticActivationQuantizersAgree() {
        const at::Tensor calib1 = randomWeights({2, 16, 128}, 5, 12);
        const at::Tensor calib2 = randomWeights({3, 8, 128}, 6, 4) * 1.5;
        const at::Tensor x =
            at::cat({edgeRows().reshape({2, 4, 128}), randomWeights({2, 4, 128}, 9, 40)}, 0);
        int checked = 0;
        for (const NamedSpec& s : registrySpecs()) {
            if (s.isWeight)
                continue;
            qs::ActivationQuantizer qc("layer", s.spec), qd("layer", s.spec);
            if (qc.isStatic()) {
                qc.observe(calib1);
                qc.observe(calib2);
                qd.observe(calib1.to(m_device));
                qd.observe(calib2.to(m_device));
                qc.freeze();
                qd.freeze();
                const QString d = paramsDifference(qc.params(), qd.params());
                QVERIFY2(d.isEmpty(), qPrintable(QString::fromStdString(s.label) + ": " + d));
            }
            const QString d = difference("applied", qc.apply(x), qd.apply(x.to(m_device)));
            QVERIFY2(d.isEmpty(), qPrintable(QString::fromStdString(s.label) + ": " + d));
            ++checked;
        }
        QVERIFY(checked >= 10);
    }

    // The plan's weight pass: kept codes, scales, zero points and the forward's weight.
    void planWeightsAgree() {
        const at::Tensor w = randomWeights({64, 256}, 17, 25);
        int checked = 0;
        for (const SchemeName& n : schemeNames()) {
            if (n.legacy)
                continue;
            qs::LayerPlan pc, pd;
            pc.name = pd.name = "layer";
            pc.scheme = pd.scheme = resolveScheme(n.name);
            pc.quantizeWeight(w);
            pd.quantizeWeight(w.to(m_device));
            QString d = difference("dequantized", pc.weight.dequantized, pd.weight.dequantized);
            QVERIFY2(pc.weight.codes.has_value() == pd.weight.codes.has_value(), n.name.c_str());
            if (d.isEmpty() && pc.weight.codes) {
                d = difference("codes", pc.weight.codes->codes, pd.weight.codes->codes);
                if (d.isEmpty())
                    d = paramsDifference(pc.weight.codes->params, pd.weight.codes->params);
            }
            QVERIFY2(d.isEmpty(), qPrintable(QString::fromStdString(n.name) + ": " + d));
            ++checked;
        }
        QVERIFY(checked >= 20);
    }
};

QS_TEST_GUILESS_MAIN(TestQuantDevice)
#include "tst_quant_device.moc"
