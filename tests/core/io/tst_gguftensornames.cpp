// The HF <-> GGUF tensor-name table (io/GgufTensorNames.h), which the GGUF exporter and the GGUF
// reader's conversion read in opposite directions: every name goes there and back unchanged, and
// names outside the Llama layout have none.
#include "TestMain.h"
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
    }
};

QS_TEST_GUILESS_MAIN(TestGgufTensorNames)
#include "tst_gguftensornames.moc"
