// Q4_K and Q6_K against ggml's own reference quantizers, byte for byte, and the
// dequantize(quantize(x)) error that the block formulas allow.
//
// The expected bytes below were produced by ggml's C reference (ggml-org/ggml at d99724f2,
// src/ggml-quants.c quantize_row_q4_K_ref / quantize_row_q6_K_ref, compiled with gcc 12.2 -O2 on
// x86-64 outside this repository) on the inputs `referenceRow` makes; the hashes are FNV-1a 64 of
// the floats its dequantize_row_q4_K / dequantize_row_q6_K return for those blocks. Rows: 0 plain
// uniform [-1, 1); 1 the same scaled by 0.02 (small scales); 2 all positive (|x| + 0.5: Q4_K's
// min clamps to 0); 3 a zero sub-block and one outlier of 25. kLegacyExpected: the same C
// reference's quantize_row_q4_0_ref / q4_1 / q5_0 (Q4_K's fallback) / q8_0 on 64 values of
// each row (rows 0-2: values 0-63; row 3: values 64-127, which hold the outlier).
#include "TestMain.h"
#include "io/GgmlKQuants.h"
#include "io/GgmlTypes.h"

#include <c10/util/Half.h>

#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

const char* const kQ4KExpected[] = {
    "3b180e24fdfbf2febcfcf2fcf5ef5ffd704098fa0ec15758f99cb0abaf21fbc776cf56bf9fca763874b68ae261fdc5"
    "20"
    "4bc5b55d2d41d066cfbc18b3d68f3ee56e3ba8cffa0fa50d5e108aeaf0495fe05e319b0915d44fec1a5686073424cf"
    "35"
    "00599a66adb020199829661648c44980d485daaac1b9fe70d205bc1de5289592e23a9acce425359e71579e8ab39459"
    "55"
    "66181e24f6f6fcfcf5f6faffecadafed5d027b515825c4e022725fb423eecd0ed4017e992fc071d16698d4aaf53d66"
    "06"
    "b85db47f6600c63a94cca317ce3cde18fda647b66d4cca793708fa1df078e790cf02e47b80073ea09947f76d8bd37e"
    "1b"
    "8a93343668854563cbef4aa0ee454c04f94cfb3ed769ba195676f87aa041ae224736d099a8fb5ecb7a0121b25ce356"
    "e5",
    "ae02030dfdfefafbfafef5fccbffbcea95b9c77ce0d9197999be646ca54fccac70ac31c5d268f3e86f30033984cf56"
    "e8"
    "fce634dd27a82449900b78341e15f804f50de64596e7854758b7ff09f80bd55c5e2b4253c63fd3576f1cdbe00b0840"
    "b7"
    "e2b6c4e4c08a80a070cd5cfafd1322942ed064f4420c431eebd47873bda5e386825650649e33331b09ba48db7ddc6c"
    "4f"
    "d8023f0dfffdeff8fdfde4f78afc8b8a276623da54d1a80cc45e73f69ad30447d8b145bb22dad304a9e0e653477ee7"
    "10"
    "33df8ca2d9d199f59a375fe36ce85a528b0faf5310e9260b1c5eece9fe8a8d1caa02b013261f0314a622d6e24225c3"
    "3b"
    "55aca1c13be20c2570ecf4fee9b01aa1bb4a240c8c01c28eaf01d6c04c374c7d2418b0c259956249e7d50d22f4f4ae"
    "2b",
    "f1165c10faf9fffa7f26001c899b0b07bbcaf6ffbcfdda8aa8dfe8cdab7e8d6b6989dccad8e76e7879ba6b5f868ed6"
    "9d"
    "8df6a89ccbfd75db787ad797859d98c96dddc7bcdabd976a989c88c8eecc9cb58ddbf88c685767bcabceceb6ced9ac"
    "a6"
    "ccccfe7cdb8cefc6a66f9edd9e7ef9a765e9ecccdc9d66a9dc7acbd569dcde77ed6de7f9c6bebd758efcfdfad8fa6c"
    "c6"
    "de163f14f9fdfaf700bf00002fdca84bdec9ba8bae7b6cc768ba77a6fec6ab6edc7fdcedd8fa99b6ed95d7ea97ad67"
    "d7"
    "bc9d89d79e855fc98c9af9cae986f59ed867f6f9d687888dfcaaefb6fc8dba8866f96c899be5b77689fca685f786e6"
    "b9"
    "ec96ee9cedbda9b6d7d89eccd7dad6ce6e879dc9bfa7e9eaf78cbab7f7bff8b7eee97efad99f79b679a7f97d9be8f7"
    "6c",
    "f926ed230004043fc0fdfef4f575d514f0b05090b010b0e0f000e0f0d0a0907090a000f070d0f0506050f0e0d08080"
    "80"
    "010c051fff051d010a1e0b081009010319140506101b061f01151b0d181116034c0b91d625b30a3d0776529196ac34"
    "a9"
    "a27e28d0d52a5d9e000236b1559ec3b8c154556552a0da47d942fd3b4aad6c4bb0abda81e02c3e04175e9a3bed3a8e"
    "01"
    "92180124fff8f8f8fffbfbfb983591ecaa3d73db4c4761551617b99967cc84bae11ef410081cc66921ae4ac40af419"
    "22"
    "5ed43d0ec27b53a2a91fc6a1c95374fdb8f27fb38e470330f709d194eba0d92732f53a1323008ebc91d986cdb08b5e"
    "3b"
    "cda07cd9928e6b6bbbc85a5dd08796bd50687799d560128a5138a28ea5269725ef0e7243cce9a845d19ee70153175f"
    "ba",
};
const char* const kQ6KExpected[] = {
    "f04043899b560083f63331b07ff4ad5d7723e633611695b08de57586daaa3ceffe52257e80f2d3845e131b2aa85aac"
    "f1"
    "632f5dc01afc64e69383fe6428c0ae5bc5651109856a00ae1673814158aa6228302a1e9ccd52712966eb1c2dd6b44b"
    "71"
    "641c659107e7d0ea6607c3318e7a315f209586c80ccf97b537d789f411a211c224d4da7e330cc656fefb28cbdbb03e"
    "dd"
    "8ad05a0414c16ace8af655133b90823fe4a3d991f29ec47cf1268a02e212acb230d65a052be8e042ba924551666dd6"
    "a8"
    "78827a966094698089607f7985837b9b1c0cb897d0094fd96c7fe7b520ff30b44ad6afba04d8803eaa8bf65fa0820c"
    "36"
    "0515c640bdc6850b24a9393ea44f29bc5231d7830ec57be12ce6da17e639dfdcaa517ea7f10ee08d2971565bcb35fd"
    "cc"
    "187ef94cdf88c1f316da1f8eaa30bcf4349f0dfd0422ad5e31d3b82e01337c076188eb5784b2451ccfd63cf19012c2"
    "3f"
    "df4e9443a5476532ee1fa3c7b41ac30ccc10fe936499703fe76f1629ef39ce60e682138c01ca149d5fd4a6a9119b76"
    "f0"
    "4bfe96e43c5d5a05890892f3fe748329ab2c9095707283777d7e7d79808a86808685140c",
    "8638c07d1cc8e978d9e6bbed0971bfeb7e7c488a541d81fcb11b126acc0286dcf9a2f78f9d9c910e6820f7ca5c70e5"
    "0b"
    "ee1bdf2147cb0d194bfee00cf121746aca1e1a2d7a3fdccfed323dc09f61d29e887ae3f3612a12f39235c20ba6ded9"
    "01"
    "855a62c5240cf6477b46c6dad291710ff4615d664eadcd3704de0a30a16b7808caed2ec42f9d2155b90c56240a24dc"
    "28"
    "e708e36eafe5af5d54a3c311da1ce64d37c254d44d330c35e7d36e4cb292c499706571618036340418935bd243cc4c"
    "45"
    "80836b7d948a777477787d84738c767354009305c2d34efc4b1910d13576b4832ed1f407168f394cff03c951cc5d5d"
    "2f"
    "80a127b4e76a9cb7760eac2a93413b698f9d3721b37049d8b9006b6dfec6f32e5e45e324cca3c6a0412e049755d5c6"
    "f8"
    "c281f8b6f59680aa9666e2b6549ffad00cc638418f0226336044c919b77a42e832eb548a09d27b7a30d65d7ace6c0a"
    "0d"
    "6548ee0a4f611a23552c53d88b2285139eaa8e0c856e30de1c110a4ccdd4c5978e00c9532b038230f3828a33eeff47"
    "12"
    "4f41e5db783c936cb391142fcdff2e2842c8887f807d8383857386767d7e859275835300",
    "082ad33067254a5bdf900ff44902c5982e2ef65b902202a0dd5bdae003435544f917b1e07a1125601b1564f80ce2ef"
    "74"
    "241f32651350c210bfb7d3440e4fb26c44c86f555f3031b667918142b14c0512272802b72807314404503496e4944d"
    "32"
    "2e15104f34c523983b07562837252afa464630128590a1170b121d135d11408b001001000000500440401000500400"
    "04"
    "4400000001011445000004040100011050000000040555000040001140000011004010041004005141040000000440"
    "11"
    "898685908a8480928d8483848a8b9386240e525dda09215806d06ebbd1a4c2235822e61037c32e1afc3354a4014a61"
    "44"
    "91e075c8f93fcdd24459d4ca026d21e70cc55442150364000ef813cd34921e0c84f4200941d91413dfb12871b0222e"
    "00"
    "f00826c332c6d303dd43c11ee14590fb14613301d5719fb32a220ff18c8f0180048a203c011c41d82a8712a30c15e2"
    "14"
    "0346000000100014440104000501001110040054100010504001000101100140050145500404001100051000011110"
    "05"
    "0110000140000000401141100040010011408b8c8085888a91899480828e8a8b8685280e",
    "50c030d07030d040403090c0100030c010e01070108070e02020a0d0d04070a004181ffd070c061f15fe1c12001d00"
    "16"
    "001471085a305fb1e845eee471bdbd3d4750839cb80eea2b90aaa815fca77218ebee1580f88c19ef000a4bf3763f2d"
    "a5"
    "ea6b6330817b9da09cac25f2a66f50bf2e0db454d1c4e7026a7baffae6e2481a80a49874349ca480a07ca09084a488"
    "88"
    "284890dc446cdc3484142cac1c4414c40b9f94918d402eaf2e8538b4a573bdb2f0c7deb0f10e0b272c4c9900c91780"
    "32"
    "0000fb05050580fb0505fbfb05fbfb04401e40f1936a67110f7a95025486b005e2a02b91efefcbfaf608fb61712fe3"
    "1e"
    "77d5ce980eddcd3f99754090d166d8aa23141b362e35c3c7e2291bdc9092515e845819e9b314441f70796c0886655e"
    "9d"
    "d13e4c80b85908df03e2e1935de9615f1a8b5fb0fda5e38c1d4e56c6eb5bf099b87ed61eff0043f8d5438a74eb1861"
    "5a"
    "72fa8920c7cc3092b77652c22d7916bcab0d6f00be437190cec513e8055e214e21d34b5259afdf4f04a0472186b097"
    "14"
    "9818c3007772d4d7ab6bf382ea3b702545939382627b84798380906d89a37497707c130c",
};
const uint64_t kQ4KDequantizedHash[] = {0xec1d1d8daee2c9e5ull, 0x14ae1f3635b1110dull,
                                        0x1714323b75270bb4ull, 0xa3e47c5d90a63633ull};
