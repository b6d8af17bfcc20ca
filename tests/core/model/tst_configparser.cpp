// config.json parsing: every family's good config, and bad ones refused with a message naming the
// file, the field and the reason.
#include "model/ConfigParser.h"
#include "util/Error.h"

#include <QtTest>

using nlohmann::json;

class TestConfigParser : public QObject {
    Q_OBJECT

private:
    static json llama() {
        return {{"model_type", "llama"},
                {"architectures", {"LlamaForCausalLM"}},
                {"hidden_size", 64},
                {"intermediate_size", 172},
                {"num_hidden_layers", 5},
                {"num_attention_heads", 8},
                {"num_key_value_heads", 4},
                {"vocab_size", 512},
                {"max_position_embeddings", 512},
                {"rms_norm_eps", 1e-5},
                {"tie_word_embeddings", true},
                {"bos_token_id", 1},
                {"eos_token_id", 2}};
    }

private Q_SLOTS:
    void llamaConfig() {
        const qs::ModelConfig c = qs::parseModelConfig(llama().dump(), "config.json");
        QCOMPARE(c.modelType, std::string("llama"));
        QCOMPARE(c.headDim, int64_t(8)); // derived: hidden / heads
        QCOMPARE(c.numKvHeads, int64_t(4));
        QVERIFY(c.tieWordEmbeddings);
        QVERIFY(!c.ropeScaling);
        QCOMPARE(c.normEps, 1e-5);
    }

    void llama3RopeScaling() {
        json j = llama();
        j["rope_scaling"] = {{"rope_type", "llama3"},
                             {"factor", 8.0},
                             {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0},
                             {"original_max_position_embeddings", 8192}};
        j["eos_token_id"] = {128001, 128009}; // newer configs list several
        j["vocab_size"] = 128256;
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QVERIFY(c.ropeScaling);
        QCOMPARE(c.ropeScaling->type, std::string("llama3"));
        QCOMPARE(c.ropeScaling->factor, 8.0);
        QCOMPARE(c.eosTokenId, int64_t(128001));
    }

    void qwen2HasQkvBias() {
        json j = llama();
        j["model_type"] = "qwen2";
        j["sliding_window"] = 4096;
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QVERIFY(c.attentionBias);
        QVERIFY(!c.outputBias);
        QCOMPARE(c.slidingWindow, int64_t(0)); // use_sliding_window is off
    }

    void mistralSlidingWindow() {
        json j = llama();
        j["model_type"] = "mistral";
        j["sliding_window"] = 4096;
        QCOMPARE(qs::parseModelConfig(j.dump(), "c.json").slidingWindow, int64_t(4096));
    }

    void optConfig() {
        const json j = {{"model_type", "opt"},       {"hidden_size", 768},
                        {"ffn_dim", 3072},           {"num_hidden_layers", 12},
                        {"num_attention_heads", 12}, {"max_position_embeddings", 2048},
                        {"vocab_size", 50272},       {"word_embed_proj_dim", 768}};
        const qs::ModelConfig c = qs::parseModelConfig(j.dump(), "config.json");
        QCOMPARE(c.positionOffset, int64_t(2));
        QVERIFY(c.tieWordEmbeddings); // OPT's default
        QVERIFY(c.enableBias);
        QCOMPARE(c.hiddenAct, std::string("relu"));
    }

    void badConfigs_data() {
        QTest::addColumn<QString>("patch"); // JSON merged into the good llama config
        QTest::addColumn<QString>("remove");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("reason");
        QTest::newRow("missing hidden_size") << "{}"
                                             << "hidden_size"
                                             << "hidden_size"
                                             << "missing";
        QTest::newRow("string layers") << R"({"num_hidden_layers":"5"})"
                                       << ""
                                       << "num_hidden_layers"
                                       << "expected an integer";
        QTest::newRow("fractional heads") << R"({"num_attention_heads":8.5})"
                                          << ""
                                          << "num_attention_heads"
                                          << "expected an integer";
        QTest::newRow("negative vocab") << R"({"vocab_size":-1})"
                                        << ""
                                        << "vocab_size"
                                        << "outside";
        QTest::newRow("kv does not divide") << R"({"num_key_value_heads":3})"
                                            << ""
                                            << "num_key_value_heads"
                                            << "not a multiple";
        QTest::newRow("unknown type") << R"({"model_type":"gpt_neox"})"
                                      << ""
                                      << "model_type"
                                      << "unsupported model type";
        QTest::newRow("bad act") << R"({"hidden_act":"swiglu9"})"
                                 << ""
                                 << "hidden_act"
                                 << "unsupported";
        QTest::newRow("bad rope") << R"({"rope_scaling":{"rope_type":"yarn","factor":4}})"
                                  << ""
                                  << "rope_scaling.rope_type"
                                  << "unsupported";
        QTest::newRow("rope without factor") << R"({"rope_scaling":{"rope_type":"linear"}})"
                                             << ""
                                             << "factor"
                                             << "missing";
        QTest::newRow("bool as string") << R"({"tie_word_embeddings":"yes"})"
                                        << ""
                                        << "tie_word_embeddings"
                                        << "expected true or false";
        QTest::newRow("bos beyond vocab") << R"({"bos_token_id":999})"
                                          << ""
                                          << "bos_token_id"
                                          << "beyond vocab_size";
        QTest::newRow("odd head dim") << R"({"head_dim":7})"
                                      << ""
                                      << "head_dim"
                                      << "even";
        QTest::newRow("huge layers") << R"({"num_hidden_layers":100000000})"
                                     << ""
                                     << "num_hidden_layers"
                                     << "outside";
        QTest::newRow("no model_type") << "{}"
                                       << "model_type"
                                       << "model_type"
                                       << "missing";
    }

    void badConfigs() {
        QFETCH(QString, patch);
        QFETCH(QString, remove);
        QFETCH(QString, field);
        QFETCH(QString, reason);
        json j = llama();
        j.merge_patch(json::parse(patch.toStdString()));
        if (!remove.isEmpty())
            j.erase(remove.toStdString());
        try {
            qs::parseModelConfig(j.dump(), "/m/config.json");
            QFAIL("accepted a bad config");
        } catch (const qs::Error& e) {
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.contains("/m/config.json"), qPrintable(msg));
            QVERIFY2(msg.contains(field), qPrintable(msg));
            QVERIFY2(msg.contains(reason), qPrintable(msg));
        }
    }

    void notJson() {
        for (const char* text : {"", "{", "[1,2]", "{\"model_type\": }", "\xff\xfe",
                                 "{\"model_type\":\"llama\",\"vocab_size\":1e400}"}) {
            try {
                qs::parseModelConfig(text, "/m/config.json");
                QFAIL(text);
            } catch (const qs::Error& e) {
                QVERIFY(QString::fromUtf8(e.what()).contains("/m/config.json"));
            }
        }
    }

    void missingFile() {
        try {
            qs::loadModelConfig("/nonexistent/folder");
            QFAIL("no error");
        } catch (const qs::Error& e) {
            QVERIFY(QString::fromUtf8(e.what()).contains("config.json: file not found"));
        }
    }
};

QTEST_APPLESS_MAIN(TestConfigParser)
#include "tst_configparser.moc"
