// The traits table, QuantSpec validation/JSON and the Quark scheme registry. Expected values
// are Quark's definitions (quark/torch/quantization/config/{config,template}.py) and the OCP
// specs, written out here by hand.
#include "TestMain.h"
#include "quant/QuantScheme.h"
#include "quant/QuantSpec.h"
#include "quant/SchemeRegistry.h"
#include "quant/TypeTraits.h"
#include "util/Error.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <set>

using namespace qs::quant;
using nlohmann::json;

namespace {

// Runs f, expects a qs::Error whose field() is `field`; returns its message.
template <typename F> std::string expectError(F&& f, const std::string& field) {
    try {
        f();
    } catch (const qs::Error& e) {
        if (e.field() != field)
            qWarning("error field '%s' (expected '%s'): %s", e.field().c_str(), field.c_str(),
                     e.what());
        return e.field() == field ? std::string(e.what()) : std::string();
    }
    return {};
}

} // namespace

class TestQuantSpec : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void traitsTableIsComplete() {
        const std::vector<std::string> expected = {
            "int2",       "int3",       "int4",       "uint4",      "int8",   "uint8",
            "fp8_e4m3",   "fp8_e5m2",   "fp6_e3m2",   "fp6_e2m3",   "fp4",    "mxfp4",
            "mxfp6_e3m2", "mxfp6_e2m3", "mxfp8_e4m3", "mxfp8_e5m2", "mxint8", "nvfp4",
            "mx6",        "bfp16",      "bf16",       "fp16"};
        QCOMPARE(dataTypeNames(), expected);
        std::set<int> seen;
        for (const auto& t : allTypeTraits()) {
            QVERIFY(seen.insert(static_cast<int>(t.type)).second);
            QCOMPARE(dataTypeFromName(t.name), std::optional<DataType>(t.type));
            QCOMPARE(&traits(t.type), &t);
            QVERIFY(t.granularities != 0);
            QVERIFY(t.scaleTypes != 0);
            // The defaults of every row must pass the row's own validation.
            QuantSpec::defaults(t.type).validate();
        }
        QCOMPARE(dataTypeFromName("fp4_e2m1"), std::optional<DataType>(DataType::Fp4));
        QCOMPARE(dataTypeFromName("bfloat16"), std::optional<DataType>(DataType::BFloat16));
        QVERIFY(!dataTypeFromName("int5"));
    }

    void traitsValuesFollowQuarkAndOcp() {
        // calculate_qmin_qmax in quark/torch/quantization/utils.py.
        QCOMPARE(traits(DataType::Int2).qmin, -2.0);
        QCOMPARE(traits(DataType::Int2).qmax, 1.0);
        QCOMPARE(traits(DataType::Int3).qmin, -4.0);
        QCOMPARE(traits(DataType::Int4).qmin, -8.0);
        QCOMPARE(traits(DataType::Int4).qmax, 7.0);
        QCOMPARE(traits(DataType::Uint4).qmax, 15.0);
        QCOMPARE(traits(DataType::Int8).qmin, -128.0);
        QCOMPARE(traits(DataType::Uint8).qmax, 255.0);
        // OCP FP8 / MX v1.0 maxima.
        QCOMPARE(traits(DataType::Fp8E4M3).floatMax, 448.0);
        QCOMPARE(traits(DataType::Fp8E5M2).floatMax, 57344.0);
        QCOMPARE(traits(DataType::Fp6E3M2).floatMax, 28.0);
        QCOMPARE(traits(DataType::Fp6E2M3).floatMax, 7.5);
        QCOMPARE(traits(DataType::Fp4).floatMax, 6.0);
        // get_dtype_params emax used for the E8M0 shared exponent.
        QCOMPARE(traits(DataType::Fp4).emax, 2);
        QCOMPARE(traits(DataType::Fp6E3M2).emax, 4);
        QCOMPARE(traits(DataType::Fp6E2M3).emax, 2);
        QCOMPARE(traits(DataType::Fp8E4M3).emax, 8);
        QCOMPARE(traits(DataType::Fp8E5M2).emax, 15);
        for (DataType mx : {DataType::MxFp4, DataType::MxFp6E3M2, DataType::MxFp6E2M3,
                            DataType::MxFp8E4M3, DataType::MxFp8E5M2, DataType::MxInt8}) {
            QCOMPARE(traits(mx).blockSize, 32);
            QCOMPARE(traits(mx).encoding, Encoding::Mx);
            QCOMPARE(traits(mx).scaleTypes, bit(ScaleType::E8M0));
        }
        QCOMPARE(traits(DataType::MxInt8).qmax, 127.0);
        QCOMPARE(traits(DataType::MxInt8).qmin, -127.0);
        QCOMPARE(traits(DataType::NvFp4).blockSize, 16);
        QCOMPARE(traits(DataType::NvFp4).element, DataType::Fp4);
        QCOMPARE(traits(DataType::Bfp16).blockSize, 8);
        QCOMPARE(traits(DataType::BFloat16).encoding, Encoding::PassThrough);
    }

    void helpTextListsEveryType() {
        const std::string help = typeHelpText();
        for (const auto& name : dataTypeNames())
            QVERIFY2(help.find("\n" + name + " ") != std::string::npos, name.c_str());
        QVERIFY(help.find("+-448") != std::string::npos);
        QVERIFY(help.find("[-8, 7]") != std::string::npos);
    }

    void validationNamesTheField() {
        QuantSpec s = QuantSpec::defaults(DataType::Int4);
        s.granularity = Granularity::PerGroup;
        s.chAxis = -1;
        s.groupSize = 0;
        QVERIFY(!expectError([&] { s.validate(); }, "group_size").empty());

        s = QuantSpec::defaults(DataType::MxFp4);
        s.groupSize = 16;
        const std::string msg = expectError([&] { s.validate("recipe.json"); }, "group_size");
        QVERIFY(msg.find("recipe.json") != std::string::npos);
        QVERIFY(msg.find("32") != std::string::npos);

        s = QuantSpec::defaults(DataType::Fp4);
        s.granularity = Granularity::PerTensor;
        s.groupSize = 0;
        QVERIFY(!expectError([&] { s.validate(); }, "qscheme").empty());

        s = QuantSpec::defaults(DataType::Fp8E4M3);
        s.symmetric = false;
        QVERIFY(!expectError([&] { s.validate(); }, "symmetric").empty());

        s = QuantSpec::defaults(DataType::Int4);
        s.scaleType = ScaleType::Pow2;
        QVERIFY(!expectError([&] { s.validate(); }, "scale_type").empty());
        s = QuantSpec::defaults(DataType::Int8);
        s.scaleType = ScaleType::Pow2;
        s.validate(); // int8 per tensor pow2 exists (PerTensorPowOf2MinMaxObserver)
        s.granularity = Granularity::PerGroup;
        s.groupSize = 32;
        QVERIFY(!expectError([&] { s.validate(); }, "scale_type").empty());

        s = QuantSpec::defaults(DataType::Int8);
        s.granularity = Granularity::PerToken;
        QVERIFY(!expectError([&] { s.validate(); }, "is_dynamic").empty());

        s = QuantSpec::defaults(DataType::Int8);
        s.granularity = Granularity::PerChannel;
        s.observer = ObserverKind::Percentile;
        QVERIFY(!expectError([&] { s.validate(); }, "observer_cls").empty());
        s = QuantSpec::defaults(DataType::Fp4);
        s.observer = ObserverKind::Mse;
        QVERIFY(!expectError([&] { s.validate(); }, "observer_cls").empty());

        s = QuantSpec::defaults(DataType::Int8);
        s.groupSize = 64; // per_tensor with a group size
        QVERIFY(!expectError([&] { s.validate(); }, "group_size").empty());

        s = QuantSpec::defaults(DataType::Int8);
        s.granularity = Granularity::PerChannel;
        s.chAxis = 99;
        QVERIFY(!expectError([&] { s.validate(); }, "ch_axis").empty());
    }

    void jsonRoundTripsEveryType() {
        for (const auto& t : allTypeTraits()) {
            const QuantSpec s = QuantSpec::defaults(t.type);
            const json j = s.toJson();
            const QuantSpec back = QuantSpec::fromJson(j);
            QVERIFY2(back == s, (t.name + std::string(" ") + j.dump()).c_str());
        }
        // A few non-default combinations.
        QuantSpec s = QuantSpec::defaults(DataType::Uint4);
        s.granularity = Granularity::PerGroup;
        s.chAxis = -1;
        s.groupSize = 64;
        s.symmetric = false;
        s.scaleType = ScaleType::Float32;
        QCOMPARE(QuantSpec::fromJson(s.toJson()), s);
        s = QuantSpec::defaults(DataType::Fp4);
        s.groupSize = 16;
        s.scaleType = ScaleType::E8M0;
        QCOMPARE(QuantSpec::fromJson(s.toJson()), s);
        s = QuantSpec::defaults(DataType::Int8);
        s.observer = ObserverKind::Mse;
        QCOMPARE(QuantSpec::fromJson(s.toJson()), s);
    }

    void jsonUsesQuarkKeys() {
        QuantSpec s = QuantSpec::defaults(DataType::Int4);
        s.granularity = Granularity::PerGroup;
        s.chAxis = -1;
        s.groupSize = 128;
        const json j = s.toJson();
        QCOMPARE(j["dtype"], json("int4"));
        QCOMPARE(j["qscheme"], json("per_group"));
        QCOMPARE(j["ch_axis"], json(-1));
        QCOMPARE(j["group_size"], json(128));
        QCOMPARE(j["symmetric"], json(true));
        QCOMPARE(j["is_dynamic"], json(false));
        QCOMPARE(j["round_method"], json("half_even"));
        QCOMPARE(j["scale_type"], json("float"));
        QCOMPARE(j["observer_cls"], json("PerGroupMinMaxObserver"));

        const json mx = QuantSpec::defaults(DataType::MxFp4).toJson();
        QCOMPARE(mx["dtype"], json("fp4"));
        QCOMPARE(mx["scale_format"], json("e8m0"));
        QCOMPARE(mx["scale_calculation_mode"], json("even"));
        QCOMPARE(mx["group_size"], json(32));
        QCOMPARE(mx["observer_cls"], json("PerBlockMXObserver"));

        const json nv = QuantSpec::defaults(DataType::NvFp4).toJson();
        QVERIFY(nv.is_array());
        QCOMPARE(nv.size(), size_t(2));
        QCOMPARE(nv[0]["group_size"], json(16));
        QCOMPARE(nv[1]["dtype"], json("fp8_e4m3"));
        QCOMPARE(nv[1]["is_scale_quant"], json(true));

        const json mxint8 = QuantSpec::defaults(DataType::MxInt8).toJson();
        QCOMPARE(mxint8["dtype"], json("mx"));
        QCOMPARE(mxint8["mx_element_dtype"], json("int8"));
    }

    void jsonReadsQuarkDicts() {
        // Shapes of QTensorConfig.to_dict() as Quark writes them into config.json.
        const json uint4 = json::parse(R"({"dtype": "uint4", "is_dynamic": false,
            "qscheme": "per_group", "ch_axis": 1, "group_size": 128, "block_size": null,
            "symmetric": false, "round_method": "half_even", "scale_type": "float",
            "scale_format": null, "scale_calculation_mode": null, "mx_element_dtype": null,
            "observer_cls": "PerGroupMinMaxObserver", "is_scale_quant": false,
            "enable_buffer_reuse": false, "max_input_numel": 4194304})");
        const QuantSpec u = QuantSpec::fromJson(uint4);
        QCOMPARE(u.dtype, DataType::Uint4);
        QCOMPARE(u.granularity, Granularity::PerGroup);
        QCOMPARE(u.groupSize, 128);
        QCOMPARE(u.chAxis, 1);
        QVERIFY(!u.symmetric);

        const json mxfp4 = json::parse(R"({"dtype": "fp4", "is_dynamic": true,
            "qscheme": "per_group", "ch_axis": -1, "group_size": 32, "symmetric": null,
            "round_method": "half_even", "scale_type": "float", "scale_format": "e8m0",
            "scale_calculation_mode": "even", "mx_element_dtype": null,
            "observer_cls": "PerBlockMXObserver", "is_scale_quant": false})");
        const QuantSpec m = QuantSpec::fromJson(mxfp4, TensorRole::Input);
        QCOMPARE(m.dtype, DataType::MxFp4);
        QVERIFY(m.isDynamic);

        const json ptpcInput = json::parse(R"({"dtype": "fp8_e4m3", "is_dynamic": true,
            "qscheme": "per_channel", "ch_axis": 1, "group_size": null, "symmetric": true,
            "round_method": "half_even", "scale_type": "float",
            "observer_cls": "PerChannelMinMaxObserver"})");
        QCOMPARE(QuantSpec::fromJson(ptpcInput, TensorRole::Input).granularity,
                 Granularity::PerToken);
        QCOMPARE(QuantSpec::fromJson(ptpcInput, TensorRole::Weight).granularity,
                 Granularity::PerChannel);

        // A ch_axis beside per_tensor means nothing to Quark; it must not make the spec differ
        // from the same scheme without it (fuzz_quark_config's finding: the recipe round trip,
        // which writes no axis for per_tensor, changed the spec).
        const json perTensorWithAxis = json::parse(R"({"dtype": "fp8_e4m3", "qscheme":
            "per_tensor", "ch_axis": 7111, "group_size": null, "is_dynamic": false})");
        const QuantSpec pt = QuantSpec::fromJson(perTensorWithAxis, TensorRole::Output);
        QCOMPARE(pt, QuantSpec::defaults(DataType::Fp8E4M3));
        QCOMPARE(QuantSpec::fromJson(pt.toJson(), TensorRole::Output), pt);

        // Strictness: each bad value names its key.
        json bad = uint4;
        bad["dtype"] = "int5";
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "dtype").empty());
        bad = uint4;
        bad["round_method"] = "floor";
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "round_method").empty());
        bad = uint4;
        bad["group_size"] = "128";
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "group_size").empty());
        bad = uint4;
        bad["symmetric"] = 1;
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "symmetric").empty());
        bad = uint4;
        bad["qscheme"] = "per_row";
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "qscheme").empty());
        bad = uint4;
        bad["scale_type"] = "float64";
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "scale_type").empty());
        bad = uint4;
        bad["observer_cls"] = "PerTensorHistogramObserverPro";
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "observer_cls").empty());
        bad = uint4;
        bad["groupsize"] = 128;
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "groupsize").empty());
        bad = uint4;
        bad["is_dynamic"] = "no";
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "is_dynamic").empty());
        bad = uint4;
        bad["group_size"] = 100; // 256-wide rows are fine later; the value itself must be > 0
        QVERIFY(QuantSpec::fromJson(bad).groupSize == 100);
        bad["group_size"] = -1;
        QVERIFY(!expectError([&] { QuantSpec::fromJson(bad); }, "group_size").empty());
    }

    void everySchemeResolves() {
        for (const SchemeName& n : schemeNames()) {
            const QuantScheme s = resolveScheme(n.name);
            QCOMPARE(s.name, n.name);
            s.validate();
            // Schemes survive the Quark layer-config form.
            const QuantScheme back = QuantScheme::fromQuarkLayerConfig(s.toQuarkLayerConfig());
            QVERIFY2(back == s, n.name.c_str());
        }
        for (const char* required : {"int4_wo_32",
                                     "int4_wo_64",
                                     "int4_wo_128",
                                     "uint4_wo_32",
                                     "uint4_wo_64",
                                     "uint4_wo_128",
                                     "int4_wo_per_channel",
                                     "uint4_wo_per_channel",
                                     "int8",
                                     "fp8",
                                     "ptpc_fp8",
                                     "mxfp4",
                                     "mxfp4_weight_only",
                                     "mxfp6_e3m2",
                                     "mxfp6_e2m3",
                                     "mxfp4_fp8",
                                     "nvfp4",
                                     "bfp16",
                                     "mx6",
                                     "int4_fp8",
                                     "w_int4_per_group_sym",
                                     "w_uint4_per_group_asym",
                                     "w_int8_a_int8_per_tensor_sym",
                                     "w_fp8_a_fp8",
                                     "w_mxfp4_a_mxfp4",
                                     "w_mxfp4_a_fp8"})
            QCOMPARE(resolveScheme(required).name, std::string(required));
    }

    void schemeDefinitionsMatchQuark() {
        QuantScheme s = resolveScheme("int4_wo_128");
        QCOMPARE(s.weight.dtype, DataType::Int4);
        QCOMPARE(s.weight.granularity, Granularity::PerGroup);
        QCOMPARE(s.weight.groupSize, 128);
        QCOMPARE(s.weight.chAxis, -1);
        QVERIFY(s.weight.symmetric);
        QVERIFY(!s.weight.isDynamic);
        QVERIFY(!s.input && !s.output);

        s = resolveScheme("uint4_wo_64");
        QVERIFY(!s.weight.symmetric); // Uint4PerGroupSpec defaults to asymmetric
        QCOMPARE(s.weight.groupSize, 64);
        s = resolveScheme("uint4_wo_per_channel");
        QCOMPARE(s.weight.granularity, Granularity::PerChannel);
        QCOMPARE(s.weight.chAxis, 0);
        QVERIFY(!s.weight.symmetric);
        s = resolveScheme("int4_wo_per_channel");
        QVERIFY(s.weight.symmetric);

        s = resolveScheme("int8");
        QVERIFY(s.input.has_value());
        QCOMPARE(s.input->dtype, DataType::Int8);
        QCOMPARE(s.input->granularity, Granularity::PerTensor);
        QVERIFY(!s.input->isDynamic); // static activations
        QVERIFY(s.input->symmetric);

        s = resolveScheme("fp8");
        QCOMPARE(s.weight.dtype, DataType::Fp8E4M3);
        QCOMPARE(s.input->dtype, DataType::Fp8E4M3);
        QVERIFY(!s.input->isDynamic);

        s = resolveScheme("ptpc_fp8");
        QCOMPARE(s.weight.granularity, Granularity::PerChannel);
        QCOMPARE(s.weight.chAxis, 0);
        QCOMPARE(s.input->granularity, Granularity::PerToken);
        QVERIFY(s.input->isDynamic);

        s = resolveScheme("mxfp4");
        QCOMPARE(s.weight.dtype, DataType::MxFp4);
        QVERIFY(!s.weight.isDynamic);
        QVERIFY(s.input->isDynamic);
        QVERIFY(!resolveScheme("mxfp4_weight_only").input);

        s = resolveScheme("mxfp4_fp8");
        QCOMPARE(s.input->dtype, DataType::Fp8E4M3);
        QVERIFY(!s.input->isDynamic);

        s = resolveScheme("int4_fp8");
        QVERIFY(s.weightPreStage.has_value());
        QCOMPARE(s.weightPreStage->dtype, DataType::Fp8E4M3);
        QCOMPARE(s.weight.dtype, DataType::Int4);
        QCOMPARE(s.weight.granularity, Granularity::PerChannel);
        QCOMPARE(s.weight.scaleType, ScaleType::Float32);
        QVERIFY(s.input->isDynamic);
        const json layer = s.toQuarkLayerConfig();
        QVERIFY(layer["weight"].is_array());
        QCOMPARE(layer["weight"][0]["dtype"], json("fp8_e4m3"));
        QCOMPARE(layer["weight"][1]["dtype"], json("int4"));

        s = resolveScheme("nvfp4");
        QCOMPARE(s.weight.dtype, DataType::NvFp4);
        QCOMPARE(s.weight.groupSize, 16);
        QVERIFY(s.input->isDynamic);

        QCOMPARE(resolveScheme("bfp16").weight.groupSize, 8);
        QCOMPARE(resolveScheme("mx6").weight.groupSize, 32);
    }

    void legacyNamesAreAliases() {
        QCOMPARE(resolveScheme("w_int8_a_int8_per_tensor_sym"), resolveScheme("int8"));
        QCOMPARE(resolveScheme("w_fp8_a_fp8"), resolveScheme("fp8"));
        QCOMPARE(resolveScheme("w_mxfp4_a_mxfp4"), resolveScheme("mxfp4"));
        QCOMPARE(resolveScheme("w_mxfp4_a_fp8"), resolveScheme("mxfp4_fp8"));
        QCOMPARE(resolveScheme("w_mx_fp4_a_mx_fp4_sym"), resolveScheme("mxfp4"));
        // Legacy per-group names take the old --group_size (default 128) and Quark's ch_axis=1.
        QuantScheme s = resolveScheme("w_int4_per_group_sym");
        QCOMPARE(s.weight.groupSize, 128);
        QCOMPARE(s.weight.chAxis, 1);
        QVERIFY(s.weight.symmetric);
        s = resolveScheme("w_uint4_per_group_asym", 32);
        QCOMPARE(s.weight.groupSize, 32);
        QVERIFY(!s.weight.symmetric);
        QCOMPARE(resolveScheme("w_mxfp4_a_mxfp4", 32), resolveScheme("mxfp4"));
        QVERIFY(!expectError([] { resolveScheme("int4_wo_128", 64); }, "group_size").empty());
        QVERIFY(!expectError([] { resolveScheme("w_mxfp4_a_mxfp4", 16); }, "group_size").empty());
        QVERIFY(resolveScheme("w_int8_a_int8_per_token_dynamic").input->granularity ==
                Granularity::PerToken);
        QCOMPARE(resolveScheme("w_int8_per_tensor_percentile").weight.observer,
                 ObserverKind::Percentile);
    }

    void unknownSchemeListsValidNames() {
        const std::string msg = expectError([] { resolveScheme("int4_wo_256"); }, "name");
        QVERIFY(!msg.empty());
        QVERIFY(msg.find("int4_wo_128") != std::string::npos);
        QVERIFY(msg.find("nvfp4") != std::string::npos);
        QVERIFY(msg.find("w_int4_per_group_sym") != std::string::npos);
        const std::string amd = expectError([] { resolveScheme("amdfp4"); }, "name");
        QVERIFY(amd.find("E5M3") != std::string::npos);
    }

    void layerConfigFromQuark() {
        // global_quant_config of a Quark int4_wo_128 + fp8 kv export, trimmed to what matters.
        const json layer = json::parse(R"({
            "weight": {"dtype": "int4", "is_dynamic": false, "qscheme": "per_group",
                       "ch_axis": -1, "group_size": 128, "symmetric": true,
                       "round_method": "half_even", "scale_type": "float",
                       "observer_cls": "PerGroupMinMaxObserver"},
            "input_tensors": null, "output_tensors": null, "bias": null, "target_device": null})");
        QCOMPARE(QuantScheme::fromQuarkLayerConfig(layer), resolveScheme("int4_wo_128"));
        json bad = layer;
        bad["bias"] = layer["weight"];
        QVERIFY(!expectError([&] { QuantScheme::fromQuarkLayerConfig(bad); }, "bias").empty());
    }
};

QS_TEST_APPLESS_MAIN(TestQuantSpec)
#include "tst_quant_spec.moc"