const uint64_t kQ6KDequantizedHash[] = {0x73ec4104f15861d3ull, 0xdcc5b5d782d3a205ull,
                                        0x1240ca8cfeaeb089ull, 0xaacd157ac1721ce1ull};

const char* const kLegacyExpected[4][4] = {
    {
        // q4_0
        "e6afaf1fa716015e9887b6935fe4f02fb5f9c12f77c559cf90cd75357fb98beb6af2cf2c",
        "1d99fa36e8b3df76c67606f1db73ba10a4731c198abc4dc8ee7ef1e77a4b06378bc55dfa",
        "d7b142332530425103433430240152115112e4b152421020121051444321515243441435",
        "ab2f813b456f0ea56bf1094daab77018612340c288888888808888888888888888888888",
    },
    {
        // q4_1
        "3630e3bb60e068eafea26778496ca02b1fd15b070a30c1bb77b459bf90cc75357fa88aea6ae2ce2c",
        "4e19d5a406c9175c20893989f91e359c45ef6c8c31191ca57abc4dc8de7ef1e77a3b06378ac55cea",
        "012c2c385958b17f4a2be736547e83fb18dd0bc9202c0b38083aceafb8df1b34378c1c094632c451",
        "0330abbb813a456f0da46bf1094caab770186123ef3efcbb101000011f1001100011100011101000",
    },
    {
        // q5_0
        "e6ab63a4c5db3f1f3f1c03bd200e7d27afb8d15e6af1c12b2cdf3a6eff79a27f3099e96aff6216c5c4e58e49",
        "1d9515145d56f36cc056aeec8cec0ce395d6651037e51c153fd3dab0f4587a80bcdce3dfe3770c6e0599a9d5",
        "d7ad0000000074753a608493158678605802a511a324e4ad00000000a58421403510a3988552a2b48689277a",
        "ab2b5a27a10c02768acf0c49c7f2129a557ee020c15640beeffffefdf00000000000000100f0000000000000",
    },
    {
        // q8_0
        "f61f85840b23699cff0c19498a3f789233f6e576e8747f2aec00c9ec2da7965bd081d01ff6c913798149ccd177"
        "0c2c2920a77046f53bd4381445f1b3f52d0662e4703fa2",
        "2809e622014c8d201e211c68d54edc7f4655884fa0d7b00cbe0f7b93b816d177e71026091e3c4efd635f96f81c"
        "36e2ed2acb4926f92bbb435aec7365eeb981b00345d169",
        "e2215c57327c626a5650417c406b5776685e47486752413778404b52597f33742d6eef215b627a7f587c6b3f54"
        "6d71604f3944312d3f6c616a73323a3c5a2e2c423f6e4a",
        "ba1f952fcd745fca368e114c25f182fe8cae02b8c4dd8120dd7a89c62735f28edca64d32fefcfe037fff02fbfd"
        "02fdfc01fdfffe0502fffe0202fd03fe0403fe040103fd",
    },
};

