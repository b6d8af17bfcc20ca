// The HF <-> GGUF tensor-name table (io/GgufTensorNames.h), which the GGUF exporter and the GGUF
// reader's conversion read in opposite directions: every name goes there and back unchanged, and
// names outside the Llama layout have none.
#include "TestMain.h"
#include "io/GgufArchitecture.h"
#include "io/GgufTensorNames.h"

#include <QtTest>

#include <string>

class TestGgufTensorNames : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void bothDirections_data() {
        QTest::addColumn<QString>("hf");
        QTest::addColumn<QString>("gguf");
        QTest::newRow("embed") << "model.embed_tokens.weight"
                               << "token_embd.weight";
        QTest::newRow("norm") << "model.norm.weight"
                              << "output_norm.weight";
        QTest::newRow("head") << "lm_head.weight"
                              << "output.weight";
        QTest::newRow("q") << "model.layers.0.self_attn.q_proj.weight"
                           << "blk.0.attn_q.weight";
        QTest::newRow("q bias") << "model.layers.7.self_attn.q_proj.bias"
                                << "blk.7.attn_q.bias";
        QTest::newRow("k") << "model.layers.1.self_attn.k_proj.weight"
                           << "blk.1.attn_k.weight";
        QTest::newRow("v") << "model.layers.1.self_attn.v_proj.weight"
                           << "blk.1.attn_v.weight";
        QTest::newRow("o") << "model.layers.12.self_attn.o_proj.weight"
                           << "blk.12.attn_output.weight";
        QTest::newRow("gate") << "model.layers.2.mlp.gate_proj.weight"
                              << "blk.2.ffn_gate.weight";
        QTest::newRow("up") << "model.layers.2.mlp.up_proj.weight"
                            << "blk.2.ffn_up.weight";
        QTest::newRow("down") << "model.layers.2.mlp.down_proj.weight"
                              << "blk.2.ffn_down.weight";
        QTest::newRow("attn norm") << "model.layers.3.input_layernorm.weight"
                                   << "blk.3.attn_norm.weight";
        QTest::newRow("ffn norm") << "model.layers.3.post_attention_layernorm.weight"
                                  << "blk.3.ffn_norm.weight";
    }

    void bothDirections() {
        QFETCH(QString, hf);
        QFETCH(QString, gguf);
        QCOMPARE(QString::fromStdString(qs::ggufNameOfHfTensor(hf.toStdString())), gguf);
        QCOMPARE(QString::fromStdString(qs::hfNameOfGgufTensor(gguf.toStdString())), hf);
    }

    void namesOutsideTheLayout() {
        QVERIFY(qs::ggufNameOfHfTensor("model.layers.0.self_attn.rotary_emb.inv_freq").empty());
        QVERIFY(qs::ggufNameOfHfTensor("model.layers.0.mlp.experts.0.w1.weight").empty());
        QVERIFY(qs::ggufNameOfHfTensor("token_embd.weight").empty());
        QVERIFY(qs::hfNameOfGgufTensor("blk.0.attn_qkv.weight").empty());
        QVERIFY(qs::hfNameOfGgufTensor("blk.1234567.attn_q.weight").empty()); // > 6 digits
        QVERIFY(qs::hfNameOfGgufTensor("model.embed_tokens.weight").empty());
        QVERIFY(qs::hfNameOfGgufTensor("rope_freqs.weight").empty());
        // the llama row has no experts and no MoE tensors
        QVERIFY(qs::hfNameOfGgufTensor("blk.0.ffn_gate_exps.weight").empty());
        QVERIFY(qs::ggufNameOfHfTensor("model.layers.0.mlp.gate.weight").empty());
    }

    // The qwen2moe row (io/GgufArchitecture.h): router and shared expert by name, the experts
    // of a block stacked into one tensor per projection, each expert's name going there (with
    // its index) and back.
    void qwen2moeBothDirections() {
        const qs::GgufArchitecture* a = qs::findGgufArchitecture("qwen2moe");
        QVERIFY(a);
        const std::vector<std::pair<std::string, std::string>> pairs = {
            {"model.layers.2.self_attn.q_proj.bias", "blk.2.attn_q.bias"},
            {"model.layers.2.mlp.gate.weight", "blk.2.ffn_gate_inp.weight"},
            {"model.layers.2.mlp.shared_expert_gate.weight", "blk.2.ffn_gate_inp_shexp.weight"},
            {"model.layers.2.mlp.shared_expert.up_proj.weight", "blk.2.ffn_up_shexp.weight"},
            {"model.layers.2.mlp.shared_expert.down_proj.weight", "blk.2.ffn_down_shexp.weight"},
            {"lm_head.weight", "output.weight"}};
        for (const auto& [hf, gguf] : pairs) {
            QCOMPARE(qs::ggufNameOf(*a, hf).name, gguf);
            QCOMPARE(qs::ggufNameOf(*a, hf).expert, -1);
            QCOMPARE(qs::hfNameOf(*a, gguf), hf);
            QVERIFY(!qs::ggufIsStacked(*a, gguf));
        }
        const qs::GgufTensorName e =
            qs::ggufNameOf(*a, "model.layers.1.mlp.experts.17.down_proj.weight");
        QCOMPARE(e.name, std::string("blk.1.ffn_down_exps.weight"));
        QCOMPARE(e.expert, 17);
        QVERIFY(qs::ggufIsStacked(*a, e.name));
        QCOMPARE(qs::hfNameOf(*a, e.name, 17),
                 std::string("model.layers.1.mlp.experts.17.down_proj.weight"));
        QVERIFY(qs::hfNameOf(*a, e.name).empty()); // a stacked tensor has no single name
        QVERIFY(qs::ggufKeptF32(*a, "blk.0.ffn_gate_inp.weight"));
        QVERIFY(qs::ggufKeptF32(*a, "blk.0.ffn_gate_inp_shexp.weight"));
        QVERIFY(!qs::ggufKeptF32(*a, "blk.0.ffn_gate_shexp.weight"));
        // no dense MLP in qwen2moe
        QVERIFY(qs::ggufNameOf(*a, "model.layers.1.mlp.gate_proj.weight").name.empty());
    }
};

QS_TEST_GUILESS_MAIN(TestGgufTensorNames)
#include "tst_gguftensornames.moc"