constexpr int kRows = 4;
constexpr int kRowLength = 512; // two super-blocks

std::vector<float> referenceRow(int row) {
    uint32_t state = 12345u + 977u * uint32_t(row);
    std::vector<float> x(kRowLength);
    for (float& v : x) {
        state = state * 1664525u + 1013904223u;
        v = float((state >> 8) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f; // exact in float
        v *= row == 1 ? 0.02f : 1.0f;
    }
    if (row == 2)
        for (float& v : x)
            v = std::fabs(v) + 0.5f;
    if (row == 3) {
        std::fill(x.begin(), x.begin() + 32, 0.0f);
        x[100] = 25.0f;
    }
    return x;
}

std::string toHex(const std::vector<uint8_t>& b) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (uint8_t c : b) {
        s += digits[c >> 4];
        s += digits[c & 15];
    }
    return s;
}

uint64_t fnv1a(const std::vector<float>& v) {
    uint64_t h = 1469598103934665603ull;
    const auto* b = reinterpret_cast<const uint8_t*>(v.data());
    for (size_t i = 0; i < v.size() * 4; ++i) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

float half(const uint8_t* p) {
    c10::Half h;
    std::memcpy(&h.x, p, 2);
    return float(h);
}

} // namespace

class TestGgmlKQuants : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void q4kBytesEqualGgml() {
        for (int r = 0; r < kRows; ++r) {
            const std::vector<float> x = referenceRow(r);
            std::vector<uint8_t> q(kRowLength / 256 * qs::kQ4KBlockBytes);
            qs::ggmlQuantizeQ4KRow(x.data(), kRowLength, q.data());
            QCOMPARE(QString::fromStdString(toHex(q)), QString(kQ4KExpected[r]));
            std::vector<float> y(kRowLength);
            qs::ggmlDequantizeQ4KRow(q.data(), kRowLength, y.data());
            QCOMPARE(fnv1a(y), kQ4KDequantizedHash[r]);
        }
    }

    void q6kBytesEqualGgml() {
        for (int r = 0; r < kRows; ++r) {
            const std::vector<float> x = referenceRow(r);
            std::vector<uint8_t> q(kRowLength / 256 * qs::kQ6KBlockBytes);
            qs::ggmlQuantizeQ6KRow(x.data(), kRowLength, q.data());
            QCOMPARE(QString::fromStdString(toHex(q)), QString(kQ6KExpected[r]));
            std::vector<float> y(kRowLength);
            qs::ggmlDequantizeQ6KRow(q.data(), kRowLength, y.data());
            QCOMPARE(fnv1a(y), kQ6KDequantizedHash[r]);
        }
    }

    // The 32-block types of the GGUF exporter (its ggml reference quantizers) on the same rows.
    void legacyBytesEqualGgml() {
        const qs::GgmlType types[] = {qs::GgmlType::Q4_0, qs::GgmlType::Q4_1, qs::GgmlType::Q5_0,
                                      qs::GgmlType::Q8_0};
        for (int t = 0; t < 4; ++t)
            for (int r = 0; r < kRows; ++r) {
                const std::vector<float> x = referenceRow(r);
                const std::string q =
                    qs::ggmlQuantizeRow(x.data() + (r == 3 ? 64 : 0), 64, types[t]);
                QCOMPARE(uint64_t(q.size()), qs::ggmlRowBytes(64, types[t]));
                const std::vector<uint8_t> bytes(q.begin(), q.end());
                QCOMPARE(QString::fromStdString(toHex(bytes)), QString(kLegacyExpected[t][r]));
            }
    }

    // Whatever scales the searches chose, the codes are re-rounded to nearest against the stored
    // sub-block step (Q4_K: d*sc_j with offset dmin*m_j; Q6_K: d*sc_j): every value decodes to
    // within half a step, unless its code sits at the end of the code range (clamped) with the
    // value beyond it. Slack: the decoded value and the step are each one or two fp32 roundings
    // (relative 2^-24 each) away from exact; 2^-20 of the value's magnitude covers them.
    void roundTripWithinHalfStep() {
        std::mt19937 rng(11);
        std::normal_distribution<float> dist(0.0f, 0.05f);
        const int n = 4096;
        std::vector<float> x(n);
        for (float& v : x)
            v = dist(rng);
        x[7] = 0.9f; // an outlier in the first sub-block
        std::vector<uint8_t> q4(n / 256 * qs::kQ4KBlockBytes), q6(n / 256 * qs::kQ6KBlockBytes);
        qs::ggmlQuantizeQ4KRow(x.data(), n, q4.data());
        qs::ggmlQuantizeQ6KRow(x.data(), n, q6.data());
        std::vector<float> y4(n), y6(n);
        qs::ggmlDequantizeQ4KRow(q4.data(), n, y4.data());
        qs::ggmlDequantizeQ6KRow(q6.data(), n, y6.data());
        int clamped4 = 0, clamped6 = 0;
        double err4 = 0, err6 = 0, sig = 0;
        for (int i = 0; i < n; ++i) {
            const int b = i / 256, k = i % 256;
            // Q4_K: sub-block j = k/32; 6-bit scale/min unpacked from bytes 4..15.
            const uint8_t* blk4 = q4.data() + b * qs::kQ4KBlockBytes;
            const int j = k / 32;
            const uint8_t* s = blk4 + 4;
            const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
            const int mn = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
            const float step4 = half(blk4) * sc, offset4 = half(blk4 + 2) * mn;
            const uint8_t byte = blk4[16 + (k / 64) * 32 + k % 32];
            const int code4 = (k % 64) < 32 ? (byte & 15) : (byte >> 4);
            const float slack = std::fabs(x[i]) * 0x1p-20f + 1e-12f;
            QVERIFY(step4 > 0);
            QCOMPARE(y4[i], step4 * code4 - offset4);
            if (std::fabs(y4[i] - x[i]) > step4 / 2 + slack) {
                QVERIFY2((code4 == 0 && x[i] < y4[i]) || (code4 == 15 && x[i] > y4[i]),
                         qPrintable(QString("q4_K element %1").arg(i)));
                ++clamped4;
            }
            // Q6_K: sub-block k/16, int8 scale at 192 + k/16, f16 d at 208.
            const uint8_t* blk6 = q6.data() + b * qs::kQ6KBlockBytes;
            const float step6 = half(blk6 + 208) * int8_t(blk6[192 + k / 16]);
            const float code6 = y6[i] / step6; // exact: y = step * (q - 32) with |q - 32| <= 32
            QCOMPARE(code6, std::round(code6));
            if (std::fabs(y6[i] - x[i]) > std::fabs(step6) / 2 + slack) {
                QVERIFY2((code6 == -32 && x[i] * step6 < y6[i] * step6) ||
                             (code6 == 31 && x[i] * step6 > y6[i] * step6),
                         qPrintable(QString("q6_K element %1").arg(i)));
                ++clamped6;
            }
            err4 += double(y4[i] - x[i]) * (y4[i] - x[i]);
            err6 += double(y6[i] - x[i]) * (y6[i] - x[i]);
            sig += double(x[i]) * x[i];
        }
        // Clamping is the exception (the searches may shrink the range a little), not the rule.
        QVERIFY(clamped4 < n / 100);
        QVERIFY(clamped6 < n / 100);
        // Half-step rounding of a uniform error gives SQNR ~ 6.02 b + 10.8 - 20 log10(range /
        // sigma); what matters here is the ordering: Q6_K (6 bits) well below Q4_K (4 bits).
        QVERIFY(err6 * 8 < err4);
        QVERIFY(err4 < sig * 0.02);
    }
};

QS_TEST_GUILESS_MAIN(TestGgmlKQuants)
#include "tst_ggmlkquants.moc"
